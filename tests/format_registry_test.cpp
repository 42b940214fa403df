// Every command's --format is one FormatRegistry (lib/report/format_registry.h): audit's (and
// report's) reports, bench's tables and bisect's output are registered alike, each with a name,
// a file suffix and a writer. --format is parsed, refused, listed in --help and in `nvdet list`
// from the registry of its command; a format without a suffix or with a taken name is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <type_traits>

#include "lib/core/error.h"
#include "lib/report/bench_report.h"
#include "lib/report/command_formats.h"
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

std::string render_nothing(const BenchResult&) { return ""; }
std::string render_nothing_either(const BisectResult&) { return ""; }

// The sentence `add` refuses `writer` with (exit 2), or "" when it was added.
template <class W>
std::string refusal(FormatRegistry<W>& registry,
                    std::unique_ptr<std::type_identity_t<W>> writer) {
  try {
    registry.add(std::move(writer));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(FormatRegistry, AFormatWithoutASuffixOrWithATakenNameIsRefused) {
  using BenchFn = FunctionWriter<BenchWriter>;
  using BisectFn = FunctionWriter<BisectWriter>;
  EXPECT_NE(refusal(bench_format_registry(),
                    std::make_unique<BenchFn>(BenchFn::Facts{"test-nosuffix", "", "test-only"},
                                              render_nothing))
                .find("bench format 'test-nosuffix' has no file suffix"),
            std::string::npos);
  EXPECT_EQ(bench_format_registry().find("test-nosuffix"), nullptr);
  EXPECT_NE(refusal(bisect_format_registry(),
                    std::make_unique<BisectFn>(
                        BisectFn::Facts{"test-bisect-extra", ".txt", "test-only", {"json"}},
                        render_nothing_either))
                .find("bisect format name 'json' is empty or taken"),
            std::string::npos);
  EXPECT_EQ(bisect_format_registry().find("test-bisect-extra"), nullptr);
}

// `nvdet ARGS` exits 2 with `sentence` on stderr.
void expect_refused(const std::string& args, const std::string& sentence) {
  const CommandResult r = run_nvdet(args);
  EXPECT_EQ(r.exit_code, 2) << args;
  EXPECT_NE(r.err.find(sentence), std::string::npos) << args << "\n" << r.err;
}

// Exit 2 before anything runs, naming the format and the command's known formats.
TEST(FormatRegistry, EachCommandRefusesAnUnknownFormatFromItsRegistry) {
  const std::string quickstart = (source_dir() / "scenarios" / "quickstart.yaml").string();
  const std::filesystem::path dir = make_temp_dir("format-registry");
  expect_refused("bench " + quickstart + " --report-dir " + dir.string() + " --format md,pdf",
                 "unknown bench format 'pdf' (known formats: md, json, csv)");
  expect_refused(
      "bisect " + (source_dir() / "scenarios" / "model-cpu.yaml").string() + " --format junit",
      "unknown bisect format 'junit' (known formats: text, json, html)");
  expect_refused("audit " + quickstart + " --report-dir " + dir.string() + " --format csv",
                 "unknown report format 'csv' (known formats: md, json, junit, html)");
  std::filesystem::remove_all(dir);
}

// `nvdet COMMAND --help` has "name: description" for every format of `registry`.
template <class W>
void expect_help_lists(const std::string& command, const FormatRegistry<W>& registry) {
  const CommandResult help = run_nvdet(command + " --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const auto& w : registry.writers()) {
    EXPECT_NE(help.out.find(std::string(w->name()) + ": " + std::string(w->description())),
              std::string::npos)
        << command << " " << w->name() << "\n" << help.out;
  }
}

// --help and `nvdet list` list each command's formats from its registry.
TEST(FormatRegistry, HelpAndListShowEachCommandsFormats) {
  expect_help_lists("bench", bench_format_registry());
  expect_help_lists("bisect", bisect_format_registry());
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
