// Every command's --format is one FormatRegistry (lib/report/format_registry.h): audit's (and
// report's) reports, bench's tables and bisect's output are registered alike, each with a name,
// a file suffix and a writer. --format is parsed, refused, listed in --help and in `nvdet list`
// from the registry of its command; a format without a suffix or with a taken name is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>

#include "lib/core/error.h"
#include "lib/report/bench_report.h"
#include "lib/report/bench_writers.h"
#include "lib/report/bisect_writers.h"
#include "lib/report/report_writers.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

// A bench table of seeded figures: two contexts of one axis, two backends.
BenchResult seeded_bench_result() {
  std::mt19937_64 rng(2207);
  std::uniform_real_distribution<double> us(1.0, 5000.0);
  BenchResult r;
  r.scenario = "seeded";
  r.op = "gemm";
  r.dtype = "bf16";
  r.baseline = "b0";
  r.axes = {"batch"};
  for (const int64_t batch : {int64_t{3}, int64_t{40}}) {
    for (const char* backend : {"b0", "b1"}) {
      BenchRow row;
      row.context = "gemm(batch=" + std::to_string(batch) + ")";
      row.context_values = {{"batch", batch}};
      row.backend = backend;
      row.min_us = us(rng);
      row.median_us = row.min_us * 1.25;
      row.max_us = row.min_us * 1.5;
      row.tflops = us(rng) * 1e-3;
      row.gbps = us(rng);
      row.time_ratio = row.backend == "b0" ? 1.0 : us(rng) / 1000.0;
      row.samples = 7;
      row.device_timed = false;
      r.rows.push_back(row);
    }
  }
  return r;
}

template <class W>
void expect_complete(const FormatRegistry<W>& registry) {
  ASSERT_FALSE(registry.writers().empty()) << registry.noun();
  for (const auto& w : registry.writers()) {
    EXPECT_FALSE(w->name().empty()) << registry.noun();
    EXPECT_TRUE(w->extension().starts_with(".")) << registry.noun() << " " << w->name();
    EXPECT_FALSE(w->description().empty()) << registry.noun() << " " << w->name();
  }
}

TEST(FormatRegistry, EveryCommandRegistersItsFormatsWithASuffix) {
  // Other tests of this binary may have registered audit writers of their own after these.
  EXPECT_TRUE(report_format_registry().names().starts_with("md, json, junit, html"))
      << report_format_registry().names();
  EXPECT_EQ(bench_format_registry().names(), "md, json, csv");
  EXPECT_EQ(bisect_format_registry().names(), "text, json, html");
  expect_complete(report_format_registry());
  expect_complete(bench_format_registry());
  expect_complete(bisect_format_registry());
}

// The registry's bench writers are the bench tables, byte for byte (what cmd_bench wrote before
// the formats were registered).
TEST(FormatRegistry, BenchFormatsWriteTheBenchTables) {
  const BenchResult r = seeded_bench_result();
  const auto& reg = bench_format_registry();
  EXPECT_EQ(reg.find("md")->render(r), render_bench_markdown(r));
  EXPECT_EQ(reg.find("MARKDOWN"), reg.find("md"));
  EXPECT_EQ(reg.find("json")->render(r), bench_to_json(r).dump(2) + "\n");
  EXPECT_EQ(reg.find("csv")->render(r), render_bench_csv(r));
  const auto chosen = reg.parse(" csv ,md,csv,");
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0]->extension(), ".csv");
  EXPECT_EQ(chosen[1]->extension(), ".md");
}

class NoSuffixWriter final : public BenchWriter {
 public:
  std::string_view name() const override { return "test-nosuffix"; }
  std::string_view extension() const override { return ""; }
  std::string_view description() const override { return "test-only"; }
  std::string render(const BenchResult&) const override { return ""; }
};

class TakenNameWriter final : public BisectWriter {
 public:
  std::string_view name() const override { return "test-bisect-extra"; }
  std::string_view extension() const override { return ".txt"; }
  std::string_view description() const override { return "test-only"; }
  std::vector<std::string_view> aliases() const override { return {"json"}; }
  std::string render(const BisectResult&) const override { return ""; }
};

TEST(FormatRegistry, AFormatWithoutASuffixOrWithATakenNameIsRefused) {
  try {
    register_bench_writer(std::make_unique<NoSuffixWriter>());
    FAIL() << "a format without a suffix was registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("bench format 'test-nosuffix' has no file suffix"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(bench_format_registry().find("test-nosuffix"), nullptr);
  try {
    register_bisect_writer(std::make_unique<TakenNameWriter>());
    FAIL() << "a format with a taken alias was registered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bisect format name 'json' is empty or taken"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(bisect_format_registry().find("test-bisect-extra"), nullptr);
}

// Exit 2 before anything runs, naming the format and the command's known formats.
TEST(FormatRegistry, EachCommandRefusesAnUnknownFormatFromItsRegistry) {
  const std::string quickstart = (source_dir() / "scenarios" / "quickstart.yaml").string();
  const std::filesystem::path dir = make_temp_dir("format-registry");
  const CommandResult bench =
      run_nvdet("bench " + quickstart + " --report-dir " + dir.string() + " --format md,pdf");
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_NE(bench.err.find("unknown bench format 'pdf' (known formats: md, json, csv)"),
            std::string::npos)
      << bench.err;
  const CommandResult bisect = run_nvdet(
      "bisect " + (source_dir() / "scenarios" / "model-cpu.yaml").string() + " --format junit");
  EXPECT_EQ(bisect.exit_code, 2);
  EXPECT_NE(bisect.err.find("unknown bisect format 'junit' (known formats: text, json, html)"),
            std::string::npos)
      << bisect.err;
  const CommandResult audit =
      run_nvdet("audit " + quickstart + " --report-dir " + dir.string() + " --format csv");
  EXPECT_EQ(audit.exit_code, 2);
  EXPECT_NE(audit.err.find("unknown report format 'csv' (known formats: md, json, junit, html)"),
            std::string::npos)
      << audit.err;
  std::filesystem::remove_all(dir);
}

// --help and `nvdet list` list each command's formats from its registry.
TEST(FormatRegistry, HelpAndListShowEachCommandsFormats) {
  const CommandResult bench = run_nvdet("bench --help");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const CommandResult bisect = run_nvdet("bisect --help");
  ASSERT_EQ(bisect.exit_code, 0) << bisect.err;
  for (const auto& w : bench_format_registry().writers()) {
    EXPECT_NE(bench.out.find(std::string(w->name()) + ": " + std::string(w->description())),
              std::string::npos)
        << w->name() << "\n" << bench.out;
  }
  for (const auto& w : bisect_format_registry().writers()) {
    EXPECT_NE(bisect.out.find(std::string(w->name()) + ": " + std::string(w->description())),
              std::string::npos)
        << w->name() << "\n" << bisect.out;
  }
  const CommandResult list = run_nvdet("list --format json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const nlohmann::json formats = nlohmann::json::parse(list.out).at("formats");
  EXPECT_EQ(formats.at("audit"), nlohmann::json({"md", "json", "junit", "html"}));
  EXPECT_EQ(formats.at("report"), formats.at("audit"));
  EXPECT_EQ(formats.at("bench"), nlohmann::json({"md", "json", "csv"}));
  EXPECT_EQ(formats.at("bisect"), nlohmann::json({"text", "json", "html"}));
  const CommandResult text = run_nvdet("list");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  bench           md, json, csv\n"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace nvdet::testing
