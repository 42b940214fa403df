// The report writers against a hand-built audit result (tests/report_sample_result.h): every
// JSON contract key with its value, the Markdown summary's verdicts, grouped contexts and first
// mismatch, well-formed JUnit with failures exactly where expectations failed, the HTML sections
// and heatmap cells, and atomic writes.
#include "lib/report/report_writers.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "lib/core/atomic_file.h"
#include "lib/core/error.h"
#include "lib/report/bench_report.h"
#include "lib/report/console_summary.h"
#include "lib/report/html_report.h"
#include "lib/report/json_report.h"
#include "lib/report/json_report_reader.h"
#include "lib/report/junit_report.h"
#include "lib/report/markdown_report.h"
#include "tests/report_sample_result.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using nlohmann::json;
using testing::make_sample_audit_result;
using testing::sample_context_id;

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// ---------------------------------------------------------------- formats

TEST(ReportFormats, ParsesNamesAndAliases) {
  const auto all = parse_report_formats("md,json,junit,html");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0]->name(), "md");
  EXPECT_EQ(all[1]->name(), "json");
  EXPECT_EQ(all[2]->name(), "junit");
  EXPECT_EQ(all[3]->name(), "html");
  EXPECT_EQ(all[2]->extension(), ".junit.xml");
  const auto some = parse_report_formats(" JSON , markdown,json,");
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0]->name(), "json");
  EXPECT_EQ(some[1]->name(), "md");
  EXPECT_EQ(parse_report_formats("XML").at(0)->name(), "junit");
  // A companion is written with its format, never chosen by name.
  EXPECT_THROW(parse_report_formats("verify"), Error);
}

TEST(ReportFormats, RejectsUnknownAndEmpty) {
  try {
    parse_report_formats("md,pdf");
    FAIL() << "pdf accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("unknown report format 'pdf'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("md, json, junit, html"), std::string::npos) << e.what();
  }
  try {
    parse_report_formats(" , ");
    FAIL() << "empty list accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
  }
}

TEST(ReportFormats, BaseNameIsSafe) {
  AuditResult r;
  r.scenario.name = "my scenario/../x";
  EXPECT_EQ(report_base_name(r), "my-scenario-..-x");
  r.scenario.name = "..";
  EXPECT_EQ(report_base_name(r), "audit");
  r.scenario.name = "";
  EXPECT_EQ(report_base_name(r), "audit");
}

// ---------------------------------------------------------------- JSON

TEST(JsonReport, HasEveryContractKeyWithItsValue) {
  const AuditResult r = make_sample_audit_result();
  const json j = json::parse(render_json_report(r));  // throws (fails the test) if invalid

  EXPECT_EQ(j.at("schema_version"), kReportSchemaVersion);

  const json& s = j.at("scenario");
  EXPECT_EQ(s.at("name"), "gemm-batch-sweep");
  EXPECT_EQ(s.at("path"), "scenarios/gemm.yaml");
  EXPECT_EQ(s.at("description"), r.scenario.description);
  EXPECT_EQ(s.at("op"), "gemm");
  EXPECT_EQ(s.at("dtype"), "bf16");
  EXPECT_EQ(s.at("out_dtype"), "bf16");
  EXPECT_EQ(s.at("seed"), 1234);
  EXPECT_EQ(s.at("requests"), json::array({0, 7}));
  EXPECT_EQ(s.at("repeat"), 2);
  ASSERT_EQ(s.at("axes").size(), 2u);
  EXPECT_EQ(s.at("axes")[0].at("name"), "batch");
  EXPECT_EQ(s.at("axes")[0].at("values").size(), 10u);
  EXPECT_EQ(s.at("axes")[0].at("values")[8], "16");
  EXPECT_EQ(s.at("axes")[1].at("name"), "position");
  EXPECT_EQ(s.at("coord_names"), json::array({"token", "col"}));

  const json& d = j.at("device");
  for (const char* key : {"nvdet_version", "host", "cuda_built", "compiled_architectures",
                          "cuda_fp_flags", "cxx_fp_flags", "driver_version", "cuda_runtime_version",
                          "cublas_version", "device_error", "gpus"}) {
    EXPECT_TRUE(d.contains(key)) << key;
  }
  EXPECT_EQ(d.at("cuda_built"), true);
  EXPECT_EQ(d.at("driver_version"), "580.82");
  EXPECT_EQ(d.at("cublas_version"), "13.1.0");
  ASSERT_EQ(d.at("gpus").size(), 1u);
  const json& g = d.at("gpus")[0];
  EXPECT_EQ(g.at("index"), 0);
  EXPECT_EQ(g.at("name"), "NVIDIA H200");
  EXPECT_EQ(g.at("sm_count"), 132);
  EXPECT_EQ(g.at("compute_capability"), "9.0");
  EXPECT_EQ(g.at("memory_bytes").get<uint64_t>(), uint64_t{150} << 30);
  EXPECT_EQ(g.at("l2_bytes").get<uint64_t>(), uint64_t{60} << 20);

  ASSERT_EQ(j.at("backends").size(), 4u);
  const json& b0 = j.at("backends")[0];
  EXPECT_EQ(b0.at("name"), "cpu-variant");
  EXPECT_EQ(b0.at("description"), "test backend cpu-variant");
  EXPECT_EQ(b0.at("gpu"), false);
  EXPECT_EQ(b0.at("expect"), "variant");
  EXPECT_EQ(b0.at("passed"), true);
  EXPECT_EQ(b0.at("contexts_run"), 20);
  EXPECT_EQ(b0.at("divergent_contexts"), 7);
  EXPECT_EQ(b0.at("run_to_run_divergences"), 0);
  EXPECT_EQ(b0.at("max_distinct_results"), 3);
  EXPECT_EQ(b0.at("verdict"), "varies as expected: 7 of 20 contexts differ");
  EXPECT_EQ(b0.at("stands_for").at("gemm"), "cuBLAS split-K heuristic");
  EXPECT_EQ(j.at("backends")[1].at("expect"), "invariant");
  EXPECT_EQ(j.at("backends")[1].at("passed"), false);
  EXPECT_EQ(j.at("backends")[3].at("expect"), "report");

  ASSERT_EQ(j.at("cases").size(), r.cases.size());
  // cases[0]: cpu-variant, baseline context, repeat 0.
  const json& c0 = j.at("cases")[0];
  EXPECT_EQ(c0.at("backend"), "cpu-variant");
  EXPECT_EQ(c0.at("context_index"), 0);
  EXPECT_FALSE(c0.contains("context"));  // stored once, in the context table
  ASSERT_EQ(j.at("contexts").size(), r.contexts.size());
  const json& x0 = j.at("contexts")[0];
  EXPECT_EQ(x0.at("index"), 0);
  EXPECT_EQ(x0.at("id"), sample_context_id("1", "first"));
  EXPECT_EQ(x0.at("values").at("batch"), 1);  // typed: a number
  EXPECT_EQ(x0.at("values").at("position"), "first");
  EXPECT_EQ(x0.at("group"), "");
  EXPECT_EQ(c0.at("repeat"), 0);
  EXPECT_DOUBLE_EQ(c0.at("seconds").get<double>(), 0.25);
  EXPECT_EQ(c0.at("notes").at("split_k"), "1");
  ASSERT_EQ(c0.at("requests").size(), 2u);
  const json& q0 = c0.at("requests")[0];
  EXPECT_EQ(q0.at("request"), 0);
  EXPECT_EQ(q0.at("hash"), "11111111111111110000000000000000");
  EXPECT_EQ(q0.at("token_hashes").size(), 2u);
  EXPECT_EQ(q0.at("token_hashes")[1], "11111111111111110000000000000064");
  EXPECT_FALSE(q0.contains("completion"));  // only when non-empty
  // A cpu-reference case carries a completion for request 7.
  bool saw_completion = false;
  for (const json& c : j.at("cases")) {
    if (c.at("backend") != "cpu-reference") continue;
    EXPECT_EQ(c.at("requests")[1].at("completion"), json::array({11, 12, 13}));
    saw_completion = true;
  }
  EXPECT_TRUE(saw_completion);

  ASSERT_EQ(j.at("divergences").size(), 9u);
  const json& v0 = j.at("divergences")[0];
  EXPECT_EQ(v0.at("backend"), "cpu-variant");
  EXPECT_EQ(v0.at("kind"), "context");
  EXPECT_EQ(v0.at("request"), 0);
  EXPECT_EQ(v0.at("token"), 0);
  EXPECT_EQ(v0.at("baseline_context"), sample_context_id("1", "first"));
  EXPECT_EQ(v0.at("context"), sample_context_id("2", "last"));
  EXPECT_EQ(v0.at("repeat"), 0);
  const json& m0 = v0.at("first_mismatch");
  EXPECT_EQ(m0.at("flat_index"), 17);
  EXPECT_EQ(m0.at("coords"), json::array({0, 17}));
  EXPECT_EQ(m0.at("a"), 1.5);
  EXPECT_EQ(m0.at("b"), 1.5078125);
  EXPECT_EQ(m0.at("a_bits"), "0x3fc0");
  EXPECT_EQ(m0.at("b_bits"), "0x3fc1");
  EXPECT_EQ(m0.at("ulp"), 1);
  EXPECT_EQ(v0.at("max_abs_diff"), 0.0078125);
  EXPECT_EQ(v0.at("max_rel_diff"), 0.005);
  EXPECT_EQ(v0.at("mismatch_count"), 12);
  EXPECT_EQ(v0.at("mismatched_tokens"), 1);
  EXPECT_EQ(v0.at("tokens"), 2);
  EXPECT_EQ(v0.at("baseline_notes").at("split_k"), "1");
  EXPECT_EQ(v0.at("notes").at("split_k"), "2");

  // Non-finite values: strings, and ulp null when a NaN is involved.
  const json& v7 = j.at("divergences")[7];
  EXPECT_EQ(v7.at("backend"), "cpu-invariant");
  EXPECT_EQ(v7.at("first_mismatch").at("a"), "inf");
  EXPECT_EQ(v7.at("first_mismatch").at("b"), "nan");
  EXPECT_TRUE(v7.at("first_mismatch").at("ulp").is_null());
  EXPECT_EQ(v7.at("max_abs_diff"), "nan");
  EXPECT_EQ(v7.at("max_rel_diff"), "inf");
  EXPECT_EQ(j.at("divergences")[8].at("kind"), "run-to-run");
  EXPECT_EQ(j.at("divergences")[8].at("repeat"), 1);

  const json& sum = j.at("summary");
  EXPECT_EQ(sum.at("passed"), false);
  EXPECT_EQ(sum.at("backends"), 4);
  EXPECT_EQ(sum.at("contexts"), 20);
  EXPECT_EQ(sum.at("cases"), 160);
  EXPECT_EQ(sum.at("divergences"), 9);
  EXPECT_EQ(sum.at("failed_backends"), 2);
  EXPECT_EQ(sum.at("seconds"), 40.0);
}

TEST(JsonReport, NumbersRoundTripExactly) {
  FirstMismatch m;
  m.a = 0.1;
  m.b = -3.0517578125e-05;
  m.ulp = 123456789012345ull;
  const json j = json::parse(first_mismatch_to_json(m).dump());
  EXPECT_EQ(j.at("a").get<double>(), 0.1);
  EXPECT_EQ(j.at("b").get<double>(), -3.0517578125e-05);
  EXPECT_EQ(j.at("ulp").get<uint64_t>(), 123456789012345ull);
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), "-inf");
}

// ---------------------------------------------------------------- Markdown

TEST(MarkdownReport, SaysVerdictsGroupedContextsAndFirstMismatch) {
  const std::string md = render_markdown_report(make_sample_audit_result());
  EXPECT_EQ(md.rfind("# \u2717 FAIL", 0), 0u) << md.substr(0, 80);
  EXPECT_NE(
      md.find(
          "NVIDIA H200 (132 SMs, compute 9.0), driver 580.82, CUDA runtime 13.0, cuBLAS 13.1.0"),
      std::string::npos);
  // One table row per backend with its verdict mark.
  EXPECT_NE(md.find("| `cpu-variant` | variant | 20 | 7 | 0 | 3 | \u2713 varies as expected"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `cpu-invariant` | invariant | 20 | 1 | 0 | 2 | \u2717 "), std::string::npos);
  EXPECT_NE(md.find("| `cpu-canary` | variant | 20 | 0 | 0 | 1 | \u2717 "), std::string::npos);
  // Where cpu-variant changes, grouped by position with consecutive batches folded.
  EXPECT_NE(md.find("Differs from `batch=1, position=first` at:"), std::string::npos) << md;
  EXPECT_NE(md.find("- position=last: batch = 2, 32\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- position=first: batch = 5..8, 16\n"), std::string::npos) << md;
  // The first mismatch: named coordinates, values, bits, ULP, the notes that changed.
  EXPECT_NE(md.find("| 0 | 0 | batch=2, position=last | token=0, col=17 | 1.5 | 1.5078125 | "
                    "`0x3fc0` \u2192 `0x3fc1` | 1 | 0.007812 | 12 elements, 1/2 tokens | "
                    "split_k 1 \u2192 2 |"),
            std::string::npos)
      << md;
  // The inf/NaN mismatch of cpu-invariant.
  EXPECT_NE(
      md.find("| 7 | 1 | batch=3, position=last | token=1, col=5 | inf | nan | `0x7f80` \u2192 "
              "`0x7fc0` | n/a | nan |"),
      std::string::npos)
      << md;
  // Run-to-run is named as such.
  EXPECT_NE(md.find("batch=4, position=first (repeat 1 vs 0)"), std::string::npos);
  // A backend without divergences gets no section.
  EXPECT_EQ(md.find("### `cpu-canary`"), std::string::npos);
  // Markup in free text stays text.
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt; & friends"), std::string::npos);
  EXPECT_NE(md.find("(a &lt; b & \"quoted\")"), std::string::npos);
  EXPECT_NE(md.find("### `cpu-invariant`"), std::string::npos);
}

// Model cases carry the tokens they generated: the JSON keeps them (and reads them back), the
// Markdown and HTML reports give each case's tokens/s; other ops' reports have no such section.
TEST(Reports, ModelCasesGiveTheirDecodeThroughput) {
  AuditResult r = make_sample_audit_result();
  EXPECT_EQ(render_markdown_report(r).find("Decode throughput"), std::string::npos);
  EXPECT_EQ(render_html_report(r).find("Decode throughput"), std::string::npos);
  EXPECT_EQ(render_console_summary(r).find("tokens/s"), std::string::npos);
  EXPECT_FALSE(json::parse(render_json_report(r)).at("cases").at(0).contains("generated_tokens"));
  ASSERT_GE(r.cases.size(), 2u);
  r.cases[0].generated_tokens = 2048;
  r.cases[0].seconds = 0.5;
  r.cases[1].generated_tokens = 4096;
  r.cases[1].seconds = 2.0;
  const std::string md = render_markdown_report(r);
  EXPECT_NE(md.find("## Decode throughput"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.5 | 2048 | 4096 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 4096 | 2048 |"), std::string::npos) << md;
  EXPECT_EQ(count_of(md, " | 2048 | 4096 |") + count_of(md, " | 4096 | 2048 |"), 2u) << md;
  const std::string html = render_html_report(r);
  EXPECT_NE(html.find("<h2>Decode throughput</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">2048</td><td class=\"num\">4096</td>"), std::string::npos);
  // The console gives each backend's range; here both cases are the first backend's.
  ASSERT_EQ(r.cases[0].backend, r.cases[1].backend);
  const std::string console = render_console_summary(r);
  EXPECT_NE(console.find("decode: 2048-4096 tokens/s per case (0.5-2 s)"), std::string::npos)
      << console;
  EXPECT_EQ(count_of(console, "tokens/s per case"), 1u) << console;
  const json j = json::parse(render_json_report(r));
  EXPECT_EQ(j.at("cases").at(0).at("generated_tokens"), 2048);
  const AuditResult back = audit_from_json(j, "the test's report");
  EXPECT_EQ(back.cases.at(0).generated_tokens, 2048);
  EXPECT_EQ(back.cases.at(1).generated_tokens, 4096);
  EXPECT_EQ(back.cases.at(2).generated_tokens, 0);
  // A report whose count is not a non-negative integer is refused, not converted.
  for (const json& bad : {json(-1), json(1e300), json(2.5), json("2048"),
                          json(std::numeric_limits<uint64_t>::max())}) {
    json edited = j;
    edited["cases"][0]["generated_tokens"] = bad;
    EXPECT_ANY_THROW(audit_from_json(edited, "the test's report")) << bad.dump();
  }
}

// A model audit's token-level result, as the console states it, is in every human format: the
// distinct completions, the first token flip with its margin and the first op whose bits parted;
// a backend with no flip says so. Other ops get no such section.
TEST(Reports, ModelAuditsStateTheTokenLevelResultInEveryFormat) {
  AuditResult r = make_sample_audit_result();
  EXPECT_EQ(render_markdown_report(r).find("Token-level result"), std::string::npos);
  EXPECT_EQ(render_html_report(r).find("Token-level result"), std::string::npos);
  EXPECT_EQ(render_junit_report(r).find("first_token_flip"), std::string::npos);
  r.scenario.op = "model";
  Divergence* flipped = nullptr;
  for (Divergence& d : r.divergences) {
    if (d.backend == "cpu-variant" && !flipped) flipped = &d;
  }
  ASSERT_NE(flipped, nullptr);
  flipped->completion = CompletionDivergence{4, 335, 1, 3.05814, 3.05315, 3.0, 3.1, 0.00499};
  flipped->first_op = OpDivergence{0, 2, "down"};
  for (BackendOutcome& b : r.backends) b.max_distinct_completions = b.name == "cpu-variant" ? 2 : 1;
  const std::string flip = "request 0 at step 4 in " + flipped->context +
                           ": 335 vs 1 (baseline logits 3.05814 vs 3.05315, top-1/top-2 margin "
                           "0.00499)";
  const std::string console = render_console_summary(r);
  EXPECT_NE(console.find("first token flip: " + flip), std::string::npos) << console;
  EXPECT_NE(console.find("its bits parted first at step 0, layer 2, op down"), std::string::npos);

  const std::string md = render_markdown_report(r);
  EXPECT_NE(md.find("## Token-level result"), std::string::npos) << md;
  EXPECT_NE(md.find("| `cpu-variant` | up to 2 distinct per request | " + flip +
                    " | step 0, layer 2, op down |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| `cpu-invariant` | up to 1 distinct per request | none: every token "
                    "matched the baseline's | - |"),
            std::string::npos)
      << md;
  const std::string html = render_html_report(r);
  EXPECT_NE(html.find("<h2>Token-level result</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>up to 2 distinct per request</td><td>" + html_escape(flip) +
                      "</td><td>step 0, layer 2, op down</td>"),
            std::string::npos)
      << html;
  const std::string junit = render_junit_report(r);
  EXPECT_NE(junit.find("<property name=\"first_token_flip\" value=\"" + xml_escape(flip) + "\"/>"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<property name=\"first_op_parted\" value=\"step 0, layer 2, op down\"/>"),
            std::string::npos);
  EXPECT_NE(junit.find("<property name=\"completions\" value=\"up to 2 distinct per request\"/>"),
            std::string::npos);
}

// Every integer the reader takes is checked: a float (even an integral one such as 1e89), a
// string, or a value outside the field's type is refused with the key's name, never converted
// (an out-of-range float to integer conversion is undefined behaviour).
TEST(Reports, ReaderRefusesIntegerFieldsThatAreNotInRangeIntegers) {
  AuditResult r = make_sample_audit_result();
  r.system.gpus.push_back(GpuInfo{0, "test GPU", 132, "9.0", size_t{1} << 30, size_t{1} << 20});
  const json good = json::parse(render_json_report(r));
  ASSERT_NO_THROW(audit_from_json(good, "the test's report"));
  ASSERT_FALSE(good.at("divergences").empty());
  const std::vector<std::string> fields = {"/schema_version",
                                           "/scenario/seed",
                                           "/scenario/requests/0",
                                           "/scenario/repeat",
                                           "/device/gpus/0/sm_count",
                                           "/device/gpus/0/memory_bytes",
                                           "/backends/0/contexts_run",
                                           "/cases/0/context_index",
                                           "/cases/0/repeat",
                                           "/cases/0/requests/0/request",
                                           "/divergences/0/request",
                                           "/divergences/0/token",
                                           "/divergences/0/first_mismatch/flat_index",
                                           "/divergences/0/first_mismatch/coords/0",
                                           "/summary/cases"};
  for (const std::string& field : fields) {
    const json::json_pointer at(field);
    ASSERT_TRUE(good.contains(at)) << field;
    const std::string key = at.back();
    for (const json& bad : {json(1.21111e89), json(-1.5e300), json(2.5), json("7")}) {
      json edited = good;
      edited[at] = bad;
      try {
        audit_from_json(edited, "r.json");
        ADD_FAILURE() << field << " = " << bad.dump() << " was read";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot read audit report 'r.json'"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  // An integer outside the field's type: an int field given 2^40.
  json edited = good;
  edited["backends"][0]["contexts_run"] = int64_t{1} << 40;
  try {
    audit_from_json(edited, "r.json");
    ADD_FAILURE() << "contexts_run = 2^40 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'contexts_run' must be an integer from 0 to 2147483647"),
              std::string::npos)
        << e.what();
  }
}

TEST(MarkdownReport, SingleAxisGivesOneLineAndCpuOnlyDevice) {
  AuditResult r = make_sample_audit_result();
  // Keep only position=first: the sweep has one varying axis.
  r.scenario.axes = {{"batch", testing::sample_batches()}};
  std::erase_if(r.cases, [&r](const CaseRecord& c) {
    return axis_value_string(context_of(r, c).values[1].second) != "first";
  });
  std::erase_if(r.contexts,
                [](const Context& c) { return axis_value_string(c.values[1].second) != "first"; });
  for (Context& c : r.contexts) c.values.resize(1);
  std::erase_if(r.divergences, [](const Divergence& d) {
    return d.context.find("position=last") != std::string::npos;
  });
  r.system.gpus.clear();
  r.system.device_error = "no CUDA device";
  const std::string md = render_markdown_report(r);
  EXPECT_NE(md.find("Differs from `batch=1` at batch = 5..8, 16.\n"), std::string::npos) << md;
  EXPECT_NE(md.find("**Device** CPU only (no CUDA device)"), std::string::npos) << md;
}

TEST(MarkdownReport, MergesGroupsThatChangeAtTheSameValues) {
  AuditResult r = make_sample_audit_result();
  // cpu-variant now changes at batch 5..8, 16 in both positions.
  std::vector<Divergence> moved;
  for (Divergence d : r.divergences) {
    if (d.backend != "cpu-variant" || d.context.find("position=first") == std::string::npos)
      continue;
    d.context.replace(d.context.find("first"), 5, "last");
    d.context_index += 1;  // the same batch at position=last (writers go by the index)
    moved.push_back(d);
  }
  std::erase_if(r.divergences, [](const Divergence& d) {
    return d.backend == "cpu-variant" && d.context.find("position=last") != std::string::npos;
  });
  r.divergences.insert(r.divergences.end(), moved.begin(), moved.end());
  const std::string md = render_markdown_report(r);
  EXPECT_NE(
      md.find("Differs from `batch=1, position=first` at batch = 5..8, 16 (every position).\n"),
      std::string::npos)
      << md;
}

TEST(MarkdownReport, ValuesPrintAsShortestExactText) {
  AuditResult r = make_sample_audit_result();
  r.divergences[0].first_mismatch.a = static_cast<double>(0.18616834f);  // fp32 value
  r.divergences[0].first_mismatch.b = 0.1;                               // not a float: full double
  const std::string md = render_markdown_report(r);
  EXPECT_NE(md.find("| 0.18616834 | 0.1 |"), std::string::npos) << md;
  r.divergences[0].first_mismatch.b = 0.30000000000000004;
  EXPECT_NE(render_markdown_report(r).find("| 0.18616834 | 0.30000000000000004 |"),
            std::string::npos);
}

// ---------------------------------------------------------------- JUnit

// A minimal well-formedness check: tags balance, attribute values and text hold no raw '<' and
// every '&' starts an entity.
::testing::AssertionResult well_formed_xml(const std::string& xml) {
  std::vector<std::string> stack;
  size_t i = 0;
  if (xml.rfind("<?xml ", 0) == 0) i = xml.find("?>") + 2;
  static const std::regex entity("^&(amp|lt|gt|quot|apos|#[0-9]+);");
  while (i < xml.size()) {
    const char c = xml[i];
    if (c == '&') {
      if (!std::regex_search(xml.substr(i, 8), entity))
        return ::testing::AssertionFailure() << "bare & at " << i;
      ++i;
      continue;
    }
    if (c != '<') {
      if (c == '>') return ::testing::AssertionFailure() << "bare > at " << i;
      ++i;
      continue;
    }
    // Find the tag end, skipping quoted attribute values.
    size_t j = i + 1;
    char quote = 0;
    for (; j < xml.size(); ++j) {
      if (quote) {
        if (xml[j] == quote) quote = 0;
        else if (xml[j] == '<') return ::testing::AssertionFailure() << "< in attribute at " << j;
      } else if (xml[j] == '"' || xml[j] == '\'') {
        quote = xml[j];
      } else if (xml[j] == '>') {
        break;
      }
    }
    if (j >= xml.size()) return ::testing::AssertionFailure() << "unterminated tag at " << i;
    const std::string tag = xml.substr(i + 1, j - i - 1);
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    const std::string name =
        tag.substr(closing ? 1 : 0, tag.find_first_of(" />", 1) - (closing ? 1 : 0));
    if (closing) {
      if (stack.empty() || stack.back() != name)
        return ::testing::AssertionFailure() << "</" << name << "> does not close "
                                             << (stack.empty() ? "anything" : stack.back());
      stack.pop_back();
    } else if (!self_closing) {
      stack.push_back(name);
    }
    i = j + 1;
  }
  if (!stack.empty()) return ::testing::AssertionFailure() << "<" << stack.back() << "> left open";
  return ::testing::AssertionSuccess();
}

TEST(JunitReport, WellFormedWithFailuresExactlyWhereExpectationsFailed) {
  AuditResult r = make_sample_audit_result();
  r.started_at = "2026-12-01T20:46:03Z";
  r.hostname = "gpu-node-7";
  const std::string xml = render_junit_report(r);
  EXPECT_TRUE(well_formed_xml(xml)) << xml;
  // One suite per scenario and backend; one case per backend and context (20 contexts), and the
  // canary's failed expectation in a case of its own.
  EXPECT_EQ(count_of(xml, "<testsuite "), 4u);
  EXPECT_EQ(count_of(xml, "<testcase "), 81u);
  EXPECT_NE(
      xml.find("<testsuites name=\"nvdet audit gemm-batch-sweep\" tests=\"81\" failures=\"2\""),
      std::string::npos)
      << xml;
  for (const char* backend : {"cpu-variant", "cpu-invariant", "cpu-canary", "cpu-reference"}) {
    EXPECT_NE(
        xml.find("<testsuite name=\"gemm-batch-sweep/" + std::string(backend) + "\" tests=\""),
        std::string::npos)
        << backend;
    for (const std::string& batch : testing::sample_batches()) {
      for (const char* position : {"first", "last"}) {
        const std::string name =
            std::string(backend) + "/" + testing::sample_context_id(batch, position);
        EXPECT_NE(xml.find("<testcase name=\"" + name + "\" classname=\"gemm-batch-sweep\""),
                  std::string::npos)
            << name;
      }
    }
  }
  EXPECT_EQ(count_of(xml, " timestamp=\"2026-12-01T20:46:03\" hostname=\"gpu-node-7\">"), 4u);
  // Case times are the cases' measured seconds (both repeats of the context).
  double seconds = 0.0;
  for (const CaseRecord& c : r.cases) {
    if (c.backend == "cpu-invariant" &&
        context_of(r, c).id == testing::sample_context_id("3", "last"))
      seconds += c.seconds;
  }
  EXPECT_NE(
      xml.find("<testcase name=\"cpu-invariant/" + testing::sample_context_id("3", "last") +
               "\" classname=\"gemm-batch-sweep\" time=\"" + fmt::format("{:.6f}", seconds) + "\""),
      std::string::npos)
      << xml;
  // Failures: the invariant backend's diverging context and the canary that never varied; the
  // variant backend that varied and the report-only backend (with a run-to-run divergence) pass.
  auto has_failure = [&](const std::string& name) {
    const size_t at = xml.find("<testcase name=\"" + name + "\"");
    if (at == std::string::npos) return false;
    const size_t end = xml.find("<testcase ", at + 1);
    return xml.substr(at, end - at).find("<failure ") != std::string::npos;
  };
  EXPECT_TRUE(has_failure("cpu-invariant/" + testing::sample_context_id("3", "last")));
  EXPECT_TRUE(has_failure("cpu-canary/expectation"));
  EXPECT_FALSE(has_failure("cpu-invariant/" + testing::sample_context_id("3", "first")));
  EXPECT_FALSE(has_failure("cpu-variant/" + testing::sample_context_id("2", "first")));
  EXPECT_FALSE(has_failure("cpu-reference/" + testing::sample_context_id("4", "first")));
  EXPECT_EQ(count_of(xml, "<failure "), 2u);
  // The first mismatch is in the failure message.
  EXPECT_NE(
      xml.find("message=\"expected invariant, but request 7 differs at batch=3, position=last "
               "from batch=1, position=first: first at token 1 (token=1, col=5): inf vs nan "
               "(0x7f80 vs 0x7fc0, n/a ulp)"),
      std::string::npos)
      << xml;
  // Escaping of the verdict's < & ".
  EXPECT_NE(xml.find("(a &lt; b &amp; &quot;quoted&quot;)"), std::string::npos);
}

TEST(JunitReport, EscapesAndDropsControlCharacters) {
  EXPECT_EQ(xml_escape("a<b>&\"'\x01z\n"), "a&lt;b&gt;&amp;&quot;&apos;z&#10;");
  AuditResult r = make_sample_audit_result();
  r.scenario.name = "we<ird> & \"name\"\x02";
  EXPECT_TRUE(well_formed_xml(render_junit_report(r)));
}

TEST(JunitReport, FailedBackendWithoutDivergencesStillFails) {
  AuditResult r = make_sample_audit_result();
  r.backends[3].passed = false;  // say, a manifest mismatch: no divergence explains it
  r.backends[3].verdict = "manifest mismatch";
  const std::string xml = render_junit_report(r);
  EXPECT_TRUE(well_formed_xml(xml));
  EXPECT_NE(xml.find("<testcase name=\"cpu-reference/expectation\""), std::string::npos);
  EXPECT_EQ(count_of(xml, "<failure "), 3u);  // the two above and this one
}

// ---------------------------------------------------------------- HTML

TEST(HtmlReport, HasSectionsHeatmapCellsAndEscapes) {
  const std::string html = render_html_report(make_sample_audit_result());
  for (const char* id : {"summary", "backends", "heatmaps", "divergences", "bisect",
                         "heatmap-cpu-variant", "heatmap-cpu-invariant", "heatmap-cpu-canary",
                         "heatmap-cpu-reference", "divergence-table"}) {
    EXPECT_NE(html.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  }
  // 10 batches × 2 positions per backend.
  EXPECT_EQ(count_of(html, "<rect class=\"cell\""), 80u);
  // cpu-variant's three results for request 0: the baseline's and two others.
  const size_t variant = html.find("id=\"heatmap-cpu-variant\"");
  const size_t invariant = html.find("id=\"heatmap-cpu-invariant\"");
  const std::string variant_map = html.substr(variant, invariant - variant);
  EXPECT_EQ(count_of(variant_map, "data-class=\"0\""), 13u);
  EXPECT_EQ(count_of(variant_map, "data-class=\"1\""), 2u);  // position=last, batch 2 and 32
  EXPECT_EQ(count_of(variant_map, "data-class=\"2\""), 5u);  // position=first, batch 5..8, 16
  EXPECT_NE(variant_map.find("<title>batch=5, position=first: result #3"), std::string::npos);
  EXPECT_NE(variant_map.find("Request 0 over 20 contexts: 3 distinct results."), std::string::npos);
  // cpu-invariant's map shows request 7 (the request that diverged).
  const std::string invariant_map =
      html.substr(invariant, html.find("id=\"heatmap-cpu-canary\"") - invariant);
  EXPECT_NE(invariant_map.find("Request 7 over 20 contexts: 2 distinct results."),
            std::string::npos);
  // Divergence table rows, and the inf/nan mismatch.
  EXPECT_EQ(count_of(html, "<tr data-backend="), 9u);
  EXPECT_NE(html.find("<td class=\"num\">inf<br><code>0x7f80</code></td><td class=\"num\">nan<br>"
                      "<code>0x7fc0</code></td><td class=\"num\">n/a<br>nan<br>inf</td>"),
            std::string::npos);
  // Escaping: the description's markup is text.
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; friends"), std::string::npos);
  // Self-contained: nothing fetched.
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

TEST(HtmlReport, ThreeVaryingAxesFoldIntoMixedCells) {
  AuditResult r = make_sample_audit_result();
  r.scenario.axes.push_back({"chunk", {"64", "128"}});
  // Duplicate every cpu-variant case with chunk=128 and a different hash for batch=1.
  std::vector<CaseRecord> extra;
  const std::vector<Context> sample = r.contexts;
  for (const Context& x : sample) {
    std::vector<std::pair<std::string, AxisValue>> values = x.values;
    values.push_back({"chunk", int64_t{128}});
    testing::add_sample_context(r, x.index + 20, x.id + "+chunk128", values);  // after the 20
  }
  for (CaseRecord c : r.cases) {
    const Context& x = context_of(r, c);
    const bool batch1_first = x.values[0].second == AxisValue{int64_t{1}} &&
                              x.values[1].second == AxisValue{std::string("first")};
    c.context_index += 20;
    if (c.backend == "cpu-variant" && batch1_first)
      c.requests[0].hash = Hash128{0xabcdefull, 0x1ull};
    extra.push_back(c);
  }
  for (Context& x : r.contexts)
    if (x.index < 20) x.values.push_back({"chunk", int64_t{64}});
  r.cases.insert(r.cases.end(), extra.begin(), extra.end());
  assign_result_classes(r);
  const std::string html = render_html_report(r);
  EXPECT_EQ(count_of(html, "<rect class=\"cell\""), 80u);  // still 10 × 2 per backend
  EXPECT_EQ(count_of(html, "data-class=\"mixed\""), 1u);
  EXPECT_NE(html.find("url(#mixed-cpu-variant)"), std::string::npos);
}

// A sweep over a request-defining axis (kv_len): every group computes a different request, so
// hashes differ between groups by construction. An invariant backend whose every group holds one
// result is drawn in one colour ("same as its group's baseline"), never as distinct results.
AuditResult grouped_result(int kv_lens, int classes_in_first_group) {
  AuditResult r;
  r.scenario.name = "kv";
  r.scenario.op = "attention_decode";
  r.scenario.requests = {0};
  std::vector<std::string> kv, batch = {"1", "2", "4", "8", "16", "32", "64"};
  for (int k = 0; k < kv_lens; ++k) kv.push_back(std::to_string(256 * (k + 1)));
  r.scenario.axes = {{"kv_len", kv}, {"batch", batch}};
  BackendOutcome b;
  b.name = "cuda-invariant";
  b.expect = Expectation::kInvariant;
  r.backends.push_back(b);
  int index = 0;
  for (int k = 0; k < kv_lens; ++k) {
    for (size_t bi = 0; bi < batch.size(); ++bi) {
      CaseRecord c;
      c.backend = b.name;
      c.context_index = index++;
      testing::add_sample_context(
          r, c.context_index, "attention_decode(kv_len=" + kv[k] + ",batch=" + batch[bi] + ")",
          {{"kv_len", int64_t{std::stoll(kv[k])}}, {"batch", int64_t{std::stoll(batch[bi])}}},
          "kv_len=" + kv[k]);
      // Group k's request has its own bits; in the first group, batch i gives result i.
      uint64_t variant = k == 0 ? std::min<uint64_t>(bi, classes_in_first_group - 1) : 0;
      c.requests = {{0, Hash128{0x1000ull + k, variant}, {}, {}}};
      r.cases.push_back(c);
    }
  }
  assign_result_classes(r);
  return r;
}

std::set<std::string> fills_of(const std::string& html, const std::string& data_class) {
  std::set<std::string> fills;
  const std::regex re("data-class=\"" + data_class + "\"[^>]* fill=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    fills.insert((*it)[1]);
  }
  return fills;
}

TEST(HtmlReport, HeatmapComparesEachCellWithItsOwnGroupsBaseline) {
  const std::string html = render_html_report(grouped_result(12, 1));
  EXPECT_EQ(count_of(html, "<rect class=\"cell\""), 84u);
  EXPECT_EQ(count_of(html, "data-class=\"0\""), 84u)
      << html;  // all equal to their group's baseline
  EXPECT_EQ(fills_of(html, "0").size(), 1u);
  EXPECT_NE(html.find("in 12 groups"), std::string::npos);
  EXPECT_NE(html.find("every group gave one result."), std::string::npos);
  EXPECT_NE(html.find("same as its group&#39;s baseline of 1 in group kv_len=512"),
            std::string::npos);
  EXPECT_EQ(html.find("result #"), std::string::npos);
}

TEST(HtmlReport, FewResultsGetTheirOwnColoursManyAreShadedByCount) {
  // 3 results in the first group: three colours, none shared.
  std::string html = render_html_report(grouped_result(3, 3));
  std::set<std::string> all;
  for (const char* c : {"0", "1", "2"}) {
    const auto f = fills_of(html, c);
    ASSERT_EQ(f.size(), 1u) << c;
    all.insert(*f.begin());
  }
  EXPECT_EQ(all.size(), 3u);
  EXPECT_NE(html.find("up to 3 distinct results in one group"), std::string::npos);
  // 7 results: the differing cells are shaded by the group's count (one shade for all six),
  // and each result is listed with its count in the folded table.
  html = render_html_report(grouped_result(3, 7));
  std::set<std::string> differing;
  for (int c = 1; c < 7; ++c) {
    const auto f = fills_of(html, std::to_string(c));
    differing.insert(f.begin(), f.end());
  }
  EXPECT_EQ(differing.size(), 1u);
  EXPECT_EQ(differing.count(*fills_of(html, "0").begin()), 0u);
  EXPECT_EQ(count_of(html, "data-group-distinct=\"7\""), 7u);
  EXPECT_NE(html.find("<details><summary>Results per group (3)</summary>"), std::string::npos);
  EXPECT_NE(html.find("#7 000000000000 (1)"), std::string::npos) << html;
}

// A report (read from a file by nvdet report) may list axes whose product is huge while holding
// few cases: the map is bounded by the cases, and a map still too large is not drawn at all.
TEST(HtmlReport, HeatmapIsBoundedByTheCasesNotTheAxes) {
  AuditResult r = grouped_result(3, 2);
  // 3 x 7 cases, but axes of 40000 values each (1.6e9 cells were drawn from them before).
  for (auto& [name, values] : r.scenario.axes) {
    const std::vector<std::string> held = values;
    values.clear();
    for (int i = 0; i < 40000; ++i) values.push_back("x" + std::to_string(i));
    values.insert(values.begin() + 20000, held.begin(), held.end());
  }
  std::string html = render_html_report(r);
  EXPECT_EQ(count_of(html, "<rect class=\"cell\""), 21u);  // only the values the cases hold
  EXPECT_EQ(html.find(">x1<"), std::string::npos);
  EXPECT_NE(html.find("<details><summary>Results per group (3)</summary>"), std::string::npos);
  // 200 x 200 distinct held values (one case each, on the diagonal): 40000 cells, over the cap.
  AuditResult wide = grouped_result(1, 1);
  wide.scenario.axes = {{"kv_len", {}}, {"batch", {}}};
  wide.cases.clear();
  wide.contexts.clear();
  for (int i = 0; i < 200; ++i) {
    wide.scenario.axes[0].second.push_back(std::to_string(i + 1));
    wide.scenario.axes[1].second.push_back(std::to_string(i + 1));
    CaseRecord c;
    c.backend = "cuda-invariant";
    c.context_index = i;
    testing::add_sample_context(wide, i,
                                "attention_decode(kv_len=" + std::to_string(i + 1) +
                                    ",batch=" + std::to_string(i + 1) + ")",
                                {{"kv_len", int64_t{i + 1}}, {"batch", int64_t{i + 1}}});
    c.requests = {{0, Hash128{0x77ull, static_cast<uint64_t>(i % 3)}, {}, {}}};
    wide.cases.push_back(c);
  }
  assign_result_classes(wide);
  html = render_html_report(wide);
  EXPECT_EQ(count_of(html, "<rect class=\"cell\""), 0u);
  EXPECT_NE(html.find("The map would have 200 x 200 cells, more than the 16384 drawn"),
            std::string::npos);
  EXPECT_NE(html.find("Results per group (1)"), std::string::npos);
}

TEST(HtmlReport, NoSweepDrawsOneCell) {
  AuditResult r = make_sample_audit_result();
  r.scenario.axes.clear();
  r.divergences.clear();
  std::erase_if(r.cases, [](const CaseRecord& c) { return c.context_index != 0; });
  const std::string html = render_html_report(r);
  EXPECT_EQ(count_of(html, "<rect class=\"cell\""), 4u);
  EXPECT_NE(html.find("No divergences"), std::string::npos);
  EXPECT_EQ(html.find("id=\"divergence-table\""), std::string::npos);
}

// ---------------------------------------------------------------- writing

TEST(WriteReports, WritesAllFourAtomically) {
  const AuditResult r = make_sample_audit_result();
  const auto root = testing::make_temp_dir("reports");
  const auto dir = root / "nested" / "reports";
  // A previous report is replaced, not appended to.
  std::filesystem::create_directories(dir);
  testing::write_file(dir / "gemm-batch-sweep.md", "old");
  const auto written = write_reports(r, dir, parse_report_formats("md,json,junit,html"));
  ASSERT_EQ(written.size(), 4u);
  EXPECT_EQ(written[0], dir / "gemm-batch-sweep.md");
  EXPECT_EQ(written[1], dir / "gemm-batch-sweep.json");
  EXPECT_EQ(written[2], dir / "gemm-batch-sweep.junit.xml");
  EXPECT_EQ(written[3], dir / "gemm-batch-sweep.html");
  EXPECT_EQ(testing::read_file(written[0]), render_markdown_report(r));
  EXPECT_EQ(testing::read_file(written[1]), render_json_report(r));
  EXPECT_EQ(testing::read_file(written[2]), render_junit_report(r));
  EXPECT_EQ(testing::read_file(written[3]), render_html_report(r));
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"gemm-batch-sweep.md", "gemm-batch-sweep.json",
                                          "gemm-batch-sweep.junit.xml", "gemm-batch-sweep.html"}));
  std::filesystem::remove_all(root);
}

TEST(WriteReports, RejectsUnwritableDirectoryAsBadInput) {
  const AuditResult r = make_sample_audit_result();
  const auto root = testing::make_temp_dir("reports-bad");
  testing::write_file(root / "file", "x");
  // A folder below a regular file cannot exist, even for root.
  try {
    write_reports(r, root / "file" / "sub", {find_report_writer("json")});
    FAIL() << "wrote below a regular file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("cannot write report '"), std::string::npos) << e.what();
  }
  // The destination is a folder: the rename fails and the temporary file is cleaned up.
  std::filesystem::create_directories(root / "gemm-batch-sweep.json");
  try {
    write_reports(r, root, {find_report_writer("json")});
    FAIL() << "replaced a folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("cannot write report '"), std::string::npos) << e.what();
  }
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
  std::filesystem::remove_all(root);
}

TEST(AtomicFile, WritesExactBytesAndNamesTheFileOnFailure) {
  const auto root = testing::make_temp_dir("atomic");
  const std::string bytes("a\0b\nc", 5);
  write_file_atomic(root / "x.bin", bytes);
  EXPECT_EQ(testing::read_file(root / "x.bin"), bytes);
  write_file_atomic(root / "x.bin", "second");
  EXPECT_EQ(testing::read_file(root / "x.bin"), "second");
  try {
    write_file_atomic(root / "missing" / "m.json", "{}", "manifest");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("cannot write manifest '"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(root);
}

// A GPU bench result with a copy ceiling: every device-timed row is reported as its share of
// the copy rate; without a ceiling (CPU) the column says "-" and the JSON has no copy_gbps.
BenchResult sample_bench(double copy_gbps) {
  BenchResult r;
  r.scenario = "s";
  r.op = "log_softmax";
  r.dtype = "bf16";
  r.baseline = "cuda-vendor-policy";
  r.copy_gbps = copy_gbps;
  if (copy_gbps > 0) r.system.gpus.push_back(GpuInfo{0, "NVIDIA H200", 132, "9.0", 0, 0});
  BenchRow vendor{"c", "cuda-vendor-policy", 100.0, 99.0, 0.1, 2000.0, 1.0, 0.0, true, 104.5};
  BenchRow inv{"c", "cuda-invariant", 125.0, 120.0, 0.08, 1600.0, 1.25, 0.0, true, 131.25};
  if (copy_gbps > 0) {
    vendor.copy_fraction = vendor.gbps / copy_gbps;
    inv.copy_fraction = inv.gbps / copy_gbps;
  }
  r.rows = {vendor, inv};
  return r;
}

TEST(BenchReport, RowsShowTheirShareOfTheCopyRate) {
  const std::string md = render_bench_markdown(sample_bench(4000.0));
  EXPECT_NE(md.find("Copy ceiling: 4000 GB/s"), std::string::npos) << md;
  EXPECT_NE(
      md.find("| c | cuda-vendor-policy | 100 | 99-104.5 | 0.1 | 2000 | 50% | 1.00x | 1.00x |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| c | cuda-invariant | 125 | 120-131.2 | 0.08 | 1600 | 40% | 1.25x | 0.80x |"),
            std::string::npos)
      << md;
  const nlohmann::json j = bench_to_json(sample_bench(4000.0));
  EXPECT_DOUBLE_EQ(j.at("copy_gbps").get<double>(), 4000.0);
  EXPECT_DOUBLE_EQ(j.at("rows").at(1).at("copy_fraction").get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(j.at("rows").at(1).at("max_us").get<double>(), 131.25);
  const std::string csv = render_bench_csv(sample_bench(4000.0));
  EXPECT_EQ(
      csv,
      "scenario,context,backend,median_us,min_us,max_us,samples,spread_pct,tflops,gbps,"
      "copy_fraction,time_ratio,baseline,device_timed,l2,notes\n"
      "s,c,cuda-vendor-policy,100,99,104.5,0,5.5,0.1,2000,0.5,1,cuda-vendor-policy,true,hot,\n"
      "s,c,cuda-invariant,125,120,131.25,0,9,0.08,1600,0.4,1.25,cuda-vendor-policy,true,hot,\n");
  EXPECT_NE(md.find("each run finds what the previous one left in L2 (--l2 hot)"),
            std::string::npos)
      << md;
  EXPECT_EQ(j.at("timing").at("l2"), "hot");
  EXPECT_EQ(j.at("timing").at("launches"), "queued");
  EXPECT_NE(md.find("the runs queued ahead of the GPU, so each time is the device's work alone"),
            std::string::npos)
      << md;
}

// Under --launch-gaps the Markdown header and the JSON's timing say that each run was launched as
// the GPU reached it.
TEST(BenchReport, LaunchGapRunsSaySo) {
  BenchResult r = sample_bench(4000.0);
  r.timing.launch_gaps = true;
  const std::string md = render_bench_markdown(r);
  EXPECT_NE(md.find("each run launched as the GPU reached it, the host's launch cost included "
                    "(--launch-gaps)"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("queued ahead"), std::string::npos) << md;
  EXPECT_EQ(bench_to_json(r).at("timing").at("launches"), "paced");
}

// Under --l2 cold every format says so: the header line, the JSON's timing and each device-timed
// row; a host-timed row (a CPU backend) meets no device L2 and says nothing.
TEST(BenchReport, ColdL2RunsSayTheyAreCold) {
  BenchResult r = sample_bench(4000.0);
  r.timing.flush_l2 = true;
  r.rows[1].device_timed = false;
  const std::string md = render_bench_markdown(r);
  EXPECT_NE(md.find("L2 evicted before each timed run (--l2 cold)"), std::string::npos) << md;
  const nlohmann::json j = bench_to_json(r);
  EXPECT_EQ(j.at("timing").at("l2"), "cold");
  EXPECT_EQ(j.at("rows").at(0).at("l2"), "cold");
  EXPECT_EQ(j.at("rows").at(1).at("l2"), "");
  const std::string csv = render_bench_csv(r);
  EXPECT_NE(csv.find(",cuda-vendor-policy,true,cold,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",cuda-vendor-policy,false,,\n"), std::string::npos) << csv;
}

// Each row's run notes (what the backend chose for the context) in the JSON and CSV; the Markdown
// sums them up per backend: the notes every context shares, then those that differ, with their
// values (a few, then how many), and in how many contexts a key appears where not in all.
TEST(BenchReport, SaysWhatEachBackendRan) {
  BenchResult r = sample_bench(0.0);
  BenchRow vendor = r.rows[0], inv = r.rows[1];
  r.rows.clear();
  for (int i = 0; i < 6; ++i) {
    BenchRow v = vendor, n = inv;
    v.context = n.context = "c" + std::to_string(i);
    v.notes = {{"engine", i < 3 ? "eng_fast" : "eng_slow"}, {"version", "9.1"}};
    n.notes = {{"kernel", "tc"}, {"splits", std::to_string(i + 1)}};
    if (i == 0) n.notes["fold"] = "last, in `order`";
    r.rows.push_back(v);
    r.rows.push_back(n);
  }
  const std::string md = render_bench_markdown(r);
  EXPECT_NE(md.find("### What each backend ran"), std::string::npos) << md;
  EXPECT_NE(md.find("- `cuda-vendor-policy`: version `9.1`; by context: engine (`eng_fast`, "
                    "`eng_slow`)\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- `cuda-invariant`: kernel `tc`; by context: fold (last, in `order`; in 1 of "
                    "6 contexts), splits (`1`, `2`, `3`, `4`, ... 6 values in all)\n"),
            std::string::npos)
      << md;
  const nlohmann::json j = bench_to_json(r);
  EXPECT_EQ(j.at("rows").at(6).at("notes"),
            nlohmann::json({{"engine", "eng_slow"}, {"version", "9.1"}}));
  const std::string csv = render_bench_csv(r);
  EXPECT_NE(csv.find(",hot,engine=eng_fast; version=9.1\n"), std::string::npos) << csv;
  // A value with a comma: the field is quoted.
  EXPECT_NE(csv.find(",hot,\"fold=last, in `order`; kernel=tc; splits=1\"\n"), std::string::npos)
      << csv;
  // Rows without notes: no section.
  EXPECT_EQ(render_bench_markdown(sample_bench(0.0)).find("What each backend ran"),
            std::string::npos);
}

TEST(BenchReport, WithoutACopyCeilingTheShareIsADash) {
  const std::string md = render_bench_markdown(sample_bench(0.0));
  EXPECT_EQ(md.find("Copy ceiling"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2000 | - | 1.00x |"), std::string::npos) << md;
  EXPECT_FALSE(bench_to_json(sample_bench(0.0)).contains("copy_gbps"));
}

}  // namespace
}  // namespace nvdet
