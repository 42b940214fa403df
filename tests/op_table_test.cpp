// The op table (lib/loader/op_table.h) is the one place that says what an op is: these tests hold
// the loader, `nvdet list`, the budget, the workload factories and README.md's op table to it, so
// that adding an op stays "a workload file, its kernels, its tests and one record".
#include "lib/loader/op_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/runner/budget.h"
#include "lib/scenario/context.h"
#include "tests/test_support.h"

namespace nvdet {
using namespace nvdet::testing;
namespace {

// The smallest valid scenario of `op`, built from its record alone (its shape keys).
std::string minimal_scenario(const OpSpec& op) {
  if (op.server)  // a server, not a dtype and backends
    return "name: t\nop: " + std::string(op.name()) +
           "\nseed: 7\nendpoint: {expect: report, url: http://127.0.0.1:9, model: m}\n"
           "probe: {prompts: [hi]}\n";
  std::string text = "name: t\nop: " + std::string(op.name()) + "\ndtype: fp32\nseed: 7\n";
  if (!op.shape.empty()) {
    text += "shape: {";
    for (size_t i = 0; i < op.shape.size(); ++i)
      text += std::string(i ? ", " : "") + op.shape[i].name + ": " + std::to_string(16 + 8 * i);
    text += "}\n";
  }
  if (op.accepts_key("attention")) text += "attention: {heads: 2, kv_heads: 1, head_dim: 16}\n";
  if (op.accepts_key("prefill")) text += "prefill: {prompt_len: 24}\n";
  if (op.accepts_key("model"))
    text +=
        "model: {hidden: 32, layers: 1, heads: 2, kv_heads: 1, intermediate: 48, vocab: 64, "
        "prompt_len: 3, num_prompts: 1, max_new_tokens: 2}\n";
  return text + "backends: {cpu-reference: report}\n";
}

// One sample line per scoped key, as some op would write it.
std::string sample_key_line(const std::string& key) {
  if (key == "shape") return "shape: {n: 8}\n";
  if (key == "tokens") return "tokens: 2\n";
  if (key == "bias" || key == "tf32") return key + ": false\n";
  if (key == "eps") return "eps: 1.0e-5\n";
  if (key == "attention") return "attention: {heads: 2}\n";
  if (key == "prefill") return "prefill: {prompt_len: 8}\n";
  return key + ": {}\n";
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << (text) << "\nlacks: " << (part)

std::string load_error(const std::string& text) {
  try {
    (void)parse_scenario(text, "t.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OpTable, HoldsExactlyOneRecordPerOpKind) {
  ASSERT_EQ(op_table().size(), static_cast<size_t>(kOpKindCount));
  std::set<std::string> names;
  for (int k = 0; k < kOpKindCount; ++k) {
    const OpKind kind = static_cast<OpKind>(k);
    const OpSpec& spec = op_spec(kind);
    EXPECT_EQ(spec.kind, kind);
    EXPECT_EQ(find_op(spec.name()), &spec);
    EXPECT_TRUE(names.insert(std::string(spec.name())).second) << spec.name();
    EXPECT_FALSE(spec.description.empty()) << spec.name();
    EXPECT_NE(spec.footprint, nullptr) << spec.name();
    // A server op (probe) calls no backend and has no workload; every other op has both.
    EXPECT_EQ(spec.uses.empty(), spec.server) << spec.name();
    EXPECT_EQ(spec.make_workload == nullptr, spec.server) << spec.name();
  }
  EXPECT_EQ(find_op("no_such_op"), nullptr);
}

TEST(OpTable, TheLoaderAcceptsEachOpFromItsRecordAndRefusesOtherOpsKeys) {
  std::set<std::string> scoped;
  for (const OpSpec& spec : op_table()) scoped.insert(spec.keys.begin(), spec.keys.end());
  for (const OpSpec& spec : op_table()) {
    SCOPED_TRACE(std::string(spec.name()));
    const std::string text = minimal_scenario(spec);
    const Scenario s = parse_scenario(text, "t.yaml");
    EXPECT_EQ(s.op, spec.kind);
    for (size_t i = 0; i < spec.shape.size(); ++i)
      EXPECT_EQ(s.*spec.shape[i].field, static_cast<int64_t>(16 + 8 * i)) << spec.shape[i].name;
    for (const std::string& key : scoped) {
      if (spec.accepts_key(key)) continue;
      EXPECT_CONTAINS(load_error(text + sample_key_line(key)),
                      "key '" + key + "' does not apply to op '" + std::string(spec.name()) +
                          "' (it is for " + ops_accepting_key(key) + ")");
    }
  }
  std::string names;
  for (const OpSpec& spec : op_table())
    names += (names.empty() ? "" : " | ") + std::string(spec.name());
  EXPECT_CONTAINS(load_error("name: t\nop: gem\ndtype: fp32\nseed: 1\nbackends: {x: report}\n"),
                  "expected " + names);
}

TEST(OpTable, EachRecordBuildsItsWorkloadAndEstimatesItsMemory) {
  for (const OpSpec& spec : op_table()) {
    SCOPED_TRACE(std::string(spec.name()));
    const Scenario s = parse_scenario(minimal_scenario(spec), "t.yaml");
    if (spec.server) {
      // nvdet probe runs it; the kernels' commands refuse it, naming the command that does.
      EXPECT_THROW((void)make_workload(s), Error);
      EXPECT_GT(estimate_scenario(s).host_bytes, 0);
      continue;
    }
    const std::unique_ptr<Workload> w = make_workload(s);
    ASSERT_NE(w, nullptr);
    EXPECT_FALSE(w->coord_names().empty());
    const ScenarioEstimate e = estimate_scenario(s);
    EXPECT_GT(e.host_bytes, 0);
    // The device holds the footprint; the host also the CPU backends' copies and the one
    // context's entry in the context list (about a KiB: every axis's value, swept or not).
    const Footprint fp = spec.footprint(s);
    EXPECT_DOUBLE_EQ(e.device_bytes, fp.total());
    EXPECT_GT(fp.cpu_copies, 0);
    EXPECT_GE(e.host_bytes, fp.total() + fp.cpu_copies);
    EXPECT_LT(e.host_bytes, fp.total() + fp.cpu_copies + 2048);
    EXPECT_EQ(expand_contexts(s).front().id.rfind(std::string(spec.name()) + "(", 0), 0u);
  }
}

TEST(OpTable, NvdetListPrintsTheTable) {
  const CommandResult r = run_nvdet("list --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const OpSpec& spec : op_table()) names.emplace_back(spec.name());
  EXPECT_EQ(j.at("ops").get<std::vector<std::string>>(), names);
  for (const auto& axis : j.at("axes")) {
    std::vector<std::string> ops;
    for (const OpSpec& spec : op_table())
      if (spec.accepts_axis(axis.at("name").get<std::string>())) ops.emplace_back(spec.name());
    EXPECT_EQ(axis.at("ops").get<std::vector<std::string>>(), ops) << axis;
  }
  const CommandResult text = run_nvdet("list");
  for (const OpSpec& spec : op_table()) EXPECT_CONTAINS(text.out, spec.description);
}

// README.md's "### Ops" table has one row per record, in table order: `name` | description |
// shape keys | keys | axes.
TEST(OpTable, ReadmeOpTableMatchesTheRecords) {
  const std::string readme = read_file(source_dir() / "README.md");
  const size_t section = readme.find("\n### Ops\n");
  ASSERT_NE(section, std::string::npos);
  const size_t end = readme.find("\n#", section + 9);
  const std::string text = readme.substr(section, end - section);
  size_t rows = 0, at = 0;
  for (const OpSpec& spec : op_table()) {
    std::string keys, axes;
    for (const ShapeKey& k : spec.shape) keys += (keys.empty() ? "" : ", ") + std::string(k.name);
    for (const std::string& a : axes_of_op(spec.kind)) axes += (axes.empty() ? "" : ", ") + a;
    std::string scoped;
    for (const std::string& k : spec.keys) scoped += (scoped.empty() ? "" : ", ") + k;
    const std::string row = "| `" + std::string(spec.name()) + "` | " + spec.description + " | " +
                            (keys.empty() ? "-" : keys) + " | " + scoped + " | " + axes + " |";
    const size_t found = text.find(row, at);
    EXPECT_NE(found, std::string::npos) << "README.md lacks, or misorders, the row\n" << row;
    if (found != std::string::npos) at = found, ++rows;
  }
  size_t table_rows = 0;
  for (size_t p = text.find("\n| `"); p != std::string::npos; p = text.find("\n| `", p + 1))
    ++table_rows;
  EXPECT_EQ(table_rows, op_table().size()) << "README.md's op table has rows no record has";
  EXPECT_EQ(rows, op_table().size());
}

}  // namespace
}  // namespace nvdet
