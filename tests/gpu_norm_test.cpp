// GPU RMSNorm and log-softmax: cuda-invariant and cuda-vendor-policy against cpu-reference
// (double accumulation), the invariant kernels bitwise identical across batch sizes and
// positions, and the vendor policy shown to diverge somewhere in the same sweep.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/log_softmax.cuh"
#include "lib/cuda/elem_type.h"
#endif

namespace nvdet::testing {
namespace {

constexpr uint64_t kNormProbe = 7;

// Batch sizes 1..64 and a few up to 256, probe first and last.
std::vector<SweepPoint> norm_sweep() {
  std::vector<SweepPoint> points;
  for (const SweepPoint& p : batch_sweep({96, 128, 131, 132, 133, 200, 256}, true)) {
    if (p.where != 1) points.push_back(p);
  }
  return points;
}

HostTensor probe_rows(DType dtype, int64_t row_len, const SweepPoint& p, float stddev) {
  return seeded_rows(dtype, row_len,
                     batch_streams(p.batch, probe_index(p.batch, p.where), kNormProbe), stddev);
}

// The probe row's bits for every sweep point, for one backend.
template <class MakeArgs>
DistinctResults sweep(Backend& backend, DType dtype, int64_t row_len, float stddev,
                      MakeArgs make_args) {
  DistinctResults r;
  for (const SweepPoint& p : norm_sweep()) {
    const HostTensor x = probe_rows(dtype, row_len, p, stddev);
    r.add(p.label(), row_bits(backend.run(make_args(x), nullptr), probe_index(p.batch, p.where)));
  }
  return r;
}

TEST(GpuNorm, RmsNormMatchesReference) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto ref = make_backend("cpu-reference");
  // bf16 and fp16 rows of 4096 (16-byte vectors), fp32 rows of 4099 (scalar path).
  const struct {
    DType in, out;
    int64_t rows, d;
  } cases[] = {{DType::kBF16, DType::kBF16, 9, 4096},
               {DType::kBF16, DType::kFP32, 3, 4096},
               {DType::kFP16, DType::kFP16, 5, 4096},
               {DType::kFP32, DType::kFP32, 4, 4099},
               {DType::kBF16, DType::kFP32, 2, 151936}};
  for (const char* name : {"cuda-invariant", "cuda-vendor-policy"}) {
    auto gpu = make_backend(name);
    for (const auto& c : cases) {
      const HostTensor x = seeded_rows(c.in, c.d, batch_streams(c.rows, 0, 3), 2.0f);
      const HostTensor w = seeded_vector(c.in, c.d, 77);
      const RmsNormArgs args{&x, &w, 1e-6f, c.out};
      RunNotes notes;
      const HostTensor got = gpu->run(args, &notes);
      EXPECT_FALSE(notes["block_threads"].empty());
      // fp32 accumulation of <= 151936 squares: relative error well under 1e-5; 16-bit outputs
      // may differ from the double result by one rounding step.
      expect_close_to_reference(got, ref->run(args, nullptr), 1e-5, 1,
                                std::string(name) + " rmsnorm d=" + std::to_string(c.d));
    }
  }
}

TEST(GpuNorm, LogSoftmaxMatchesReference) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto ref = make_backend("cpu-reference");
  const struct {
    DType in, out;
    int64_t rows, v;
  } cases[] = {{DType::kBF16, DType::kFP32, 3, 151936},
               {DType::kBF16, DType::kBF16, 2, 151936},
               {DType::kFP16, DType::kFP32, 4, 32000},
               {DType::kFP32, DType::kFP32, 3, 1001}};
  for (const char* name : {"cuda-invariant", "cuda-vendor-policy"}) {
    auto gpu = make_backend(name);
    for (const auto& c : cases) {
      const HostTensor x = seeded_rows(c.in, c.v, batch_streams(c.rows, 0, 4), 3.0f);
      const LogSoftmaxArgs args{&x, c.out};
      // Outputs are around -log(v) ~ -12 +- 10; fp32 sums of 151936 exponentials are good to a
      // few 1e-7 relative, so 2e-6 of the largest magnitude bounds every element.
      expect_close_to_reference(gpu->run(args, nullptr), ref->run(args, nullptr), 2e-6, 1,
                                std::string(name) + " log_softmax v=" + std::to_string(c.v));
    }
  }
}

TEST(GpuNorm, InvariantRmsNormIsBatchInvariant) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto inv = make_backend("cuda-invariant");
  // fp32 rows (x*x is inexact, so any change of summation order would show) and bf16 rows.
  for (DType dtype : {DType::kFP32, DType::kBF16}) {
    const HostTensor w = seeded_vector(dtype, 4096, 77);
    const DistinctResults r = sweep(*inv, dtype, 4096, 2.0f, [&](const HostTensor& x) {
      return RmsNormArgs{&x, &w, 1e-6f, DType::kFP32};
    });
    EXPECT_EQ(r.count(), 1u) << dtype_name(dtype) << ": " << r.contexts();
  }
}

TEST(GpuNorm, InvariantLogSoftmaxIsBatchInvariant) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto inv = make_backend("cuda-invariant");
  const DistinctResults r = sweep(*inv, DType::kBF16, 32000, 3.0f, [](const HostTensor& x) {
    return LogSoftmaxArgs{&x, DType::kFP32};
  });
  EXPECT_EQ(r.count(), 1u) << r.contexts();
  // The vocabulary-wide row too, over the batch sizes where the vendor policy changes plan.
  DistinctResults wide;
  for (int64_t b : {1, 2, 8, 33, 64, 65, 131, 132, 256}) {
    const SweepPoint p{b, 2};
    const HostTensor x = probe_rows(DType::kBF16, 151936, p, 3.0f);
    wide.add(p.label(),
             row_bits(inv->run(LogSoftmaxArgs{&x, DType::kFP32}, nullptr), probe_index(b, 2)));
  }
  EXPECT_EQ(wide.count(), 1u) << wide.contexts();
}

TEST(GpuNorm, VendorPolicyDivergesAcrossBatchSizes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto vendor = make_backend("cuda-vendor-policy");
  // fp32 rows: with bf16 rows every x*x is exact in fp32 and the vendor's different summation
  // orders happened to round to the same scale on this data.
  const HostTensor w = seeded_vector(DType::kFP32, 4096, 77);
  const DistinctResults rms = sweep(*vendor, DType::kFP32, 4096, 2.0f, [&](const HostTensor& x) {
    return RmsNormArgs{&x, &w, 1e-6f, DType::kFP32};
  });
  EXPECT_GT(rms.count(), 1u) << "vendor RMSNorm gave one result over the whole sweep";
  // Log-softmax: the vendor's part orders change the sum of exponentials in its last bits, but
  // log() turns that into an absolute change far below the ulp of the outputs, so on these
  // 32000-wide rows the outputs did not change on an H200 (PyTorch's log_softmax behaves alike).
  // Recorded for the report, not asserted.
  const DistinctResults lsm = sweep(*vendor, DType::kBF16, 32000, 3.0f, [](const HostTensor& x) {
    return LogSoftmaxArgs{&x, DType::kFP32};
  });
  RecordProperty("vendor_log_softmax_distinct_results", static_cast<int>(lsm.count()));
}

TEST(GpuNorm, RunNotesNameThePlan) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const HostTensor x = seeded_rows(DType::kBF16, 4096, batch_streams(2, 0, 1));
  const HostTensor w = seeded_vector(DType::kBF16, 4096, 77);
  RunNotes inv_notes, vendor_notes;
  make_backend("cuda-invariant")->run(RmsNormArgs{&x, &w, 1e-6f, DType::kBF16}, &inv_notes);
  make_backend("cuda-vendor-policy")->run(RmsNormArgs{&x, &w, 1e-6f, DType::kBF16}, &vendor_notes);
  EXPECT_EQ(inv_notes["kernel"], "rmsnorm_invariant");
  EXPECT_EQ(inv_notes["row_splits"], "1");
  EXPECT_EQ(vendor_notes["kernel"], "rmsnorm_vendor_split_rows");
  EXPECT_EQ(vendor_notes["block_threads"], "1024");
  EXPECT_NE(vendor_notes["row_splits"], "1");
}

#ifdef NVDET_WITH_CUDA
// The invariant log-softmax keeps a row's head in shared memory between its two passes. Where
// the second pass reads a vector from must never change a bit: no stage, a small stage, and the
// automatic (largest) stage give byte-identical outputs, for rows wider than one block's stage.
TEST(GpuNorm, LogSoftmaxStagingChangesNoBit) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const struct {
    DType in, out;
    int64_t rows, v;
  } cases[] = {{DType::kBF16, DType::kFP32, 5, 151936},
               {DType::kFP16, DType::kBF16, 3, 32003},
               {DType::kFP32, DType::kFP32, 4, 100000}};
  for (const auto& c : cases) {
    const HostTensor x = seeded_rows(c.in, c.v, batch_streams(c.rows, 0, 11), 3.0f);
    const kernels::ElemType in_t = cuda::elem_type(c.in), out_t = cuda::elem_type(c.out);
    const int threads = kernels::log_softmax_invariant_block_threads(c.v, in_t);
    const size_t automatic = kernels::log_softmax_stage_bytes(in_t, out_t, c.v, threads);
    EXPECT_GT(automatic, 4096u) << dtype_name(c.in) << " v=" << c.v;
    const size_t out_bytes = static_cast<size_t>(c.rows * c.v) * dtype_size(c.out);
    void* dx = nullptr;
    void* dout = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, x.nbytes()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<std::vector<uint8_t>> outs;
    for (size_t stage : {size_t{0}, size_t{4096}, automatic}) {
      ASSERT_EQ(cudaMemset(dout, 0xff, out_bytes), cudaSuccess);
      ASSERT_EQ(kernels::launch_log_softmax_rows(in_t, out_t, dx, dout, c.rows, c.v, threads, stage,
                                                 nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      outs.emplace_back(out_bytes);
      ASSERT_EQ(cudaMemcpy(outs.back().data(), dout, out_bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    EXPECT_TRUE(outs[0] == outs[1]) << dtype_name(c.in) << " v=" << c.v << ": 4 KiB stage";
    EXPECT_TRUE(outs[0] == outs[2])
        << dtype_name(c.in) << " v=" << c.v << ": " << automatic << "-byte stage";
    cudaFree(dx);
    cudaFree(dout);
  }
}
#endif

}  // namespace
}  // namespace nvdet::testing
