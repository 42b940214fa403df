// Tensor-parallel GEMMs simulated on one device (lib/workloads/tp_gemm.h): the TP-invariant
// K-chunk plan gives cpu-invariant's unsharded bits at every tp and batch; the wire-dtype plans
// are each rank's GEMM followed by the simulated all-reduce; column splits change no bits; a
// batch-dependent all-reduce makes cpu-variant and cpu-invariant diverge across the batch.
#include "lib/workloads/tp_gemm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "tests/tp_gemm_fixture.h"

namespace nvdet {
namespace {

using testing::tp_options;

HostTensor seeded(std::vector<int64_t> shape, uint64_t stream, float stddev) {
  return testing::seeded_bf16(std::move(shape), 2025, stream, stddev);
}

HostTensor unsharded(Backend& b, const HostTensor& x, const HostTensor& w, const HostTensor* bias) {
  GemmArgs g;
  g.a = &x;
  g.w = &w;
  g.bias = bias;
  g.out_dtype = DType::kBF16;
  return b.run(g, nullptr);
}

void expect_same_bits(const HostTensor& a, const HostTensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.bits(i), b.bits(i)) << what << " element " << i;
}

constexpr int64_t kK = 2048, kN = 40;

TEST(TpGemm, KChunkPlanGivesTheUnshardedBitsAtEveryTpAndBatch) {
  auto backend = make_backend("cpu-invariant");
  const HostTensor w = seeded({kN, kK}, 1, 1.0f / std::sqrt(float(kK)));
  const HostTensor bias = seeded({kN}, 2, 0.5f);
  const HostTensor x = seeded({9, kK}, 3, 1.0f);
  const HostTensor want = unsharded(*backend, x, w, &bias);
  for (const int tp : {1, 2, 4, 8}) {
    const RowParallelLinear linear(w, &bias, tp);
    RunNotes notes;
    const HostTensor got = linear.run(*backend, linear.split(x), DType::kBF16,
                                      tp_options(tp, AllReduceAlgo::kFixed), &notes);
    expect_same_bits(got, want, "tp " + std::to_string(tp));
    if (tp > 1) EXPECT_NE(notes["allreduce"].find("K-chunk order"), std::string::npos);
    // Batch: row 0 alone gives row 0's bits of the batch of 9.
    const HostTensor x0 = x.slice_rows(0, 1);
    const HostTensor alone = linear.run(*backend, linear.split(x0), DType::kBF16,
                                        tp_options(tp, AllReduceAlgo::kFixed), nullptr);
    expect_same_bits(alone, want.slice_rows(0, 1), "tp " + std::to_string(tp) + " alone");
  }
}

TEST(TpGemm, KChunkPlanNeedsShardsOnChunkBoundaries) {
  auto backend = make_backend("cpu-invariant");
  const HostTensor w = seeded({8, 512}, 1, 0.05f);
  const HostTensor x = seeded({2, 512}, 3, 1.0f);
  const RowParallelLinear linear(w, nullptr, 4);  // 128-wide shards, chunks are 256
  try {
    linear.run(*backend, linear.split(x), DType::kBF16, tp_options(4, AllReduceAlgo::kFixed),
               nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("multiple of its 256-wide K chunks"), std::string::npos);
  }
  EXPECT_THROW(RowParallelLinear(w, nullptr, 3), Error);  // 512 % 3 != 0
}

TEST(TpGemm, WirePlanIsEachRanksGemmThenTheAllReduce) {
  // Rank r's partial is the GEMM of its K slice (rank 0 with the bias), in bf16; the result is
  // the simulated all-reduce of those partials, and stays near the double-precision product.
  auto backend = make_backend("cpu-variant");
  auto reference = make_backend("cpu-reference");
  const HostTensor w = seeded({kN, kK}, 1, 1.0f / std::sqrt(float(kK)));
  const HostTensor bias = seeded({kN}, 2, 0.5f);
  const HostTensor x = seeded({6, kK}, 3, 1.0f);
  const int tp = 4;
  const RowParallelLinear linear(w, &bias, tp);
  const auto shards = linear.split(x);
  RunNotes notes;
  const HostTensor got =
      linear.run(*backend, shards, DType::kBF16, tp_options(tp, AllReduceAlgo::kRing, 2), &notes);
  std::vector<HostTensor> partials;
  for (int r = 0; r < tp; ++r) {
    const HostTensor wr = column_slice(w, r * (kK / tp), kK / tp);
    partials.push_back(unsharded(*backend, shards[r], wr, r == 0 ? &bias : nullptr));
  }
  std::vector<const HostTensor*> p;
  for (const HostTensor& t : partials) p.push_back(&t);
  const HostTensor want =
      simulate_all_reduce(p, plan_all_reduce(AllReduceAlgo::kRing, 2, tp, 6 * kN * 2));
  expect_same_bits(got, want, "ring tp 4");
  EXPECT_EQ(notes["allreduce"], "ring, LL, 2 channels (bf16 wire, requested ring)");
  // Four bf16 roundings of partials plus three of sums: within 1e-1 of the exact product.
  const HostTensor exact = unsharded(*reference, x, w, &bias);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.get(i), exact.get(i), 1e-1) << i;
}

TEST(TpGemm, ColumnSplitChangesNoBits) {
  for (const char* name : {"cpu-variant", "cpu-invariant"}) {
    auto backend = make_backend(name);
    const HostTensor w = seeded({48, 384}, 1, 0.05f);
    const HostTensor bias = seeded({48}, 2, 0.5f);
    const HostTensor x = seeded({5, 384}, 3, 1.0f);
    const HostTensor want = unsharded(*backend, x, w, &bias);
    for (const int tp : {2, 4, 8}) {
      const ColumnParallelLinear linear(w, &bias, tp);
      expect_same_bits(linear.gather(linear.run(*backend, x, DType::kBF16, nullptr)), want,
                       std::string(name) + " tp " + std::to_string(tp));
    }
    // Grouped (fused q/k/v style): groups 24, 16, 8 each split over 2 ranks.
    const ColumnParallelLinear fused(w, &bias, 2, {24, 16, 8});
    const auto per_rank = fused.run(*backend, x, DType::kBF16, nullptr);
    expect_same_bits(fused.gather(per_rank), want, std::string(name) + " fused");
    // Rank 1 holds rows 12..23, 32..39 and 44..47 of w.
    const HostTensor rank1 = per_rank[1];
    for (int64_t r = 0; r < 5; ++r) {
      EXPECT_EQ(rank1.bits(r * 24 + 0), want.bits(r * 48 + 12));
      EXPECT_EQ(rank1.bits(r * 24 + 12), want.bits(r * 48 + 32));
      EXPECT_EQ(rank1.bits(r * 24 + 20), want.bits(r * 48 + 44));
    }
  }
}

// One request's row at the last position of a batch of m at tp 4, for m = 1 .. 200 (messages of
// 512 B to 100 KiB: auto takes tree with 1 then 2 channels, then ring from 64 KiB, m = 128), so
// the row's elements fall in other chunks and trees as the batch grows. (At the first position
// they would stay in chunk 0, and for 4 ranks tree 0's order equals ring chunk 0's.)
int distinct_row0_results(const char* backend_name, AllReduceAlgo algo) {
  auto backend = make_backend(backend_name);
  const HostTensor w = seeded({256, 1024}, 1, 1.0f / 32);
  const HostTensor x = seeded({200, 1024}, 3, 1.0f);
  const RowParallelLinear linear(w, nullptr, 4);
  std::vector<HostTensor> rows;
  for (const int m : {1, 2, 3, 8, 17, 64, 128, 200}) {
    const HostTensor xm = x.slice_rows(200 - m, m);
    rows.push_back(
        linear.run(*backend, linear.split(xm), DType::kBF16, tp_options(4, algo), nullptr)
            .slice_rows(m - 1, 1));
  }
  int distinct = 1;
  for (size_t i = 1; i < rows.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) {
      bool same = true;
      for (int64_t e = 0; e < rows[i].numel() && same; ++e)
        same = rows[i].bits(e) == rows[j].bits(e);
      seen = same;
    }
    distinct += seen ? 0 : 1;
  }
  return distinct;
}

TEST(TpGemm, AutoAllReduceDivergesAcrossTheBatchAtFixedTp) {
  EXPECT_GT(distinct_row0_results("cpu-variant", AllReduceAlgo::kAuto), 1);
  EXPECT_GT(distinct_row0_results("cpu-invariant", AllReduceAlgo::kAuto), 1);
  EXPECT_GT(distinct_row0_results("cpu-invariant", AllReduceAlgo::kRing), 1);
  // The fixed orders hold across the batch on the invariant backend.
  EXPECT_EQ(distinct_row0_results("cpu-invariant", AllReduceAlgo::kFixed), 1);
}

TEST(TpGemm, BackendsWithoutChunkPartialsRefuseThem) {
  auto backend = make_backend("cpu-variant");
  EXPECT_EQ(backend->gemm_k_chunk(DType::kBF16), 0);
  const HostTensor w = seeded({8, 256}, 1, 0.05f);
  const HostTensor x = seeded({2, 256}, 3, 1.0f);
  GemmArgs g;
  g.a = &x;
  g.w = &w;
  EXPECT_THROW(backend->gemm_k_chunk_partials(g, nullptr), Error);
  EXPECT_EQ(make_backend("cpu-invariant")->gemm_k_chunk(DType::kBF16), 256);
}

}  // namespace
}  // namespace nvdet
