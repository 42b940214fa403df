// Philox4x32-10 against the published known-answer vectors (Random123's kat_vectors), and the
// seeded samplers (lib/model/sampler.h): the filtered distribution against a direct double
// computation, the inverse CDF, and the two samplers' dependence on the batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "lib/core/philox.h"
#include "lib/model/sampler.h"

namespace nvdet {
namespace {

TEST(Philox, PublishedKnownAnswers) {
  // philox4x32 10: counter (4 words), key (2 words) -> output (4 words).
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                          {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, UniformIsInUnitIntervalAndUsesBothWords) {
  EXPECT_EQ(philox_uniform({0, 0, 0, 0}), 0.0);
  EXPECT_LT(philox_uniform({0xffffffffu, 0xffffffffu, 0, 0}), 1.0);
  EXPECT_NE(philox_uniform({0, 0x800u, 0, 0}), 0.0);  // low word's top bits count
}

std::vector<float> seeded_logits(uint32_t seed, int n) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(gen);
  v[3] = v[7];  // a tie, broken by the lower id
  return v;
}

TEST(Sampler, FilteredDistributionMatchesDirectComputation) {
  const std::vector<float> logits = seeded_logits(11, 300);
  SamplingSpec spec;
  spec.temperature = 0.7;
  spec.top_k = 40;
  spec.top_p = 0.8;
  const FilteredDistribution d = filtered_distribution(logits.data(), 300, spec);
  // Directly: order by logit, softmax of the top 40 in long double, nucleus at 0.8.
  std::vector<int> order(300);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  long double z = 0;
  for (int i = 0; i < 40; ++i)
    z += std::exp((static_cast<long double>(logits[order[i]]) - logits[order[0]]) / 0.7L);
  std::vector<long double> p;
  long double cum = 0;
  for (int i = 0; i < 40 && cum < 0.8L; ++i) {
    p.push_back(std::exp((static_cast<long double>(logits[order[i]]) - logits[order[0]]) / 0.7L) /
                z);
    cum += p.back();
  }
  ASSERT_EQ(d.ids.size(), p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(d.ids[i], order[i]);
    EXPECT_NEAR(d.probs[i], static_cast<double>(p[i] / cum), 1e-12);
  }
}

TEST(Sampler, InverseCdfPicksByCumulativeProbability) {
  FilteredDistribution d{{5, 2, 9}, {0.5, 0.3, 0.2}};
  EXPECT_EQ(draw_token(d, 0.0), 5);
  EXPECT_EQ(draw_token(d, 0.49), 5);
  EXPECT_EQ(draw_token(d, 0.51), 2);
  EXPECT_EQ(draw_token(d, 0.79), 2);
  EXPECT_EQ(draw_token(d, 0.81), 9);
  EXPECT_EQ(draw_token(d, 0.9999999), 9);
}

TEST(Sampler, TopKOneIsGreedy) {
  const std::vector<float> logits = seeded_logits(3, 64);
  SamplingSpec spec;
  spec.top_k = 1;
  auto s = make_token_sampler(spec, SamplerKind::kPerRequest);
  const int32_t argmax =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (int32_t step = 0; step < 8; ++step) {
    EXPECT_EQ(s->choose(step, {1}, {logits.data()}, 64), std::vector<int32_t>{argmax});
  }
}

// Rows of a batch (equal logits for every row, so only the draws can tell them apart) and the
// token request 0 draws at each of 32 steps when it sits at `position` among `batch` rows.
std::vector<int32_t> draws_of_request0(SamplerKind kind, int batch, int position) {
  const std::vector<float> logits = seeded_logits(5, 128);
  SamplingSpec spec;
  spec.seed = 99;
  auto s = make_token_sampler(spec, kind);
  std::vector<int32_t> out;
  for (int32_t step = 0; step < 32; ++step) {
    std::vector<uint64_t> ids;
    std::vector<const float*> rows;
    for (int r = 0; r < batch; ++r) {
      ids.push_back(r == position ? 0 : 1000 + r);
      rows.push_back(logits.data());
    }
    out.push_back(s->choose(step, ids, rows, 128)[static_cast<size_t>(position)]);
  }
  return out;
}

TEST(Sampler, PerRequestDrawsIgnoreTheBatchAndBatchStreamsDoNot) {
  const std::vector<int32_t> alone = draws_of_request0(SamplerKind::kPerRequest, 1, 0);
  EXPECT_EQ(draws_of_request0(SamplerKind::kPerRequest, 8, 5), alone);
  EXPECT_EQ(draws_of_request0(SamplerKind::kPerRequest, 3, 2), alone);
  // The draws themselves vary from step to step (a sampler, not an argmax).
  EXPECT_GT(std::set<int32_t>(alone.begin(), alone.end()).size(), 3u);
  const std::vector<int32_t> stream_alone = draws_of_request0(SamplerKind::kBatchStream, 1, 0);
  EXPECT_NE(draws_of_request0(SamplerKind::kBatchStream, 8, 5), stream_alone);
  EXPECT_NE(draws_of_request0(SamplerKind::kBatchStream, 8, 0), stream_alone);
}

}  // namespace
}  // namespace nvdet
