// Sampler against trainer on the CPU backends (scenarios/model-parity-cpu.yaml): cpu-invariant
// and cpu-portable give bitwise parity between decode and scoring pass under every score_batch and
// score_chunk, cpu-variant does not (mismatch_kl above 0); one backend's metrics are checked
// against an independent long-double computation from both logits rows; a backend expected
// bitwise parity that does not give it fails the audit with exit 1, and every report format shows
// the section (nvdet report re-renders it byte for byte). scenarios/model-sampling-cpu.yaml: the
// per-request sampler holds across batch and position, the batch-stream sampler diverges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "lib/backend/backend.h"
#include "lib/loader/scenario_loader.h"
#include "lib/model/model_runner.h"
#include "lib/runner/audit.h"
#include "lib/runner/bisect.h"
#include "lib/runner/parity_metrics.h"
#include "lib/scenario/context.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using nvdet::testing::source_dir;

const BackendOutcome& outcome(const AuditResult& r, const std::string& name) {
  for (const BackendOutcome& o : r.backends)
    if (o.name == name) return o;
  throw std::runtime_error("no backend " + name);
}

Scenario shipped(const char* name) {
  return load_scenario((source_dir() / "scenarios" / name).string());
}

TEST(ParityCpu, InvariantBackendsGiveBitwiseParityAndVariantDoesNot) {
  const AuditResult r = run_audit(shipped("model-parity-cpu.yaml"), AuditOptions{});
  for (const char* name : {"cpu-invariant", "cpu-portable"}) {
    const BackendOutcome& o = outcome(r, name);
    ASSERT_TRUE(o.parity.has_value()) << name;
    EXPECT_EQ(o.parity_expect, ParityExpectation::kBitwise);
    EXPECT_GT(o.parity->tokens, 0);
    EXPECT_EQ(o.parity->bitwise_equal_tokens, o.parity->tokens) << name << ": " << o.verdict;
    EXPECT_EQ(o.parity->mismatch_kl_max, 0.0);
    EXPECT_TRUE(o.passed) << o.verdict;
  }
  const BackendOutcome& var = outcome(r, "cpu-variant");
  ASSERT_TRUE(var.parity.has_value());
  EXPECT_GT(var.parity->mismatch_kl_max, 0.0);
  EXPECT_LT(var.parity->bitwise_equal_tokens, var.parity->tokens);
  EXPECT_FALSE(var.parity->first_context.empty());
  ASSERT_TRUE(var.parity->first_op.has_value());
  EXPECT_TRUE(var.passed) << var.verdict;  // parity: report
  EXPECT_TRUE(r.summary.passed);
  // Every case of every backend scored each probed request: 12 tokens each.
  for (const CaseRecord& c : r.cases) {
    for (const RequestRecord& q : c.requests) {
      ASSERT_TRUE(q.parity.has_value()) << context_of(r, c).id;
      EXPECT_EQ(q.parity->tokens, 12);
    }
  }
}

// Past one attention split (600-token prompts: every decoded token merges the splits [0, 512)
// and [512, kv_len)): decode and scoring pass still part nowhere, for the whole pass and for
// verify passes of 5 tokens (the prefill_chunk=whole half of the scenario, to keep it short).
TEST(ParityCpu, InvariantBackendsHoldBitwiseParityPastOneSplit) {
  AuditOptions options;
  options.context_filter = "prefill_chunk=whole";
  const AuditResult r = run_audit(shipped("model-parity-long-cpu.yaml"), options);
  for (const char* name : {"cpu-invariant", "cpu-portable"}) {
    const BackendOutcome& o = outcome(r, name);
    ASSERT_TRUE(o.parity.has_value()) << name;
    EXPECT_EQ(o.parity->tokens, 32) << name;  // 4 contexts x 8 generated tokens
    EXPECT_EQ(o.parity->bitwise_equal_tokens, o.parity->tokens) << name << ": " << o.verdict;
    EXPECT_TRUE(o.passed) << o.verdict;
  }
}

// The scoring pass and the metrics from the logits themselves, for one context of cpu-variant.
TEST(ParityCpu, MetricsMatchAnIndependentComputationFromBothRows) {
  const Scenario s = shipped("model-parity-cpu.yaml");
  const ModelRunner runner(s);
  const std::vector<Context> contexts = expand_contexts(s);
  // Decode at batch 8 against one whole pass of 4 packed sequences: GEMMs of 8 rows against 96.
  const auto it = std::find_if(contexts.begin(), contexts.end(), [](const Context& x) {
    return x.id.find("batch=8,prefill_chunk=whole,score_batch=4,score_chunk=whole") !=
           std::string::npos;
  });
  ASSERT_NE(it, contexts.end());
  const Context& c = *it;
  std::unique_ptr<Backend> backend = make_backend("cpu-variant");
  const std::vector<SequenceResult> decoded = runner.run(*backend, c, {0}, nullptr, nullptr);
  const std::vector<HostTensor> scored =
      runner.score(*backend, c, {0}, {decoded[0].completion}, nullptr, nullptr);
  const HostTensor& a = decoded[0].logits;
  const HostTensor& b = scored[0];
  ASSERT_EQ(a.shape(), b.shape());
  const ParityRecord r = parity_metrics(a, b, decoded[0].completion);
  const int64_t vocab = a.dim(1);
  long double kl_max = 0, kl_sum = 0, lp_max = 0;
  int64_t equal = 0;
  for (int64_t t = 0; t < a.dim(0); ++t) {
    long double zs = 0, zt = 0;
    std::vector<long double> ps(vocab), pt(vocab);
    bool same = true;
    for (int64_t v = 0; v < vocab; ++v) {
      const float x = static_cast<float>(a.get(t * vocab + v)),
                  y = static_cast<float>(b.get(t * vocab + v));
      same = same && std::memcmp(&x, &y, sizeof x) == 0;
      zs += ps[v] = std::exp(static_cast<long double>(x));
      zt += pt[v] = std::exp(static_cast<long double>(y));
    }
    equal += same;
    long double kl = 0;
    for (int64_t v = 0; v < vocab; ++v) kl += ps[v] / zs * std::log((ps[v] / zs) / (pt[v] / zt));
    const int32_t tok = decoded[0].completion[static_cast<size_t>(t)];
    lp_max = std::max(lp_max, std::fabs(std::log((ps[tok] / zs) / (pt[tok] / zt))));
    kl_max = std::max(kl_max, kl);
    kl_sum += kl;
  }
  EXPECT_EQ(r.bitwise_equal_tokens, equal);
  EXPECT_LT(equal, a.dim(0));  // this context does differ
  EXPECT_NEAR(r.mismatch_kl_max, static_cast<double>(kl_max),
              1e-9 * static_cast<double>(kl_max) + 1e-15);
  EXPECT_NEAR(r.mismatch_kl_mean, static_cast<double>(kl_sum / a.dim(0)),
              1e-9 * static_cast<double>(kl_max) + 1e-15);
  EXPECT_NEAR(r.logprob_abs_diff_max, static_cast<double>(lp_max),
              1e-9 * static_cast<double>(lp_max) + 1e-15);
}

// model-parity-cpu.yaml's decoder at one context where cpu-variant's decode and scoring pass part
// (a 24-row prefill against a 4-sequence pass), expected bitwise parity: exit 1 in every format.
constexpr const char* kFailing = R"(name: parity-fail
op: model
dtype: bf16
model: {hidden: 128, layers: 2, heads: 4, kv_heads: 2, intermediate: 512, vocab: 512,
        prompt_len: 12, num_prompts: 4, max_new_tokens: 12, score_batch: 4}
seed: 4
requests: [0]
sweep:
  batch: [2]
backends:
  cpu-variant: {expect: report, parity: bitwise}
  cpu-invariant: {expect: invariant, parity: bitwise}
)";

TEST(ParityCpu, BitwiseExpectationFailsWithExit1InEveryFormat) {
  const auto dir = nvdet::testing::make_temp_dir("parity-fail");
  nvdet::testing::write_file(dir / "parity-fail.yaml", kFailing);
  const auto res =
      nvdet::testing::run_nvdet("audit " + (dir / "parity-fail.yaml").string() + " --report-dir " +
                                (dir / "out").string() + " --format md,json,junit,html");
  EXPECT_EQ(res.exit_code, 1) << res.out << res.err;
  EXPECT_NE(res.out.find("FAIL cpu-variant"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("PASS cpu-invariant"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("expected bitwise sampler/trainer parity"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("sampler/trainer (expect bitwise)"), std::string::npos) << res.out;
  const std::string md = nvdet::testing::read_file(dir / "out" / "parity-fail.md");
  const std::string html = nvdet::testing::read_file(dir / "out" / "parity-fail.html");
  const std::string junit = nvdet::testing::read_file(dir / "out" / "parity-fail.junit.xml");
  const std::string json = nvdet::testing::read_file(dir / "out" / "parity-fail.json");
  EXPECT_NE(md.find("## Sampler against trainer"), std::string::npos);
  EXPECT_NE(md.find("mismatch_kl max"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"parity\">"), std::string::npos);
  EXPECT_NE(junit.find("cpu-variant/sampler-trainer"), std::string::npos);
  EXPECT_NE(junit.find("expected bitwise sampler/trainer parity"), std::string::npos);
  EXPECT_NE(json.find("\"mismatch_kl_max\""), std::string::npos);
  EXPECT_NE(json.find("\"parity_expect\": \"bitwise\""), std::string::npos);
  // nvdet report re-renders the section from the JSON, byte for byte.
  const auto again = nvdet::testing::run_nvdet(
      "report " + (dir / "out" / "parity-fail.json").string() + " --report-dir " +
      (dir / "again").string() + " --format md,json,junit,html");
  EXPECT_EQ(again.exit_code, 1) << again.err;
  for (const char* ext : {".md", ".json", ".junit.xml", ".html"}) {
    EXPECT_EQ(nvdet::testing::read_file(dir / "again" / (std::string("parity-fail") + ext)),
              nvdet::testing::read_file(dir / "out" / (std::string("parity-fail") + ext)))
        << ext;
  }
}

// The same sweep in two shards, merged by nvdet report: the parity summary is folded again from
// the owned cases' per-request records and the bitwise expectation fails the merge as it fails the
// whole run (exit 1, the same JSON but for timings). The sweep has one context, so one shard owns
// nothing and carries no parity summary of its own.
TEST(ParityCpu, MergedShardsFailTheBitwiseExpectationAsTheWholeRunDoes) {
  const auto dir = nvdet::testing::make_temp_dir("parity-shards");
  nvdet::testing::write_file(dir / "parity-fail.yaml", kFailing);
  const std::string yaml = (dir / "parity-fail.yaml").string();
  const auto whole = nvdet::testing::run_nvdet("audit " + yaml + " -q --format json --report-dir " +
                                               (dir / "whole").string());
  ASSERT_EQ(whole.exit_code, 1) << whole.err;
  std::string shards;
  for (int i = 1; i <= 2; ++i) {
    const auto s = nvdet::testing::run_nvdet("audit " + yaml + " -q --format json --shard " +
                                             std::to_string(i) + "/2 --report-dir " +
                                             (dir / "shards").string());
    ASSERT_TRUE(s.exit_code == 0 || s.exit_code == 1) << s.err;
    shards +=
        " " + (dir / "shards" / ("parity-fail.shard-" + std::to_string(i) + "-of-2.json")).string();
  }
  const auto merged = nvdet::testing::run_nvdet("report" + shards + " --format json --report-dir " +
                                                (dir / "merged").string());
  EXPECT_EQ(merged.exit_code, 1) << merged.err;
  auto json_of = [&dir](const char* folder) {
    std::string text = nvdet::testing::read_file(dir / folder / "parity-fail.json");
    // Timings differ between runs; everything else must not.
    for (const char* key : {"\"seconds\": ", "\"started_at\": "}) {
      for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
        text.erase(at, text.find_first_of(",\n}", at + std::strlen(key)) - at);
      }
    }
    return text;
  };
  const std::string a = json_of("whole"), b = json_of("merged");
  EXPECT_EQ(a, b);
  EXPECT_NE(b.find("expected bitwise sampler/trainer parity, but"), std::string::npos) << b;
  EXPECT_NE(b.find("\"parity_expect\": \"bitwise\""), std::string::npos) << b;
}

TEST(ParityCpu, ParityNeedsAScoringPass) {
  std::string text = kFailing;
  const std::string key = ", score_batch: 4";
  text.replace(text.find(key), key.size(), "");
  try {
    parse_scenario(text, "p.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'parity' compares the decode with the scoring pass"),
              std::string::npos)
        << e.what();
  }
}

// nvdet bisect --scoring: where a request's decode and its scoring pass part, layer by layer.
TEST(ParityCpu, BisectNamesWhereDecodeAndScoringPassParted) {
  const Scenario s = shipped("model-parity-cpu.yaml");
  BisectOptions o;
  o.scoring = true;
  o.context = {{"score_batch", "4"}};
  o.backend = "cpu-variant";
  const BisectResult r = run_bisect(s, o);
  EXPECT_TRUE(r.diverged);
  ASSERT_TRUE(r.first_op.has_value());
  EXPECT_EQ(r.first_op->step, 0);
  EXPECT_EQ(r.first_op->layer, 0);
  EXPECT_EQ(r.first_op->op, "qkv");  // the audit's first op apart, found from hashes alone
  EXPECT_EQ(r.growth.size(), 12u);   // one row per generated token
  EXPECT_EQ(r.completion_a.size(), 12u);
  o.backend = "cpu-invariant";
  const BisectResult same = run_bisect(s, o);
  EXPECT_FALSE(same.diverged);
  EXPECT_FALSE(same.first_op.has_value());
  EXPECT_EQ(same.completion_a, same.completion_b);  // the trainer's argmax is the decode's token
  o.against = {{"batch", "8"}};
  EXPECT_THROW(run_bisect(s, o), Error);
}

TEST(SamplingCpu, PerRequestHoldsAndBatchStreamDiverges) {
  const AuditResult r = run_audit(shipped("model-sampling-cpu.yaml"), AuditOptions{});
  std::map<std::string, std::map<int64_t, std::set<std::vector<int32_t>>>> by_group;
  for (const CaseRecord& c : r.cases) {
    for (const RequestRecord& q : c.requests)
      by_group[context_of(r, c).group][q.request].insert(q.completion);
  }
  ASSERT_EQ(by_group.size(), 2u);
  for (const auto& [request, set] : by_group.at("sampler=per_request")) {
    EXPECT_EQ(set.size(), 1u) << "request " << request;
  }
  size_t most = 0;
  for (const auto& [request, set] : by_group.at("sampler=batch_stream"))
    most = std::max(most, set.size());
  EXPECT_GT(most, 1u);
  // Sampling, not argmax: the per-request completion is not the greedy one.
  Scenario greedy = shipped("model-sampling-cpu.yaml");
  greedy.model.sampling.enabled = false;
  greedy.sweep.erase(greedy.sweep.begin());
  const ModelRunner runner(greedy);
  std::unique_ptr<Backend> backend = make_backend("cpu-invariant");
  const std::vector<SequenceResult> g =
      runner.run(*backend, expand_contexts(greedy).front(), {0}, nullptr, nullptr);
  EXPECT_NE(*by_group.at("sampler=per_request").at(0).begin(), g[0].completion);
}

}  // namespace
}  // namespace nvdet
