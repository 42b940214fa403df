// nvdet bench's tables as plotting tools read them: the CSV read back by an RFC 4180 reader (one
// column per axis, sample count and spread, empty where a figure does not apply, numbers with
// enough digits at any speed), the same in JSON, and the Markdown appended to the job summary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "lib/report/bench_report.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

// RFC 4180: records end with CRLF or LF; a field is quoted when it holds a comma, quote or line
// break, and a quote inside a quoted field is doubled. Throws on a malformed quote.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      if (!field.empty() || was_quoted) throw std::runtime_error("quote inside an unquoted field");
      quoted = was_quoted = true;
    } else if (c == ',') {
      records.back().push_back(field);
      field.clear();
      was_quoted = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      records.back().push_back(field);
      field.clear();
      was_quoted = false;
      records.emplace_back();
    } else {
      if (was_quoted) throw std::runtime_error("text after a closing quote");
      field += c;
    }
  }
  if (quoted) throw std::runtime_error("unterminated quote");
  if (!field.empty() || !records.back().empty()) records.back().push_back(field);
  if (records.back().empty()) records.pop_back();
  return records;
}

TEST(BenchOutput, CsvReaderHandlesQuoting) {
  const auto r = read_csv("a,\"b,\"\"c\"\"\",d\r\n,x,\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<std::string>{"a", "b,\"c\"", "d"}));
  EXPECT_EQ(r[1], (std::vector<std::string>{"", "x", ""}));
  EXPECT_THROW(read_csv("a\"b\n"), std::runtime_error);
}

double number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  EXPECT_TRUE(!s.empty() && end == s.c_str() + s.size()) << "'" << s << "' is not a number";
  return v;
}

TEST(BenchOutput, CsvAndJsonHaveOneColumnPerAxisAndTheSpread) {
  const fs::path dir = make_temp_dir("bench-out");
  const std::string summary = (dir / "summary.md").string();
  const CommandResult r =
      run_nvdet_env("GITHUB_STEP_SUMMARY=" + summary,
                    "bench " + (source_dir() / "scenarios" / "quickstart.yaml").string() +
                        " -k 'batch=(2|17),' --warmup 0 --reps 3 --report-dir " + dir.string() +
                        " --format csv,json,md");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto csv = read_csv(read_file(dir / "bench-quickstart.csv"));
  ASSERT_EQ(csv.size(), 1u + 4 * 3);  // header, 4 contexts x 3 backends
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < csv[0].size(); ++i) col[csv[0][i]] = i;
  for (const char* c : {"scenario", "context", "batch", "position", "backend", "median_us",
                        "min_us", "max_us", "samples", "spread_pct", "tflops", "gbps",
                        "copy_fraction", "time_ratio", "baseline", "device_timed", "l2", "notes"}) {
    EXPECT_TRUE(col.count(c)) << c;
  }
  for (size_t i = 1; i < csv.size(); ++i) {
    const auto& row = csv[i];
    ASSERT_EQ(row.size(), csv[0].size());
    // The axis columns hold the context's values.
    EXPECT_EQ(row[col["context"]],
              "gemm(batch=" + row[col["batch"]] + ",position=" + row[col["position"]] + ")");
    EXPECT_EQ(row[col["samples"]], "3");
    const double med = number(row[col["median_us"]]), lo = number(row[col["min_us"]]),
                 hi = number(row[col["max_us"]]);
    EXPECT_LE(lo, med);
    EXPECT_LE(med, hi);
    EXPECT_NEAR(number(row[col["spread_pct"]]), 100.0 * (hi - lo) / med,
                0.01 * 100.0 * (hi - lo) / med + 1e-9);
    // A CPU run measures no copy rate: empty, not 0. The GEMM's TFLOP/s is small on a CPU but
    // carries its digits.
    EXPECT_EQ(row[col["copy_fraction"]], "");
    EXPECT_GT(number(row[col["tflops"]]), 0.0);
    EXPECT_EQ(row[col["device_timed"]], "false");
    EXPECT_EQ(row[col["l2"]], "");  // host-timed: no device L2 to be hot or cold
    // The backend time_ratio is taken against, named in every row.
    EXPECT_EQ(row[col["baseline"]], "cpu-variant");
    if (row[col["backend"]] == "cpu-variant") EXPECT_EQ(number(row[col["time_ratio"]]), 1.0);
    // What the backend chose: cpu-variant's split of K follows the batch (4 at batch 2, 2 at
    // batch 17); cpu-invariant's does not.
    if (row[col["backend"]] == "cpu-variant") {
      EXPECT_EQ(row[col["notes"]].find(row[col["batch"]] == "2" ? "split_k=4" : "split_k=2"), 0u)
          << row[col["notes"]];
    }
    if (row[col["backend"]] == "cpu-invariant") {
      EXPECT_NE(row[col["notes"]].find("split_k=1"), std::string::npos) << row[col["notes"]];
    }
  }
  const auto j = nlohmann::json::parse(read_file(dir / "bench-quickstart.json"));
  EXPECT_EQ(j.at("axes"), nlohmann::json({"batch", "position"}));
  for (const auto& row : j.at("rows")) {
    EXPECT_TRUE(row.at("batch").is_number_integer());
    EXPECT_TRUE(row.at("position").is_string());
    EXPECT_TRUE(row.at("copy_fraction").is_null());
    EXPECT_EQ(row.at("samples"), 3);
    EXPECT_TRUE(row.at("notes").is_object());
  }
  // The Markdown went to the job summary too, with '-' where there is no copy rate.
  const std::string md = read_file(summary);
  EXPECT_NE(md.find("## nvdet bench: quickstart"), std::string::npos);
  EXPECT_NE(md.find("- `cpu-variant`: by context: split_k (`4`, `2`)"), std::string::npos) << md;
  EXPECT_EQ(md, read_file(dir / "bench-quickstart.md") + "\n");
  fs::remove_all(dir);
}

// --l2 takes hot or cold and nothing else (exit 2 naming it); cold on CPU backends changes no
// row (they are host-timed) but the tables say how the run was made.
TEST(BenchOutput, L2ModeIsHotOrCold) {
  const std::string scenario = (source_dir() / "scenarios" / "quickstart.yaml").string();
  const CommandResult bad = run_nvdet("bench " + scenario + " --l2 lukewarm");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--l2 must be hot or cold, got 'lukewarm'"), std::string::npos) << bad.err;
  const fs::path dir = make_temp_dir("bench-l2");
  const CommandResult cold =
      run_nvdet("bench " + scenario + " -k 'batch=2,' --warmup 0 --reps 1 --l2 cold --report-dir " +
                dir.string() + " --format json");
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  const auto j = nlohmann::json::parse(read_file(dir / "bench-quickstart.json"));
  EXPECT_EQ(j.at("timing").at("l2"), "cold");
  for (const auto& row : j.at("rows")) EXPECT_EQ(row.at("l2"), "");
  fs::remove_all(dir);
}

// --launch-gaps is a flag (no value); the JSON's timing says how the GPU rows were launched, and a
// CPU row, host-timed, carries no timing note either way.
TEST(BenchOutput, LaunchGapsIsRecorded) {
  const std::string scenario = (source_dir() / "scenarios" / "quickstart.yaml").string();
  for (const bool gaps : {false, true}) {
    const fs::path dir = make_temp_dir("bench-gaps");
    const CommandResult r = run_nvdet("bench " + scenario + " -k 'batch=2,' --warmup 0 --reps 1" +
                                      std::string(gaps ? " --launch-gaps" : "") + " --report-dir " +
                                      dir.string() + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(read_file(dir / "bench-quickstart.json"));
    EXPECT_EQ(j.at("timing").at("launches"), gaps ? "paced" : "queued");
    for (const auto& row : j.at("rows")) EXPECT_FALSE(row.at("notes").contains("timing"));
    fs::remove_all(dir);
  }
  const CommandResult bad = run_nvdet("bench " + scenario + " --launch-gaps=sometimes");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST(BenchOutput, FiguresKeepTheirDigitsAtAnySpeed) {
  BenchResult r;
  r.scenario = "s";
  r.axes = {"batch"};
  BenchRow slow;
  slow.context = "gemm(batch=1)";
  slow.context_values = {{"batch", int64_t{1}}};
  slow.backend = "b";
  slow.median_us = slow.min_us = slow.max_us = 123456789.0;
  slow.tflops = 1.234567e-7;
  slow.gbps = 4567.891;
  slow.samples = 20;
  slow.time_ratio = 1.0;
  BenchRow spread = slow;  // (112.3456 - 100) / 100: six digits of the spread, not three
  spread.median_us = spread.min_us = 100.0;
  spread.max_us = 112.3456;
  r.rows = {slow, spread};
  r.baseline = "b";
  const auto csv = read_csv(render_bench_csv(r));
  ASSERT_EQ(csv.size(), 3u);
  std::map<std::string, std::string> row, second;
  for (size_t i = 0; i < csv[0].size(); ++i) row[csv[0][i]] = csv[1][i];
  for (size_t i = 0; i < csv[0].size(); ++i) second[csv[0][i]] = csv[2][i];
  EXPECT_EQ(row["tflops"], "1.23457e-07");
  EXPECT_EQ(row["gbps"], "4567.89");
  EXPECT_EQ(row["median_us"], "1.23457e+08");
  EXPECT_EQ(row["copy_fraction"], "");
  EXPECT_EQ(row["spread_pct"], "0");
  EXPECT_EQ(row["baseline"], "b");
  EXPECT_EQ(second["spread_pct"], "12.3456");
  EXPECT_EQ(bench_to_json(r).at("rows").at(1).at("baseline"), "b");
}

}  // namespace
}  // namespace nvdet::testing
