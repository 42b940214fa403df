// The documentation says what the current build does: every `$ build/tools/nvdet ...` output
// quoted in README.md is produced by running that command now (the quickstart's in full, others
// with their `...` elisions); scenarios/README.md lists exactly the scenario files there are and
// quotes quickstart.yaml as it is; and no document names a repository file that does not exist.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Timings vary from run to run: "(0.2 s)" -> "(T s)".
std::string normalise_time(const std::string& line) {
  static const std::regex seconds("\\(\\d+(\\.\\d+)? s\\)");
  return std::regex_replace(line, seconds, "(T s)");
}

std::string squeeze_spaces(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

// A quoted line matches an output line when its pieces between "..." appear in order, the first
// at the start (runs of spaces count as one).
bool quoted_line_matches(const std::string& quoted, const std::string& actual) {
  const std::string q = squeeze_spaces(normalise_time(quoted)),
                    a = squeeze_spaces(normalise_time(actual));
  size_t at = 0, start = 0;
  bool first = true;
  while (start <= q.size()) {
    const size_t dots = q.find("...", start);
    std::string piece =
        q.substr(start, dots == std::string::npos ? std::string::npos : dots - start);
    // The spaces around "..." belong to the elision.
    if (dots != std::string::npos) {
      while (!piece.empty() && piece.back() == ' ') piece.pop_back();
    }
    if (!first) {
      while (!piece.empty() && piece.front() == ' ') piece.erase(0, 1);
    }
    if (!piece.empty()) {
      const size_t found = a.find(piece, at);
      if (found == std::string::npos || (first && found != 0)) return false;
      at = found + piece.size();
    }
    first = false;
    if (dots == std::string::npos)
      return at == a.size() || (q.size() >= 3 && q.substr(q.size() - 3) == "...");
    start = dots + 3;
  }
  return true;
}

struct QuotedCommand {
  std::string args;                 // after "build/tools/nvdet "
  std::vector<std::string> output;  // the quoted lines
};

std::vector<QuotedCommand> quoted_commands(const std::string& readme) {
  std::vector<QuotedCommand> out;
  bool in_fence = false, in_command = false;
  for (const std::string& line : lines_of(readme)) {
    if (line.rfind("```", 0) == 0) {
      in_fence = !in_fence;
      in_command = false;  // a quoted output ends with its block
      continue;
    }
    if (!in_fence) continue;
    const std::string prompt = "$ build/tools/nvdet ";
    if (line.rfind(prompt, 0) == 0) {
      out.push_back({line.substr(prompt.size()), {}});
      in_command = true;
    } else if (line.rfind("$ ", 0) == 0) {
      in_command = false;
    } else if (in_command && !line.empty()) {
      out.back().output.push_back(line);
    }
  }
  return out;
}

TEST(Docs, ReadmeQuotesTheCurrentOutput) {
#ifdef NVDET_ASAN
  // Every audit README quotes, traffic-cpu's 100 replays among them: half a minute in the release
  // build, past ten under the sanitizers, and what it checks is the text, not memory.
  GTEST_SKIP() << "the release build checks README's quoted output";
#endif
  const std::string readme = read_file(source_dir() / "README.md");
  const auto commands = quoted_commands(readme);
  ASSERT_GE(commands.size(), 3u);
  bool saw_quickstart = false;
  for (const QuotedCommand& c : commands) {
    ASSERT_FALSE(c.output.empty()) << c.args;
    const CommandResult r = run_nvdet_in(source_dir(), c.args);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << c.args << "\n" << r.err;
    const std::vector<std::string> actual = lines_of(r.out);
    if (c.args == "audit scenarios/quickstart.yaml") {
      // The first output a new user sees is quoted in full.
      saw_quickstart = true;
      ASSERT_EQ(c.output.size(), actual.size()) << r.out;
      for (size_t i = 0; i < actual.size(); ++i) {
        EXPECT_EQ(normalise_time(c.output[i]), normalise_time(actual[i]));
      }
      continue;
    }
    // Elsewhere lines may be left out, but those quoted appear, in order.
    size_t next = 0;
    for (const std::string& q : c.output) {
      size_t i = next;
      while (i < actual.size() && !quoted_line_matches(q, actual[i])) ++i;
      EXPECT_LT(i, actual.size()) << "README quotes a line `" << c.args
                                  << "` does not print (in this order):\n"
                                  << q << "\n--- actual output ---\n"
                                  << r.out;
      if (i < actual.size()) next = i + 1;
    }
  }
  EXPECT_TRUE(saw_quickstart);
}

// The README's first two commands: the first builds only what the quickstart needs (the nvdet
// program) and runs the quickstart; the second builds everything and runs the whole suite, and is
// the command CI runs (.ci/run), so that it cannot rot.
TEST(Docs, TheFirstCommandsBuildWhatTheyNeed) {
  const std::string readme = read_file(source_dir() / "README.md");
  const size_t open = readme.find("```sh\n");
  ASSERT_NE(open, std::string::npos);
  const std::vector<std::string> lines =
      lines_of(readme.substr(open + 6, readme.find("```", open + 6) - open - 6));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("cmake --build build -j2 --target nvdet &&"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("build/tools/nvdet audit scenarios/quickstart.yaml"), std::string::npos);
  EXPECT_EQ(lines[1].find("--target"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("ctest --test-dir build"), std::string::npos) << lines[1];
  const std::string ci = read_file(source_dir() / ".ci" / "run");
  EXPECT_NE(ci.find("\n" + lines[1] + "\n"), std::string::npos)
      << ".ci/run does not run the README's test command: " << lines[1];
  // How to build without CUDA is said next to them.
  EXPECT_NE(readme.find("-DNVDET_CUDA=OFF"), std::string::npos);
}

TEST(Docs, QuotedLineMatcherIsStrict) {
  EXPECT_TRUE(quoted_line_matches("a b ... d", "a b c d"));
  EXPECT_TRUE(quoted_line_matches("audit PASSED (0.2 s)", "audit PASSED (12.5 s)"));
  EXPECT_TRUE(quoted_line_matches("x ...", "x yz"));
  EXPECT_FALSE(quoted_line_matches("a b ... d", "a b c e"));
  EXPECT_FALSE(quoted_line_matches("b ... d", "a b c d"));
  EXPECT_FALSE(quoted_line_matches("a b", "a b c"));
}

TEST(Docs, ScenariosReadmeListsExactlyTheScenarioFiles) {
  const std::string text = read_file(source_dir() / "scenarios" / "README.md");
  // Names may be patterns: `gemm-speed-{bf16,fp16}-{4096,4096x14336}.yaml`,
  // `gemm-speed-odd-*.yaml`.
  std::vector<std::pair<std::string, std::regex>> named;
  static const std::regex yaml("`([A-Za-z0-9_.*{},-]+\\.yaml)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), yaml); it != std::sregex_iterator();
       ++it) {
    const std::string pattern = (*it)[1];
    std::string re;
    for (const char c : pattern) {
      if (c == '.') re += "\\.";
      else if (c == '*') re += "[^/]*";
      else if (c == '{') re += "(";
      else if (c == '}') re += ")";
      else if (c == ',') re += "|";
      else re += c;
    }
    named.emplace_back(pattern, std::regex(re));
  }
  std::set<std::string> present;
  for (const auto& e : fs::directory_iterator(source_dir() / "scenarios")) {
    if (e.path().extension() == ".yaml") present.insert(e.path().filename().string());
  }
  for (const std::string& f : present) {
    const bool described = std::any_of(
        named.begin(), named.end(), [&](const auto& n) { return std::regex_match(f, n.second); });
    EXPECT_TRUE(described) << f << " is not described in scenarios/README.md";
  }
  for (const auto& entry : named) {  // no structured binding: clang 14 cannot capture one
    const bool exists = std::any_of(present.begin(), present.end(), [&](const std::string& f) {
      return std::regex_match(f, entry.second);
    });
    EXPECT_TRUE(exists) << "scenarios/README.md names " << entry.first << ", which matches no file";
  }

  // The example quoted at the top is quickstart.yaml, comments and description aside.
  const size_t open = text.find("```yaml\n");
  ASSERT_NE(open, std::string::npos);
  const std::string quoted = text.substr(open + 8, text.find("```", open + 8) - open - 8);
  auto strip = [](const std::string& yaml_text) {
    std::vector<std::string> out;
    for (std::string line : lines_of(yaml_text)) {
      const size_t hash = line.rfind('#', 0) == 0 ? 0 : line.find(" #");
      if (hash != std::string::npos) line = line.substr(0, hash);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      if (!line.empty() && line.rfind("description:", 0) != 0) out.push_back(line);
    }
    return out;
  };
  EXPECT_EQ(strip(quoted), strip(read_file(source_dir() / "scenarios" / "quickstart.yaml")));
}

TEST(Docs, NoDocumentNamesAMissingFile) {
  // Repository paths (not build outputs such as build/tools/nvdet, nor folders a user creates
  // such as golden/ or out/): scenarios/..., reports/..., tests/..., lib/..., tools/...,
  // kernels/..., .ci/...
  static const std::regex path(
      "(^|[^A-Za-z0-9_./-])((scenarios|reports|tests|lib|tools|kernels|\\.ci)/[A-Za-z0-9_./"
      "-]*[A-Za-z0-9_])");
  for (const char* doc :
       {"README.md", "scenarios/README.md", "reports/README.md", "reports/h200/README.md"}) {
    const fs::path file = source_dir() / doc;
    if (!fs::exists(file)) continue;
    const std::string text = read_file(file);
    int checked = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), path);
         it != std::sregex_iterator(); ++it) {
      const std::string p = (*it)[2];
      ++checked;
      EXPECT_TRUE(fs::exists(source_dir() / p))
          << doc << " names " << p << ", which does not exist";
    }
    if (std::string(doc) == "README.md") EXPECT_GT(checked, 5);
  }
}

}  // namespace
}  // namespace nvdet::testing
