// Sampler against trainer the way RL frameworks measure it: the metrics at the sampling
// distribution (the sampling temperature, after the sampler's top_k / top_p) beside those at
// temperature 1, checked against an independent computation; a parity expectation with limits;
// the trainer on another backend or tensor-parallel degree than the sampler; a summary per
// (score_batch, score_chunk) in every format; and per-token sampler and trainer logprobs in the
// JSON report and the dumps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "lib/loader/scenario_loader.h"
#include "lib/runner/nvdet_dump.h"
#include "lib/runner/parity_metrics.h"
#include "lib/tensorio/safetensors.h"
#include "tests/scenario_snippets.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kVocab = 300;
constexpr int64_t kTokens = 5;

HostTensor seeded_rows(uint32_t seed, float scale) {
  HostTensor t(DType::kFP32, {kTokens, kVocab});
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  auto* p = reinterpret_cast<float*>(t.mutable_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(gen);
  return t;
}

// The sampler's kept tokens, apart from lib/model/sampler.cpp: sorted by logit (ties: lower id),
// the first top_k, then the shortest prefix whose probability at the temperature reaches top_p.
std::vector<int32_t> kept_tokens(const float* x, const SamplingSpec& spec) {
  std::vector<int32_t> ids(kVocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [x](int32_t a, int32_t b) { return x[a] > x[b]; });
  if (spec.top_k > 0) ids.resize(static_cast<size_t>(spec.top_k));
  long double z = 0;
  for (const int32_t v : ids)
    z += std::exp(static_cast<long double>(x[v] - x[ids[0]]) / spec.temperature);
  long double cum = 0;
  std::vector<int32_t> out;
  for (const int32_t v : ids) {
    out.push_back(v);
    cum += std::exp(static_cast<long double>(x[v] - x[ids[0]]) / spec.temperature) / z;
    if (cum >= spec.top_p) break;
  }
  return out;
}

// log p(token) of logits / temperature over `kept`, in long double without a max shift.
long double logprob(const float* x, const std::vector<int32_t>& kept, int32_t token, double t) {
  long double z = 0;
  for (const int32_t v : kept) z += std::exp(static_cast<long double>(x[v]) / t);
  return static_cast<long double>(x[token]) / t - std::log(z);
}

TEST(ParityAtTheSamplingDistribution, MatchesAnIndependentComputation) {
  SamplingSpec spec;
  spec.enabled = true;
  spec.temperature = 0.7;
  spec.top_k = 40;
  spec.top_p = 0.9;
  const HostTensor s = seeded_rows(3, 2.0f);
  HostTensor t = s;
  std::mt19937 gen(11);
  std::normal_distribution<float> noise(0.0f, 0.02f);
  auto* tp = reinterpret_cast<float*>(t.mutable_data());
  for (int64_t i = kVocab; i < t.numel(); ++i) tp[i] += noise(gen);  // row 0 stays equal
  const auto* sp = reinterpret_cast<const float*>(s.data());
  // The sampled tokens: one the filter keeps in every row (the second most likely).
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < kTokens; ++i) tokens.push_back(kept_tokens(sp + i * kVocab, spec)[1]);
  const ParityRecord r = parity_metrics(s, t, tokens, &spec);
  ASSERT_TRUE(r.sampling.has_value());
  ASSERT_EQ(r.sampling_sampler_logprobs.size(), static_cast<size_t>(kTokens));
  long double kl_sum = 0, lp_max = 0, k3_sum = 0;
  for (int64_t i = 0; i < kTokens; ++i) {
    const float* si = sp + i * kVocab;
    const float* ti = tp + i * kVocab;
    const std::vector<int32_t> kept = kept_tokens(si, spec);
    const long double ls = logprob(si, kept, tokens[i], spec.temperature);
    const long double lt = logprob(ti, kept, tokens[i], spec.temperature);
    EXPECT_NEAR(r.sampling_sampler_logprobs[i], static_cast<double>(ls), 1e-9);
    EXPECT_NEAR(r.sampling_trainer_logprobs[i], static_cast<double>(lt), 1e-9);
    lp_max = std::max(lp_max, std::abs(ls - lt));
    k3_sum += std::expm1(lt - ls) - (lt - ls);
    long double kl = 0;
    for (const int32_t v : kept) {
      const long double a = logprob(si, kept, v, spec.temperature);
      kl += std::exp(a) * (a - logprob(ti, kept, v, spec.temperature));
    }
    kl_sum += kl;
    // At temperature 1 over the whole vocabulary, for comparison.
    std::vector<int32_t> all(kVocab);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_NEAR(r.sampler_logprobs[i], static_cast<double>(logprob(si, all, tokens[i], 1.0)), 1e-9);
  }
  EXPECT_EQ(r.sampling_sampler_logprobs[0], r.sampling_trainer_logprobs[0]);  // the equal row
  EXPECT_NEAR(r.sampling->logprob_abs_diff_max, static_cast<double>(lp_max), 1e-12);
  EXPECT_NEAR(r.sampling->mismatch_kl_mean, static_cast<double>(kl_sum / kTokens), 1e-12);
  EXPECT_NEAR(r.sampling->k3_mean, static_cast<double>(k3_sum / kTokens), 1e-12);
  // The two distributions are not the same measurement.
  EXPECT_NE(r.sampling->mismatch_kl_mean, r.mismatch_kl_mean);
  EXPECT_GT(r.sampling->logprob_abs_diff_max, 0.0);
  // Greedy: no sampling distribution.
  EXPECT_FALSE(parity_metrics(s, t, tokens).sampling.has_value());
}

ParitySummary summary_with(double kl_max, double lp_max, bool sampled) {
  ParitySummary p;
  p.requests = 1;
  p.tokens = 10;
  p.bitwise_equal_tokens = 4;
  p.first_context = "model(score_batch=4)";
  ParityMetrics m;
  m.mismatch_kl_max = kl_max;
  m.logprob_abs_diff_max = lp_max;
  if (sampled) {
    p.sampling = m;
  } else {
    static_cast<ParityMetrics&>(p) = m;
  }
  return p;
}

TEST(ParityTolerance, ALimitPassedFailsTheBackendNamingIt) {
  for (const bool sampled : {false, true}) {
    SCOPED_TRACE(sampled);
    BackendOutcome o;
    o.parity_expect = ParityExpectation::kTolerance;
    o.parity_tolerance.mismatch_kl_max = 1e-4;
    o.parity_tolerance.logprob_abs_diff_max = 1e-2;
    o.parity = summary_with(2e-4, 5e-3, sampled);
    decide_parity_verdict(o);
    EXPECT_FALSE(o.passed);
    EXPECT_NE(
        o.verdict.find("mismatch_kl max 0.0002 above its limit 0.0001 " +
                       std::string(sampled ? "at the sampling distribution" : "at temperature 1")),
        std::string::npos)
        << o.verdict;
    BackendOutcome ok = o;
    ok.passed = true;
    ok.verdict.clear();
    ok.parity = summary_with(5e-5, 5e-3, sampled);
    decide_parity_verdict(ok);
    EXPECT_TRUE(ok.passed) << ok.verdict;
    EXPECT_NE(ok.verdict.find("within its limits"), std::string::npos) << ok.verdict;
  }
}

std::string parity_scenario(const std::string& backends, const std::string& model_extra = "") {
  return "name: rl\nop: model\ndtype: bf16\nmodel: {hidden: 128, layers: 2, heads: 4, kv_heads: "
         "2, intermediate: 512, vocab: 512, prompt_len: 12, num_prompts: 2, max_new_tokens: 6, "
         "sampling: {temperature: 0.8, top_p: 0.9, seed: 3}" +
         model_extra +
         "}\nseed: 4\nrequests: [0]\nsweep: {batch: [2], score_batch: [1, 4], score_chunk: "
         "[whole, 1]}\nbackends: {" +
         backends + "}\n";
}

TEST(ParityTolerance, TheScenarioKeyIsReadAndChecked) {
  const Scenario s = parse_scenario(
      parity_scenario("cpu-variant: {expect: report, parity: {mismatch_kl_max: 1e-4, "
                      "logprob_abs_diff_max: 0.01}}"),
      "m.yaml");
  ASSERT_EQ(s.backends.size(), 1u);
  EXPECT_EQ(s.backends[0].parity, ParityExpectation::kTolerance);
  EXPECT_EQ(*s.backends[0].parity_tolerance.mismatch_kl_max, 1e-4);
  EXPECT_EQ(*s.backends[0].parity_tolerance.logprob_abs_diff_max, 0.01);
  EXPECT_NE(scenario_refusal(parity_scenario("cpu-variant: {expect: report, parity: {kl_max: 1}}"))
                .find("unknown key 'kl_max'"),
            std::string::npos);
  EXPECT_NE(scenario_refusal(
                parity_scenario("cpu-variant: {expect: report, parity: {mismatch_kl_max: -1}}"))
                .find("'mismatch_kl_max' must be at least 0"),
            std::string::npos);
  EXPECT_NE(scenario_refusal(parity_scenario("cpu-variant: {expect: report, parity: {}}"))
                .find("at least one of mismatch_kl_max and logprob_abs_diff_max"),
            std::string::npos);
}

// One audit, every format: the tolerance verdicts, the sampling metrics, the summary per scoring
// pass setting and the per-token logprobs.
class ParityReports : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(make_temp_dir("parity-rl"));
    write_file(*dir_ / "rl.yaml",
               parity_scenario("cpu-variant: {expect: report, parity: {mismatch_kl_max: 1.0e-30}}, "
                               "cpu-invariant: {expect: invariant, parity: {mismatch_kl_max: 1, "
                               "logprob_abs_diff_max: 1}}"));
    result_ = new CommandResult(run_nvdet(
        "audit " + (*dir_ / "rl.yaml").string() + " --report-dir " + (*dir_ / "r").string() +
        " --format json,md,html,junit --dump " + (*dir_ / "dumps").string()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete result_;
  }
  static json report() { return json::parse(read_file(*dir_ / "r" / "rl.json")); }
  static fs::path* dir_;
  static CommandResult* result_;
};
fs::path* ParityReports::dir_ = nullptr;
CommandResult* ParityReports::result_ = nullptr;

TEST_F(ParityReports, ToleranceVerdictsInEveryFormat) {
  // cpu-variant's decode and scoring pass part (mismatch_kl above 1e-30); cpu-invariant's rows
  // are bitwise equal (within any limit).
  ASSERT_EQ(result_->exit_code, 1) << result_->out << result_->err;
  const json r = report();
  const json& variant = r.at("backends").at(0);
  EXPECT_EQ(variant.at("name"), "cpu-variant");
  EXPECT_FALSE(variant.at("passed").get<bool>());
  EXPECT_EQ(variant.at("parity_expect"), "tolerance");
  EXPECT_EQ(variant.at("parity_tolerance").at("mismatch_kl_max"), 1e-30);
  EXPECT_NE(variant.at("verdict").get<std::string>().find("above its limit 1e-30 at the sampling "
                                                          "distribution"),
            std::string::npos);
  EXPECT_TRUE(r.at("backends").at(1).at("passed").get<bool>());
  const std::string junit = read_file(*dir_ / "r" / "rl.junit.xml");
  EXPECT_NE(junit.find("<testcase name=\"cpu-variant/sampler-trainer\""), std::string::npos);
  EXPECT_NE(junit.find("<failure type=\"sampler-trainer\""), std::string::npos);
  EXPECT_NE(result_->out.find("expect within mismatch_kl_max 1e-30"), std::string::npos)
      << result_->out;
}

TEST_F(ParityReports, BothDistributionsAreReportedAndNamed) {
  const json p = report().at("backends").at(0).at("parity");
  ASSERT_TRUE(p.contains("sampling"));
  for (const char* k : {"mismatch_kl_mean", "mismatch_kl_max", "logprob_abs_diff_max",
                        "logprob_abs_diff_mean", "k3_mean"}) {
    EXPECT_TRUE(p.at(k).is_number()) << k;
    EXPECT_TRUE(p.at("sampling").at(k).is_number()) << k;
  }
  EXPECT_NE(result_->out.find("at temperature 1: mismatch_kl mean"), std::string::npos)
      << result_->out;
  EXPECT_NE(result_->out.find("at the sampling distribution (temperature 0.8, top_k 0, top_p "
                              "0.9): mismatch_kl mean"),
            std::string::npos)
      << result_->out;
  const std::string md = read_file(*dir_ / "r" / "rl.md");
  EXPECT_NE(md.find("### At temperature 1"), std::string::npos);
  EXPECT_NE(md.find("### At the sampling distribution (temperature 0.8, top_k 0, top_p 0.9)"),
            std::string::npos);
}

TEST_F(ParityReports, ASummaryPerScoringPassSettingInEveryFormat) {
  const json p = report().at("backends").at(0).at("parity");
  const json& by = p.at("by_scoring");
  ASSERT_EQ(by.size(), 4u);  // score_batch 1, 4 x score_chunk whole, 1
  int64_t tokens = 0, equal = 0;
  std::set<std::string> settings;
  for (const json& g : by) {
    tokens += g.at("tokens").get<int64_t>();
    equal += g.at("bitwise_equal_tokens").get<int64_t>();
    settings.insert(g.at("score_batch").get<std::string>() + "/" +
                    g.at("score_chunk").get<std::string>());
  }
  EXPECT_EQ(tokens, p.at("tokens").get<int64_t>());
  EXPECT_EQ(equal, p.at("bitwise_equal_tokens").get<int64_t>());
  EXPECT_EQ(settings, (std::set<std::string>{"1/whole", "1/1", "4/whole", "4/1"}));
  EXPECT_NE(result_->out.find("       score_batch=4, score_chunk=1: "), std::string::npos)
      << result_->out;
  EXPECT_NE(read_file(*dir_ / "r" / "rl.md").find("### By scoring pass"), std::string::npos);
  const std::string html = read_file(*dir_ / "r" / "rl.html");
  EXPECT_NE(html.find("<h3>By scoring pass</h3>"), std::string::npos);
  // The long per-request table is folded; wide tables scroll in their box.
  EXPECT_NE(html.find("<details><summary>Per request (8 rows, at temperature 1)</summary>"),
            std::string::npos);
  EXPECT_NE(html.find("<div class=\"wide\"><table>"), std::string::npos);
  EXPECT_NE(read_file(*dir_ / "r" / "rl.junit.xml")
                .find("<property name=\"sampler_trainer[score_batch=4,score_chunk=1]\""),
            std::string::npos);
}

TEST_F(ParityReports, PerTokenLogprobsInTheJsonAndTheDumps) {
  const json r = report();
  int checked = 0;
  for (const json& c : r.at("cases")) {
    for (const json& q : c.at("requests")) {
      const json& p = q.at("parity");
      ASSERT_EQ(p.at("logprobs").at("sampler").size(), 6u);
      ASSERT_EQ(p.at("logprobs").at("trainer").size(), 6u);
      ASSERT_EQ(p.at("sampling").at("logprobs").at("sampler").size(), 6u);
      // The dump of the case holds the same numbers, as F64.
      const int index = c.at("context_index").get<int>();
      std::string id;
      for (const json& x : r.at("contexts"))
        if (x.at("index") == index) id = x.at("id");
      const SafetensorsFile dump = SafetensorsFile::open(
          dump_file_path(*dir_ / "dumps", "rl", c.at("backend"), index, id, c.at("repeat")));
      for (const auto& [name, side] :
           {std::pair{".sampler_logprobs", "sampler"}, std::pair{".trainer_logprobs", "trainer"}}) {
        const AnyTensor t = dump.read_any("request-0" + std::string(name));
        ASSERT_EQ(t.type, ElemType::kF64);
        ASSERT_EQ(t.shape, (std::vector<int64_t>{6}));
        std::vector<double> v(6);
        std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
        for (size_t i = 0; i < 6; ++i)
          EXPECT_EQ(v[i], p.at("logprobs").at(side).at(i).get<double>());
      }
      EXPECT_TRUE(dump.contains("request-0.sampling.trainer_logprobs"));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8);  // 4 contexts x 2 backends
}

// The report renders again from its JSON, byte for byte in every format.
TEST_F(ParityReports, NvdetReportRendersTheSameBytes) {
  const CommandResult again =
      run_nvdet("report " + (*dir_ / "r" / "rl.json").string() + " --report-dir " +
                (*dir_ / "again").string() + " --format json,md,html,junit");
  EXPECT_EQ(again.exit_code, 1) << again.err;
  for (const char* ext : {".json", ".md", ".html", ".junit.xml"}) {
    EXPECT_EQ(read_file(*dir_ / "again" / ("rl" + std::string(ext))),
              read_file(*dir_ / "r" / ("rl" + std::string(ext))))
        << ext;
  }
}

// The trainer on another backend or tp than the sampler: its logits are another computation's.
TEST(ParityTrainer, AnotherBackendOrTpScoresTheDecode) {
  const fs::path dir = make_temp_dir("parity-trainer");
  const auto audit = [&](const std::string& trainer) {
    write_file(dir / "t.yaml",
               parity_scenario("cpu-invariant: {expect: invariant, parity: report}", trainer));
    const CommandResult r = run_nvdet("audit " + (dir / "t.yaml").string() + " -q --report-dir " +
                                      (dir / "r").string() + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(read_file(dir / "r" / "rl.json"));
  };
  const json self = audit("");
  const json& same = self.at("backends").at(0).at("parity");
  EXPECT_EQ(same.at("bitwise_equal_tokens"), same.at("tokens"));  // cpu-invariant: bitwise
  EXPECT_EQ(audit(", trainer: {backend: cpu-invariant}").at("backends").at(0).at("parity"), same);
  for (const std::string trainer : {", trainer: {backend: cpu-reference}", ", trainer: {tp: 2}"}) {
    SCOPED_TRACE(trainer);
    const json r = audit(trainer);
    const json& p = r.at("backends").at(0).at("parity");
    EXPECT_LT(p.at("bitwise_equal_tokens").get<int64_t>(), p.at("tokens").get<int64_t>());
    EXPECT_GT(p.at("mismatch_kl_max").get<double>(), 0.0);
    // The cases say who scored, and the fingerprint records it.
    const std::string note = r.at("cases").at(0).at("notes").at("score.trainer");
    EXPECT_EQ(note, trainer.find("cpu-reference") != std::string::npos ? "cpu-reference at tp 1"
                                                                       : "cpu-invariant at tp 2");
    EXPECT_TRUE(r.at("fingerprint").contains("model.trainer.backend"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvdet::testing
