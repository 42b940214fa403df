// MoE routing (lib/ops/moe_routing.h) against an independent computation in double: softmax
// scores, a full sort by (score descending, expert ascending), renormalised or not. Seeded
// logits, with rows that hold exact ties.
#include "lib/ops/moe_routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/core/error.h"
#include "lib/core/seeded_random.h"

namespace nvdet {
namespace {

std::vector<float> seeded_logits(int rows, int experts, uint64_t seed) {
  std::vector<float> out(static_cast<size_t>(rows) * experts);
  for (size_t i = 0; i < out.size(); ++i) {
    // Uniform in [-4, 4): spread enough that the top-k weights differ widely.
    out[i] = static_cast<float>((splitmix64(seed * 1000003u + i) >> 11) * 0x1.0p-53 * 8.0 - 4.0);
  }
  return out;
}

struct OracleRoute {
  std::vector<int> expert;
  std::vector<double> weight;
};

// Sorts every expert by its double softmax score (not by the logit, as the code under test does).
OracleRoute oracle(const std::vector<float>& logits, int rows, int experts, int k, bool norm) {
  OracleRoute out;
  for (int r = 0; r < rows; ++r) {
    std::vector<double> p(experts);
    double mx = -INFINITY;
    for (int e = 0; e < experts; ++e) mx = std::max(mx, double{logits[r * experts + e]});
    double sum = 0;
    for (int e = 0; e < experts; ++e) sum += p[e] = std::exp(logits[r * experts + e] - mx);
    for (double& v : p) v /= sum;
    std::vector<int> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double kept = 0;
    for (int j = 0; j < k; ++j) kept += p[order[j]];
    for (int j = 0; j < k; ++j) {
      out.expert.push_back(order[j]);
      out.weight.push_back(norm ? p[order[j]] / kept : p[order[j]]);
    }
  }
  return out;
}

void expect_matches_oracle(const std::vector<float>& logits, int rows, int experts, int k,
                           bool norm) {
  const MoeRoute route = route_tokens(logits, rows, experts, k, norm);
  const OracleRoute want = oracle(logits, rows, experts, k, norm);
  ASSERT_EQ(route.rows, rows);
  ASSERT_EQ(route.top_k, k);
  ASSERT_EQ(route.expert.size(), want.expert.size());
  for (size_t i = 0; i < want.expert.size(); ++i) {
    EXPECT_EQ(route.expert[i], want.expert[i]) << "row " << i / k << " rank " << i % k;
    // One fp32 rounding of a double: within half an ulp of the double value.
    EXPECT_LE(std::abs(route.weight[i] - want.weight[i]), std::abs(want.weight[i]) * 0x1.0p-24)
        << "row " << i / k << " rank " << i % k;
  }
}

TEST(MoeRouting, MatchesADoubleSoftmaxAndSortOnSeededLogits) {
  for (bool norm : {false, true}) {
    expect_matches_oracle(seeded_logits(37, 8, 1), 37, 8, 2, norm);
    expect_matches_oracle(seeded_logits(9, 64, 2), 9, 64, 8, norm);
    expect_matches_oracle(seeded_logits(5, 4, 3), 5, 4, 4, norm);
  }
}

TEST(MoeRouting, EqualScoresGoToTheLowerExpertFirst) {
  // Row 0: experts 1, 3 and 5 tie for first place, 0 and 2 for the next.
  // Row 1: every expert ties. Row 2: ties below the top-k do not matter.
  std::vector<float> logits = {0.5f, 2.0f, 0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 1.0f, 1.0f,
                               1.0f, 1.0f, 1.0f, 3.0f, -2.0f, 0.0f, 0.0f, 0.0f, 2.5f};
  const MoeRoute route = route_tokens(logits, 3, 6, 4, true);
  EXPECT_EQ(route.expert, (std::vector<int32_t>{1, 3, 5, 0, 0, 1, 2, 3, 0, 5, 2, 3}));
  expect_matches_oracle(logits, 3, 6, 4, true);
  expect_matches_oracle(logits, 3, 6, 4, false);
  // Tied experts get bitwise equal weights.
  EXPECT_EQ(route.weight[0], route.weight[1]);
  EXPECT_EQ(route.weight[0], route.weight[2]);
  EXPECT_EQ(route.weight[4], 0.25f);
}

TEST(MoeRouting, NormalisedWeightsSumToOneAndUnnormalisedAreSoftmaxScores) {
  const std::vector<float> logits = seeded_logits(16, 8, 4);
  const MoeRoute norm = route_tokens(logits, 16, 8, 3, true);
  const MoeRoute raw = route_tokens(logits, 16, 8, 3, false);
  EXPECT_EQ(norm.expert, raw.expert);
  for (int r = 0; r < 16; ++r) {
    double sum_norm = 0, sum_raw = 0;
    for (int j = 0; j < 3; ++j) {
      sum_norm += norm.weight[r * 3 + j];
      sum_raw += raw.weight[r * 3 + j];
      if (j > 0) EXPECT_GE(raw.weight[r * 3 + j - 1], raw.weight[r * 3 + j]);
    }
    EXPECT_NEAR(sum_norm, 1.0, 1e-6);
    EXPECT_LT(sum_raw, 1.0);
  }
}

TEST(MoeRouting, CountsAndGroupsRowsPerExpert) {
  const std::vector<float> logits = seeded_logits(23, 8, 5);
  const MoeRoute route = route_tokens(logits, 23, 8, 2, false);
  const std::vector<int32_t> counts = expert_row_counts(route, 8);
  std::vector<int32_t> want(8, 0);
  for (int32_t e : route.expert) ++want[e];
  EXPECT_EQ(counts, want);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), 46);
  const MoeExpertRows grouped = group_rows_by_expert(route, 8);
  ASSERT_EQ(grouped.offsets.size(), 9u);
  EXPECT_EQ(grouped.offsets.back(), 46);
  for (int e = 0; e < 8; ++e) {
    EXPECT_EQ(grouped.offsets[e + 1] - grouped.offsets[e], counts[e]);
    for (int i = grouped.offsets[e]; i < grouped.offsets[e + 1]; ++i) {
      EXPECT_EQ(route.expert[grouped.row[i] * 2 + grouped.rank[i]], e);
      if (i > grouped.offsets[e]) EXPECT_LT(grouped.row[i - 1], grouped.row[i]);
    }
  }
}

TEST(MoeRouting, RefusesBadShapesAndNonFiniteLogits) {
  const std::vector<float> logits = seeded_logits(2, 4, 6);
  EXPECT_THROW(route_tokens(logits, 2, 4, 5, false), Error);
  EXPECT_THROW(route_tokens(logits, 2, 4, 0, false), Error);
  EXPECT_THROW(route_tokens(logits, 3, 4, 2, false), Error);
  std::vector<float> bad = logits;
  bad[5] = NAN;
  try {
    route_tokens(bad, 2, 4, 2, false);
    FAIL() << "a NaN logit was routed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("row 1, expert 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdet
