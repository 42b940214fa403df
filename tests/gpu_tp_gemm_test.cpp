// Tensor parallel on one GPU: cuda-invariant's K-chunk partials (lib/cuda/gemm_chunk_partials.cpp)
// make the TP-invariant plan hold bitwise across tp and batch, and sum to the product within bf16
// tolerance of cpu-reference; cuBLAS ranks under the simulated ring give each rank's GEMM followed
// by the simulated all-reduce.
#include <gtest/gtest.h>

#include <cmath>

#include "lib/backend/backend.h"
#include "lib/workloads/tp_gemm.h"
#include "tests/test_support.h"
#include "tests/tp_gemm_fixture.h"

namespace nvdet {
namespace {

using testing::tp_options;

HostTensor seeded(std::vector<int64_t> shape, uint64_t stream, float stddev) {
  return testing::seeded_bf16(std::move(shape), 4242, stream, stddev);
}

TEST(GpuTpGemm, CudaInvariantKChunkPlanHoldsAcrossTpAndBatch) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  auto gpu = make_backend("cuda-invariant");
  auto reference = make_backend("cpu-reference");
  const int64_t k = 4096, n = 256;
  ASSERT_EQ(gpu->gemm_k_chunk(DType::kBF16), 1024);
  const HostTensor w = seeded({n, k}, 1, 1.0f / 64);
  const HostTensor bias = seeded({n}, 2, 0.5f);
  const HostTensor x = seeded({40, k}, 3, 1.0f);
  GemmArgs g;
  g.a = &x;
  g.w = &w;
  g.bias = &bias;
  g.out_dtype = DType::kBF16;
  const HostTensor exact = reference->run(g, nullptr);
  HostTensor first;
  for (const int tp : {1, 2, 4}) {
    const RowParallelLinear linear(w, &bias, tp);
    for (const int m : {1, 7, 40}) {
      const HostTensor xm = x.slice_rows(0, m);
      const HostTensor out = linear.run(*gpu, linear.split(xm), DType::kBF16,
                                        tp_options(tp, AllReduceAlgo::kFixed), nullptr);
      if (first.empty()) first = out.slice_rows(0, 1);
      for (int64_t e = 0; e < n; ++e)
        ASSERT_EQ(out.bits(e), first.bits(e)) << "tp " << tp << " m " << m << " col " << e;
      for (int64_t i = 0; i < out.numel(); ++i)
        ASSERT_NEAR(out.get(i), exact.get(i), 2e-2 * (1 + std::fabs(exact.get(i)))) << i;
    }
  }
}

TEST(GpuTpGemm, CublasRanksUnderTheSimulatedRing) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  auto gpu = make_backend("cublas");
  const int64_t k = 2048, n = 128, m = 9;
  const HostTensor w = seeded({n, k}, 4, 1.0f / 45);
  const HostTensor x = seeded({m, k}, 5, 1.0f);
  const RowParallelLinear linear(w, nullptr, 4);
  TpOptions o;
  o.tp = 4;
  o.allreduce = AllReduceAlgo::kRing;
  o.channels = 2;
  const auto shards = linear.split(x);
  const HostTensor got = linear.run(*gpu, shards, DType::kBF16, o, nullptr);
  std::vector<HostTensor> partials;
  for (int r = 0; r < 4; ++r) {
    const HostTensor wr = column_slice(w, r * (k / 4), k / 4);
    GemmArgs g;
    g.a = &shards[r];
    g.w = &wr;
    g.out_dtype = DType::kBF16;
    partials.push_back(gpu->run(g, nullptr));
  }
  std::vector<const HostTensor*> p;
  for (const HostTensor& t : partials) p.push_back(&t);
  const HostTensor want =
      simulate_all_reduce(p, plan_all_reduce(AllReduceAlgo::kRing, 2, 4, m * n * 2));
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.bits(i), want.bits(i)) << i;
}

}  // namespace
}  // namespace nvdet
