// README.md's "Adding an op", "Adding a backend" and "Adding a writer" checklists, as tests: a
// step a newcomer misses fails one of these (the op table's own rows: tests/op_table_test.cpp;
// a format without a suffix: tests/format_registry_test.cpp; a support table that claims an op
// the backend does not handle: tests/backend_claims_test.cpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#include "lib/backend/backend.h"
#include "lib/loader/op_table.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

// Records registered by other tests of this binary are theirs to check.
bool test_only(const BackendRegistration& r) { return r.info.name.rfind("test-", 0) == 0; }

// The text of README.md from the heading line `heading` to the next heading of its level or
// above; "" when there is no such heading.
std::string section(const std::string& text, const std::string& heading) {
  const size_t at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) return "";
  const std::string level = heading.substr(0, heading.find(' '));
  size_t end = at + heading.size() + 2;
  for (;;) {
    end = text.find("\n#", end);
    if (end == std::string::npos) break;
    const size_t hashes = text.find_first_not_of('#', end + 1) - (end + 1);
    if (hashes <= level.size()) break;
    ++end;
  }
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Table rows of `text` that start with "| `".
std::vector<std::string> rows_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) == 0) out.push_back(line);
  }
  return out;
}

// Adding a backend, steps 2-3: a record has everything the CLI shows (a kernel path for nvdet
// info, a support table that claims at least one op) and a row in README's backends table.
TEST(AddingChecklists, EveryBackendRecordIsCompleteAndListed) {
  const std::string readme = read_file(source_dir() / "README.md");
  // The "what it is" table: the Backends section up to its first subsection (the support table).
  const std::string backends = section(readme, "## Backends");
  const std::vector<std::string> listed = rows_of(backends.substr(0, backends.find("\n### ")));
  const DeviceFacts device = device_facts();
  for (const BackendRegistration& r : backend_registry()) {
    if (test_only(r)) continue;
    const std::string& name = r.info.name;
    EXPECT_FALSE(r.info.description.empty()) << name;
    ASSERT_TRUE(r.make && r.supports) << name;
    ASSERT_TRUE(r.kernel_path) << name << " has no kernel-path description (nvdet info)";
    EXPECT_FALSE(r.kernel_path().empty()) << name;
    bool claims = false;
    for (int op = 0; op < kOpKindCount; ++op) {
      for (const DType dt : {DType::kBF16, DType::kFP16, DType::kFP32}) {
        claims = claims || r.supports(static_cast<OpKind>(op), dt, device).status !=
                               Support::Status::kUnsupportedOp;
      }
    }
    EXPECT_TRUE(claims) << name << "'s support table claims no op";
    const std::string row = "| `" + name + "` |";
    EXPECT_TRUE(std::any_of(listed.begin(), listed.end(),
                            [&](const std::string& l) { return l.rfind(row, 0) == 0; }))
        << "README.md's Backends table has no row for " << name;
  }
}

// README's support table is the registry's, row for row: `nvdet list --format json`'s `supports`
// of every backend over the op table's ops ("-" where it computes none of the dtypes).
TEST(AddingChecklists, ReadmeSupportTableMatchesTheRegistry) {
  const CommandResult list = run_nvdet("list --format json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const nlohmann::json j = nlohmann::json::parse(list.out);
  std::vector<std::string> expected;
  for (const nlohmann::json& b : j.at("backends")) {
    std::string row = "| `" + b.at("name").get<std::string>() + "` |";
    for (const nlohmann::json& op : j.at("ops")) {
      const nlohmann::json& s = b.at("supports");
      std::string cell;
      if (s.contains(op.get<std::string>())) {
        for (const nlohmann::json& dt : s.at(op.get<std::string>())) {
          cell += (cell.empty() ? "" : ", ") + dt.get<std::string>();
        }
      }
      row += " " + (cell.empty() ? std::string("-") : cell) + " |";
    }
    expected.push_back(row);
  }
  const std::string table = section(read_file(source_dir() / "README.md"), "### Support table");
  ASSERT_FALSE(table.empty()) << "README.md has no '### Support table' section";
  std::string header = "| backend |";
  for (const nlohmann::json& op : j.at("ops")) header += " `" + op.get<std::string>() + "` |";
  EXPECT_NE(table.find(header + "\n"), std::string::npos) << "header should be\n" << header;
  EXPECT_EQ(rows_of(table), expected) << "README.md's support table and the registry differ";
}

// Adding an op, steps 4-5: each op is documented for scenario writers (scenarios/README.md's
// `op` key lists it) and has an example scenario under scenarios/.
TEST(AddingChecklists, EveryOpHasItsScenarioDocsAndAScenario) {
  const std::string scenarios_readme = read_file(source_dir() / "scenarios" / "README.md");
  std::string op_row;
  for (const std::string& row : rows_of(scenarios_readme)) {
    if (row.rfind("| `op` |", 0) == 0) op_row = row;
  }
  ASSERT_FALSE(op_row.empty()) << "scenarios/README.md's keys table has no `op` row";
  std::set<std::string> used;
  for (const auto& e : fs::directory_iterator(source_dir() / "scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    std::istringstream in(read_file(e.path()));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("op: ", 0) != 0) continue;
      std::string op = line.substr(4);
      op = op.substr(0, op.find_first_of(" #"));
      used.insert(op);
    }
  }
  for (const OpSpec& spec : op_table()) {
    const std::string name(spec.name());
    EXPECT_NE(op_row.find("`" + name + "`"), std::string::npos)
        << "scenarios/README.md's `op` row does not list " << name;
    EXPECT_TRUE(used.count(name)) << "no scenario under scenarios/ has op: " << name;
  }
}

// The checks above can fail: a section that is not there reads as empty, and a table row of
// another backend does not count as this one's.
TEST(AddingChecklists, TheChecksSeeAMissingSectionAndRow) {
  const std::string text = "# A\n## Backends\n| `a` | x |\n### Support table\n| `b` | y |\n## C\n";
  EXPECT_EQ(rows_of(section(text, "## Backends")),
            (std::vector<std::string>{"| `a` | x |", "| `b` | y |"}));
  EXPECT_EQ(rows_of(section(text, "### Support table")), std::vector<std::string>{"| `b` | y |"});
  EXPECT_EQ(section(text, "## Missing"), "");
}

}  // namespace
}  // namespace nvdet::testing
