// Sampler/trainer metrics (lib/runner/parity_metrics.h) against an independent computation from
// both logits rows: probabilities normalised in long double (no max shift), KL as
// sum p_s log(p_s / p_t), the k3 estimator from the sampled token's probability ratio.
#include "lib/runner/parity_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace nvdet {
namespace {

constexpr int64_t kVocab = 200;
constexpr int64_t kTokens = 6;

HostTensor seeded_rows(uint32_t seed) {
  HostTensor t(DType::kFP32, {kTokens, kVocab});
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  auto* p = reinterpret_cast<float*>(t.mutable_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(gen);
  return t;
}

std::vector<long double> probs(const float* x) {
  std::vector<long double> p(kVocab);
  long double z = 0;
  for (int64_t v = 0; v < kVocab; ++v) z += p[v] = std::exp(static_cast<long double>(x[v]));
  for (long double& q : p) q /= z;
  return p;
}

TEST(ParityMetrics, EqualRowsGiveZeroAndCountAsBitwise) {
  const HostTensor a = seeded_rows(1);
  const ParityRecord r = parity_metrics(a, a, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(r.tokens, kTokens);
  EXPECT_EQ(r.bitwise_equal_tokens, kTokens);
  EXPECT_EQ(r.first_differing_token, -1);
  EXPECT_EQ(r.mismatch_kl_max, 0.0);
  EXPECT_EQ(r.logprob_abs_diff_max, 0.0);
  EXPECT_EQ(r.k3_mean, 0.0);
}

TEST(ParityMetrics, MatchIndependentLongDoubleComputation) {
  const HostTensor s = seeded_rows(2);
  HostTensor t = s;
  // Perturb rows 2.. of the trainer (rows 0 and 1 stay bitwise equal).
  std::mt19937 gen(7);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  auto* tp = reinterpret_cast<float*>(t.mutable_data());
  for (int64_t i = 2 * kVocab; i < t.numel(); ++i) tp[i] += noise(gen);
  const std::vector<int32_t> tokens = {3, 17, 42, 199, 0, 120};
  const ParityRecord r = parity_metrics(s, t, tokens);
  EXPECT_EQ(r.bitwise_equal_tokens, 2);
  EXPECT_EQ(r.first_differing_token, 2);

  const auto* sp = reinterpret_cast<const float*>(s.data());
  long double kl_sum = 0, kl_max = 0, lp_sum = 0, lp_max = 0, k3_sum = 0;
  for (int64_t i = 0; i < kTokens; ++i) {
    const std::vector<long double> ps = probs(sp + i * kVocab), pt = probs(tp + i * kVocab);
    long double kl = 0;
    for (int64_t v = 0; v < kVocab; ++v) kl += ps[v] * std::log(ps[v] / pt[v]);
    const long double ratio = pt[tokens[i]] / ps[tokens[i]];
    const long double lp = std::fabs(std::log(ratio));
    kl_sum += kl;
    kl_max = std::max(kl_max, kl);
    lp_sum += lp;
    lp_max = std::max(lp_max, lp);
    k3_sum += ratio - 1 - std::log(ratio);
  }
  EXPECT_GT(kl_max, 1e-5L);  // the perturbation is visible
  const auto near = [](double got, long double want) {
    EXPECT_NEAR(got, static_cast<double>(want), 1e-9 * std::max(1.0L, std::fabs(want)) + 1e-15);
  };
  near(r.mismatch_kl_mean, kl_sum / kTokens);
  near(r.mismatch_kl_max, kl_max);
  near(r.logprob_abs_diff_mean, lp_sum / kTokens);
  near(r.logprob_abs_diff_max, lp_max);
  near(r.k3_mean, k3_sum / kTokens);
}

TEST(ParityMetrics, SummaryWeighsRequestsByTokensAndKeepsTheFirstDifference) {
  ParityRecord a, b;
  a.tokens = 4;
  a.bitwise_equal_tokens = 4;
  b.tokens = 12;
  b.bitwise_equal_tokens = 9;
  b.first_differing_token = 5;
  b.mismatch_kl_mean = 0.04;
  b.mismatch_kl_max = 0.3;
  b.first_op = OpDivergence{2, 1, "down"};
  ParitySummary sum;
  add_parity(sum, a, "model(batch=2)", 0);
  add_parity(sum, b, "model(batch=8)", 1);
  EXPECT_EQ(sum.requests, 2);
  EXPECT_EQ(sum.tokens, 16);
  EXPECT_EQ(sum.bitwise_equal_tokens, 13);
  EXPECT_DOUBLE_EQ(sum.mismatch_kl_mean, 0.04 * 12 / 16);
  EXPECT_EQ(sum.mismatch_kl_max, 0.3);
  EXPECT_EQ(sum.first_context, "model(batch=8)");
  EXPECT_EQ(sum.first_request, 1);
  EXPECT_EQ(sum.first_token, 5);
  ASSERT_TRUE(sum.first_op.has_value());
  EXPECT_EQ(sum.first_op->op, "down");
}

TEST(ParityMetrics, RefusesRowsThatDoNotLineUp) {
  const HostTensor a = seeded_rows(3);
  EXPECT_THROW(parity_metrics(a, a, {1, 2}), Error);
}

}  // namespace
}  // namespace nvdet
