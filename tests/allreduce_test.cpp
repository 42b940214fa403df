// The simulated all-reduce orders (lib/ops/allreduce.h) against sums written out here by hand:
// for each order and a few message sizes, the exact sequence of bf16 adds (each rounded) that the
// order claims, computed independently of the library's chunk arithmetic.
#include "lib/ops/allreduce.h"

#include <gtest/gtest.h>

#include <vector>

#include "lib/core/error.h"
#include "lib/core/tensor.h"
#include "tests/allreduce_fixture.h"

namespace nvdet {
namespace {

// One bf16 add as NCCL's bf16 sum does it: exact float add of two bf16 values, rounded once.
float add(float a, float b) { return round_to_dtype(a + b, DType::kBF16); }

using testing::pointers;

std::vector<HostTensor> seeded_ranks(int n, int64_t count, uint64_t seed) {
  return testing::seeded_ranks(n, count, seed, 100);
}

AllReducePlan plan(AllReduceAlgo algo, int channels, int ranks, int64_t count) {
  return plan_all_reduce(algo, channels, ranks, count * 2);
}

// The bits of element e of the result against an expected float.
void expect_bits(const HostTensor& out, int64_t e, float expected) {
  HostTensor want(DType::kBF16, {1});
  want.set(0, expected);
  ASSERT_EQ(out.bits(e), want.bits(0))
      << "element " << e << ": " << out.get(e) << " vs " << expected;
}

TEST(AllReduceOrder, FixedIsRankOrderAtEveryElement) {
  const auto x = seeded_ranks(4, 300, 11);
  const HostTensor out = simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kFixed, 0, 4, 300));
  for (int64_t e = 0; e < 300; ++e) {
    const float want = add(add(add(x[0].get(e), x[1].get(e)), x[2].get(e)), x[3].get(e));
    expect_bits(out, e, want);
  }
}

TEST(AllReduceOrder, WireDtypeRoundsAfterEveryAdd) {
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 in bf16 and rounds to even (1): added three times
  // in bf16 the small terms vanish; summed in fp32 (1 + 3 * 2^-8, a tie) and rounded once they
  // would give 1 + 2^-6.
  std::vector<HostTensor> x;
  for (const float v : {1.0f, 0x1p-8f, 0x1p-8f, 0x1p-8f}) {
    HostTensor t(DType::kBF16, {1});
    t.set(0, v);
    x.push_back(std::move(t));
  }
  const HostTensor out = simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kFixed, 0, 4, 1));
  EXPECT_EQ(out.get(0), 1.0f);
  EXPECT_EQ(round_to_dtype(1.0f + 3 * 0x1p-8f, DType::kBF16), 1.015625f);
}

TEST(AllReduceOrder, RingOneChannelStartsEachChunkAtTheNextRank) {
  // 64 bf16 elements, 4 ranks, 1 channel: LL (16-byte alignment = 8 elements); one loop of 4
  // chunks of ceil(64 / 4) = 16 elements; chunk j ends on rank j, so its sum starts at rank j+1.
  const auto x = seeded_ranks(4, 64, 12);
  const HostTensor out = simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kRing, 1, 4, 64));
  for (int64_t e = 0; e < 64; ++e) {
    const float a = x[0].get(e), b = x[1].get(e), c = x[2].get(e), d = x[3].get(e);
    float want;
    if (e < 16) want = add(add(add(b, c), d), a);       // chunk 0: 1, 2, 3, 0
    else if (e < 32) want = add(add(add(c, d), a), b);  // chunk 1: 2, 3, 0, 1
    else if (e < 48) want = add(add(add(d, a), b), c);  // chunk 2: 3, 0, 1, 2
    else want = add(add(add(a, b), c), d);              // chunk 3: 0, 1, 2, 3
    expect_bits(out, e, want);
  }
}

TEST(AllReduceOrder, RingTwoChannelsSplitTheMessageFirst) {
  // 100 elements, 4 ranks, 2 channels: chunks of round_up(ceil(100 / 8), 8) = 16 elements;
  // channel 0 holds [0, 64) as chunks j = 0..3, channel 1 [64, 100) as j = 0, 1, 2 (the last
  // one 4 elements long).
  const auto x = seeded_ranks(4, 100, 13);
  const HostTensor out = simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kRing, 2, 4, 100));
  const int chunk_of[7] = {0, 1, 2, 3, 0, 1, 2};  // per 16-element block
  for (int64_t e = 0; e < 100; ++e) {
    const int j = chunk_of[e / 16];
    float s = x[(j + 1) % 4].get(e);
    s = add(s, x[(j + 2) % 4].get(e));
    s = add(s, x[(j + 3) % 4].get(e));
    s = add(s, x[j].get(e));
    expect_bits(out, e, s);
  }
}

TEST(AllReduceOrder, RingLoopsWhenTheMessageOutgrowsTheChunk) {
  // 131082 bf16 elements (256 KiB + 20 B): ring, LL, chunk 32 KiB = 16384 elements. With 1
  // channel and 4 ranks a loop covers 65536 elements: loops at 0 and 65536 with full chunks, and
  // a third loop for the last 10 elements with chunks of round_up(ceil(10 / 4), 8) = 8.
  const int64_t count = 131082;
  const auto x = seeded_ranks(4, count, 14);
  const AllReducePlan p = plan(AllReduceAlgo::kRing, 1, 4, count);
  ASSERT_EQ(p.protocol, AllReduceProtocol::kLL);
  const HostTensor out = simulate_all_reduce(pointers(x), p);
  const auto ring_sum = [&](int64_t e, int j) {
    float s = x[(j + 1) % 4].get(e);
    for (int step = 2; step <= 4; ++step) s = add(s, x[(j + step) % 4].get(e));
    return s;
  };
  expect_bits(out, 0, ring_sum(0, 0));
  expect_bits(out, 16383, ring_sum(16383, 0));
  expect_bits(out, 16384, ring_sum(16384, 1));
  expect_bits(out, 65535, ring_sum(65535, 3));
  expect_bits(out, 65536, ring_sum(65536, 0));
  expect_bits(out, 65536 + 3 * 16384, ring_sum(65536 + 3 * 16384, 3));
  expect_bits(out, 131072, ring_sum(131072, 0));
  expect_bits(out, 131079, ring_sum(131079, 0));
  expect_bits(out, 131080, ring_sum(131080, 1));
  expect_bits(out, 131081, ring_sum(131081, 1));
}

TEST(AllReduceOrder, DoubleBinaryTreeShapes) {
  // 4 ranks. Tree 0: 0 -> 2 -> {1, 3}. Tree 1 (mirrored): 3 -> 1 -> {2, 0}.
  EXPECT_EQ(tree_parent(0, 4, 0), -1);
  EXPECT_EQ(tree_children(0, 4, 0), (std::vector<int>{2}));
  EXPECT_EQ(tree_children(0, 4, 2), (std::vector<int>{1, 3}));
  EXPECT_EQ(tree_parent(0, 4, 3), 2);
  EXPECT_EQ(tree_parent(1, 4, 3), -1);
  EXPECT_EQ(tree_children(1, 4, 3), (std::vector<int>{1}));
  EXPECT_EQ(tree_children(1, 4, 1), (std::vector<int>{2, 0}));
  // 8 ranks, tree 0: 0 -> 4 -> {2 -> {1, 3}, 6 -> {5, 7}}.
  EXPECT_EQ(tree_children(0, 8, 0), (std::vector<int>{4}));
  EXPECT_EQ(tree_children(0, 8, 4), (std::vector<int>{2, 6}));
  EXPECT_EQ(tree_children(0, 8, 6), (std::vector<int>{5, 7}));
  // 3 ranks (odd: tree 1 is tree 0 shifted by one): tree 0 0 -> 2 -> 1; tree 1 1 -> 0 -> 2.
  EXPECT_EQ(tree_children(0, 3, 2), (std::vector<int>{1}));
  EXPECT_EQ(tree_parent(1, 3, 1), -1);
  EXPECT_EQ(tree_children(1, 3, 1), (std::vector<int>{0}));
  EXPECT_EQ(tree_children(1, 3, 0), (std::vector<int>{2}));
  // 14 ranks: 12's children are 10 and 13 (12 + 2 is out of range).
  EXPECT_EQ(tree_children(0, 14, 12), (std::vector<int>{10, 13}));
  EXPECT_EQ(tree_parent(0, 14, 13), 12);
}

TEST(AllReduceOrder, TreeTwoChannelsUseBothTrees) {
  // 64 elements, 4 ranks, 2 channels: chunks of 32; channel 0 (tree 0) [0, 32), channel 1
  // (tree 1) [32, 64). Each node adds its own value, then its children's subtree sums in order.
  const auto x = seeded_ranks(4, 64, 15);
  const HostTensor out = simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kTree, 2, 4, 64));
  for (int64_t e = 0; e < 64; ++e) {
    const float a = x[0].get(e), b = x[1].get(e), c = x[2].get(e), d = x[3].get(e);
    const float want = e < 32 ? add(a, add(add(c, b), d))   // 0 + ((2 + 1) + 3)
                              : add(d, add(add(b, c), a));  // 3 + ((1 + 2) + 0)
    expect_bits(out, e, want);
  }
}

TEST(AllReduceOrder, TreeOddRankCount) {
  const auto x = seeded_ranks(3, 64, 16);
  const HostTensor out = simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kTree, 2, 3, 64));
  for (int64_t e = 0; e < 64; ++e) {
    const float a = x[0].get(e), b = x[1].get(e), c = x[2].get(e);
    const float want = e < 32 ? add(a, add(c, b))   // 0 + (2 + 1)
                              : add(b, add(a, c));  // 1 + (0 + 2)
    expect_bits(out, e, want);
  }
}

TEST(AllReduceOrder, TwoRanksAreOneAddInEveryOrder) {
  const auto x = seeded_ranks(2, 500, 17);
  for (const AllReduceAlgo algo :
       {AllReduceAlgo::kRing, AllReduceAlgo::kTree, AllReduceAlgo::kFixed, AllReduceAlgo::kAuto}) {
    const HostTensor out = simulate_all_reduce(pointers(x), plan(algo, 0, 2, 500));
    for (int64_t e = 0; e < 500; ++e) expect_bits(out, e, add(x[0].get(e), x[1].get(e)));
  }
}

TEST(AllReduceOrder, RingOrderFollowsTheMessageSize) {
  // The same first 512 elements in a message of 512 and of 2048: with 4 ranks the chunk
  // boundaries move, so some of those elements are summed from another starting rank.
  const auto big = seeded_ranks(4, 2048, 18);
  std::vector<HostTensor> small;
  for (const HostTensor& t : big) {
    HostTensor s(DType::kBF16, {512});
    for (int64_t e = 0; e < 512; ++e) s.set(e, t.get(e));
    small.push_back(std::move(s));
  }
  const HostTensor a = simulate_all_reduce(pointers(small), plan(AllReduceAlgo::kRing, 1, 4, 512));
  const HostTensor b = simulate_all_reduce(pointers(big), plan(AllReduceAlgo::kRing, 1, 4, 2048));
  int differ = 0;
  for (int64_t e = 0; e < 512; ++e) differ += a.bits(e) != b.bits(e);
  EXPECT_GT(differ, 0);
  const HostTensor fa =
      simulate_all_reduce(pointers(small), plan(AllReduceAlgo::kFixed, 0, 4, 512));
  const HostTensor fb = simulate_all_reduce(pointers(big), plan(AllReduceAlgo::kFixed, 0, 4, 2048));
  for (int64_t e = 0; e < 512; ++e) ASSERT_EQ(fa.bits(e), fb.bits(e));
}

TEST(AllReducePlanTable, AutoFollowsTheDocumentedTable) {
  struct Row {
    int64_t bytes;
    AllReduceAlgo algo;
    AllReduceProtocol protocol;
    int channels;
  };
  const Row rows[] = {
      {1024, AllReduceAlgo::kTree, AllReduceProtocol::kLL, 1},
      {48 << 10, AllReduceAlgo::kTree, AllReduceProtocol::kLL, 3},
      {100 << 10, AllReduceAlgo::kRing, AllReduceProtocol::kLL, 4},
      {4 << 20, AllReduceAlgo::kRing, AllReduceProtocol::kLL128, 16},
      {1 << 20, AllReduceAlgo::kRing, AllReduceProtocol::kLL128, 4},
      {64 << 20, AllReduceAlgo::kRing, AllReduceProtocol::kSimple, 16},
  };
  for (const Row& r : rows) {
    const AllReducePlan p = plan_all_reduce(AllReduceAlgo::kAuto, 0, 4, r.bytes);
    EXPECT_EQ(p.algo, r.algo) << r.bytes;
    EXPECT_EQ(p.protocol, r.protocol) << r.bytes;
    EXPECT_EQ(p.channels, r.channels) << r.bytes;
  }
  const AllReducePlan pinned = plan_all_reduce(AllReduceAlgo::kRing, 3, 4, 1024);
  EXPECT_EQ(pinned.algo, AllReduceAlgo::kRing);
  EXPECT_EQ(pinned.channels, 3);
  EXPECT_EQ(describe(pinned), "ring, LL, 3 channels");
  EXPECT_EQ(describe(plan_all_reduce(AllReduceAlgo::kFixed, 5, 4, 1024)), "fixed rank order");
  EXPECT_THROW(plan_all_reduce(AllReduceAlgo::kNccl, 0, 4, 1024), Error);
  EXPECT_THROW(plan_all_reduce(AllReduceAlgo::kRing, 65, 4, 1024), Error);
}

TEST(AllReduceOrder, MismatchedRanksAreRefused) {
  auto x = seeded_ranks(2, 8, 19);
  x[1] = HostTensor(DType::kBF16, {9});
  try {
    simulate_all_reduce(pointers(x), plan(AllReduceAlgo::kRing, 1, 2, 8));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
  }
}

}  // namespace
}  // namespace nvdet
