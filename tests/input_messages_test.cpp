// What nvdet says about bad input: input quoted in a message is a bounded, escaped excerpt (no
// NUL, no terminal escape, no megabytes), an input error with a place in a file is a GitHub
// annotation under Actions, and the small new-user defects stay fixed: --help lists only formats
// --format takes, bench does not offer an option it lacks, `nvdet report` names a file that is no
// audit report as such, and a .pt/.npz is named as another format.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/text_excerpt.h"
#include "lib/manifest/manifest.h"
#include "lib/model/hf_config.h"
#include "lib/report/verify_report.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

// The bytes an attacker would like a terminal to see: an escape sequence, a NUL, a newline.
const std::string kHostile = std::string("\x1b[2J\x1b]0;owned\x07") + std::string(1, '\0') + "\nX";

void expect_tame(const std::string& message, size_t max_size) {
  EXPECT_LE(message.size(), max_size) << message.substr(0, 200);
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_FALSE(u < 0x20 || u == 0x7f)
        << "control byte " << int(u) << " in: " << message.substr(0, 200);
    if (u < 0x20 || u == 0x7f) break;
  }
}

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(InputMessages, PrintableMessageNeutralisesControlBytesAndBoundsLength) {
  const std::string m = printable_message("a" + kHostile + std::string(10000, 'y'));
  expect_tame(m, kMessageChars + 3);  // escapes count against the bound too
  EXPECT_NE(m.find("\\x1b[2J"), std::string::npos) << m.substr(0, 80);
  EXPECT_NE(m.find("\\x00"), std::string::npos) << m.substr(0, 80);  // shown, never cutting
  EXPECT_EQ(m.substr(m.size() - 3), "...");
  EXPECT_EQ(printable_message("plain → text \\ kept"), "plain → text \\ kept");
}

// config.json values and unknown keys, huge and hostile, are quoted as excerpts.
TEST(InputMessages, CheckpointConfigValuesAreQuotedAsExcerpts) {
  const std::string big = kHostile + std::string(1 << 20, 'A');
  const nlohmann::json base = {{"model_type", "llama"},   {"hidden_size", 32},
                               {"num_hidden_layers", 1},  {"num_attention_heads", 2},
                               {"intermediate_size", 64}, {"vocab_size", 64}};
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"hidden_act", big},
           {"model_type", big},
           {big, 1},
           {"layer_types", nlohmann::json::array({big})},
           {"rope_scaling", {{"rope_type", big}}}}) {
    nlohmann::json j = base;
    j[key] = value;
    const std::string m = input_error_of([&] { (void)parse_hf_config(j, "config.json"); });
    expect_tame(m, 400);
    EXPECT_NE(m.find("config.json"), std::string::npos) << m;
  }
}

// --verify prints strings read from the manifest (its system strings, its entries' backends and
// contexts) as excerpts.
TEST(InputMessages, VerifyTextQuotesTheManifestsStringsAsExcerpts) {
  SystemInfo recorded, now;
  recorded.driver_version = kHostile + std::string(100000, 'd');
  now.driver_version = "580.95";
  VerifyResult v;
  v.scenario = "s";
  v.manifest = "m.json";
  v.environment = environment_changes(recorded, now);
  v.missing.push_back(
      {kHostile + std::string(100000, 'b'), kHostile + std::string(100000, 'c'), 0, 0});
  const std::string text = render_verify_text(v);
  for (const char* line_start : {"  environment: ", "  missing (recorded, not run): "}) {
    const size_t at = text.find(line_start);
    ASSERT_NE(at, std::string::npos) << text.substr(0, 300);
    expect_tame(text.substr(at, text.find('\n', at) - at), 400);
  }
}

TEST(InputMessages, AKeyTwiceInOneJsonObjectIsRefusedByName) {
  const std::string m = input_error_of(
      [] { (void)parse_json_input(R"({"a": {"x": 1, "x": 2}})", "manifest 'm.json'"); });
  EXPECT_NE(m.find("manifest 'm.json' holds the key 'x' twice"), std::string::npos) << m;
  // The same key in two different objects is no duplicate.
  EXPECT_NO_THROW(
      (void)parse_json_input(R"({"a": {"x": 1}, "b": {"x": 2}, "x": [{"x": 3}]})", "f"));
  const std::string hostile = input_error_of([] {
    (void)parse_json_input("{\"" + std::string("\\u001b[2J") + std::string(5000, 'k') +
                               "\": 1, \"" + std::string("\\u001b[2J") + std::string(5000, 'k') +
                               "\": 2}",
                           "f");
  });
  expect_tame(hostile, 200);
}

TEST(InputMessages, ErrorsOnTheCommandLineAreTameAndAnnotatedUnderActions) {
  const auto dir = make_temp_dir("messages");
  // A YAML backend name that is long and carries an escape sequence: its line and column are known.
  write_file(dir / "s.yaml",
             "name: m\nop: gemm\ndtype: bf16\nshape: {n: 8, k: 8}\nseed: 1\n"
             "backends:\n  cpu-" +
                 std::string(3000, 'z') + "\\x1b: invariant\n");
  const CommandResult r =
      run_nvdet_env("GITHUB_ACTIONS=true", "audit " + (dir / "s.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  expect_tame(r.err.substr(0, r.err.size() - 1), 600);  // one line (its newline aside)
  EXPECT_NE(r.out.find("::error file=" + (dir / "s.yaml").string() + ",line=7,col="),
            std::string::npos)
      << r.out;
  // Without Actions, no workflow command.
  const CommandResult plain = run_nvdet("audit " + (dir / "s.yaml").string());
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.out.find("::error"), std::string::npos) << plain.out;
}

TEST(InputMessages, HelpListsOnlyTheFormatsTheParserTakes) {
  const CommandResult help = run_nvdet("audit --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.find("verify: the --verify comparison"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find(".verify.json"), std::string::npos) << help.out;  // described with json
  const CommandResult refused = run_nvdet("audit x.yaml --report-dir d --format verify");
  EXPECT_EQ(refused.exit_code, 2);
}

TEST(InputMessages, BenchNamesOnlyOptionsItHas) {
  const CommandResult r = run_nvdet(
      "bench " + (source_dir() / "scenarios" / "quickstart.yaml").string() + " --backends cublas");
  if (r.exit_code == 0) GTEST_SKIP() << "cublas runs here";
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err.find("--skip-unavailable skips"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--backends"), std::string::npos) << r.err;
}

TEST(InputMessages, ReportOnJsonThatIsNoAuditReportSaysSo) {
  const auto dir = make_temp_dir("not-report");
  write_file(dir / "bench.json", R"({"schema_version": 1, "scenario": "quickstart", "rows": []})");
  write_file(dir / "manifest.json", R"({"version": 1, "system": {}, "scenarios": {}})");
  write_file(dir / "list.json", "[1, 2]");
  for (const char* f : {"bench.json", "manifest.json", "list.json"}) {
    const CommandResult r =
        run_nvdet("report " + (dir / f).string() + " --report-dir " + (dir / "out").string());
    EXPECT_EQ(r.exit_code, 2) << f << r.err;
    EXPECT_NE(r.err.find("not an audit report"), std::string::npos) << f << r.err;
    EXPECT_EQ(r.err.find("at()"), std::string::npos) << f << r.err;
  }
}

TEST(InputMessages, AFileOfAnotherFormatNamesTheSupportedOnes) {
  const auto dir = make_temp_dir("pt");
  // A PyTorch .pt and a NumPy .npz are zip files; a pickle starts with 0x80.
  write_file(dir / "w.pt", std::string("PK\x03\x04\x14\x00\x00\x00", 8) + std::string(200, 'z'));
  write_file(dir / "w.npz", std::string("PK\x03\x04\x0a\x00\x00\x00", 8) + std::string(200, 'z'));
  write_file(dir / "w.pkl", std::string("\x80\x02}q\x00(X\x06\x00", 10) + std::string(200, 'z'));
  for (const char* f : {"w.pt", "w.npz", "w.pkl"}) {
    const CommandResult r = run_nvdet("diff " + (dir / f).string() + " " + (dir / f).string());
    EXPECT_EQ(r.exit_code, 2) << f << r.err;
    EXPECT_NE(r.err.find("is not a .safetensors or .npy file"), std::string::npos) << f << r.err;
    EXPECT_EQ(r.err.find("header length"), std::string::npos) << f << r.err;
  }
}

}  // namespace
}  // namespace nvdet::testing
