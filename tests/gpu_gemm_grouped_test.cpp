// The invariant GEMM's grouped launch (kernels/gemm_invariant.cuh, GemmGroupedProblem) against
// its plain launch over each group's rows, bit for bit: ragged and empty groups, a group past a
// tile boundary, every wgmma configuration and a few CTA counts, bf16 and fp16, N not a multiple
// of the tile. Skipped without an sm_90a device.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/core/tensor.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/gemm_invariant.cuh"
#endif

namespace nvdet::testing {
namespace {

#ifdef NVDET_WITH_CUDA

using kernels::GemmType;

struct Buffer {
  explicit Buffer(size_t bytes) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess);
  }
  ~Buffer() { cudaFree(p); }
  void* p = nullptr;
};

void upload(void* dst, const void* src, size_t bytes) {
  ASSERT_EQ(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}
std::vector<uint8_t> download(const void* src, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

kernels::GemmDevice this_device() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  kernels::GemmDevice d;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  return d;
}

TEST(GpuGemmGrouped, EveryRowHasThePlainLaunchsBitsForItsGroup) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const kernels::GemmDevice device = this_device();
  struct Shape {
    DType dtype;
    int n, k;
  };
  // Groups' row counts: empty ones, one row, a full 64-row tile and one past it, a long one.
  const std::vector<int> counts = {3, 0, 1, 64, 65, 0, 130, 7};
  const int groups = static_cast<int>(counts.size());
  std::vector<int32_t> group_rows(1, 0);
  for (int c : counts) group_rows.push_back(group_rows.back() + c);
  const int rows = group_rows.back();
  for (const Shape s : {Shape{DType::kBF16, 1536, 2048}, Shape{DType::kFP16, 200, 768}}) {
    const GemmType t = s.dtype == DType::kBF16 ? GemmType::kBF16 : GemmType::kFP16;
    HostTensor a(s.dtype, {rows, s.k}), w(s.dtype, {static_cast<int64_t>(groups) * s.n, s.k});
    fill_normal(a, 36, 1, 1.0f);
    fill_normal(w, 36, 2, 0.05f);
    Buffer da(a.nbytes()), dw(w.nbytes()), drows(group_rows.size() * 4);
    const size_t out_bytes = static_cast<size_t>(rows) * s.n * 2;
    Buffer plain(out_bytes), grouped(out_bytes);
    upload(da.p, a.data(), a.nbytes());
    upload(dw.p, w.data(), w.nbytes());
    upload(drows.p, group_rows.data(), group_rows.size() * 4);
    kernels::GemmGroupedProblem gp;
    gp.a = da.p;
    gp.w = dw.p;
    gp.group_rows = static_cast<const int32_t*>(drows.p);
    gp.groups = groups;
    gp.max_rows = rows;
    gp.n = s.n;
    gp.k = s.k;
    gp.in_type = gp.out_type = t;
    if (!kernels::gemm_invariant_grouped_supported(gp, device)) {
      GTEST_SKIP() << "no sm_90a wgmma path on this device";
    }
    // The plain launch, group by group.
    for (int g = 0; g < groups; ++g) {
      if (counts[g] == 0) continue;
      kernels::GemmProblem p;
      p.a = static_cast<const uint8_t*>(da.p) + static_cast<size_t>(group_rows[g]) * s.k * 2;
      p.w = static_cast<const uint8_t*>(dw.p) + static_cast<size_t>(g) * s.n * s.k * 2;
      p.out = static_cast<uint8_t*>(plain.p) + static_cast<size_t>(group_rows[g]) * s.n * 2;
      p.m = counts[g];
      p.n = s.n;
      p.k = s.k;
      p.lda = p.ldw = s.k;
      p.ldo = s.n;
      p.in_type = p.out_type = t;
      const kernels::GemmPlan plan = kernels::gemm_invariant_plan(p, device);
      ASSERT_EQ(plan.workspace_bytes, 0u);
      ASSERT_EQ(kernels::gemm_invariant_launch(p, plan, nullptr, 0, nullptr), cudaSuccess);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint8_t> want = download(plain.p, out_bytes);
    for (int config = 0; config < kernels::kGemmWgmmaConfigCount; ++config) {
      // Cluster and swapped entries are plain launches only (a pinned one leaves grouped launches
      // on auto).
      if (kernels::gemm_wgmma_plain_only(kernels::kGemmWgmmaConfigs[config])) continue;
      for (const int ctas : {1, 7, 0}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(s.dtype) << " n " << s.n << " config "
                                          << config << " ctas " << ctas);
        ASSERT_EQ(cudaMemset(grouped.p, 0xff, out_bytes), cudaSuccess);
        gp.out = grouped.p;
        ASSERT_EQ(kernels::gemm_invariant_grouped_launch(gp, device, config, ctas, nullptr),
                  cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint8_t> got = download(grouped.p, out_bytes);
        for (int r = 0; r < rows; ++r) {
          ASSERT_EQ(std::memcmp(got.data() + static_cast<size_t>(r) * s.n * 2,
                                want.data() + static_cast<size_t>(r) * s.n * 2,
                                static_cast<size_t>(s.n) * 2),
                    0)
              << "row " << r;
        }
      }
    }
  }
}

#else
TEST(GpuGemmGrouped, NeedsACudaBuild) { GTEST_SKIP() << "built without CUDA"; }
#endif

}  // namespace
}  // namespace nvdet::testing
