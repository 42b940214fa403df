// The GPU backends' timers with the L2 evicted before each timed run (`nvdet bench --l2 cold`,
// kernels/l2_flush.cuh): every run is timed, the spread is ordered, and the flush's launcher
// refuses a buffer it cannot read whole. Which mode is faster is left to nvdet bench: a unit
// test does not time speed.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/tensor.h"
#include "lib/ops/op_args.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/l2_flush.cuh"
#endif

namespace nvdet {
namespace {

HostTensor seeded(std::vector<int64_t> shape, uint64_t stream) {
  HostTensor t(DType::kBF16, std::move(shape));
  fill_normal(t, 20261206, stream);
  return t;
}

TEST(GpuBenchTiming, ColdL2TimesEveryRunOfEachGpuBackend) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  // A weight of 8 MiB: under any Hopper's L2, so hot runs may read it from cache.
  const HostTensor a = seeded({16, 2048}, 1), w = seeded({2048, 2048}, 2);
  const GemmArgs args{&a, &w, nullptr, DType::kBF16, false};
  for (const char* name : {"cuda-invariant", "cublas"}) {
    auto backend = make_backend(name);
    for (const bool cold : {false, true}) {
      TimingOptions opts;
      opts.warmup = 1;
      opts.repetitions = 7;
      opts.flush_l2 = cold;
      const std::optional<Timing> t = backend->time(args, opts);
      ASSERT_TRUE(t.has_value()) << name;
      EXPECT_EQ(t->repetitions, 7) << name;
      EXPECT_GT(t->min_us, 0.0) << name;
      EXPECT_LE(t->min_us, t->median_us) << name;
      EXPECT_LE(t->median_us, t->max_us) << name;
    }
  }
}

#ifdef NVDET_WITH_CUDA
TEST(GpuBenchTiming, TheFlushRefusesWhatItCannotReadWhole) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  void* buffer = nullptr;
  unsigned* sink = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&sink, sizeof(unsigned)), cudaSuccess);
  ASSERT_EQ(cudaMemset(buffer, 0x5a, 1 << 20), cudaSuccess);
  EXPECT_EQ(kernels::launch_l2_flush(buffer, 1 << 20, sink, 4, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(kernels::launch_l2_flush(buffer, (1 << 20) - 8, sink, 4, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernels::launch_l2_flush(nullptr, 1 << 20, sink, 4, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(kernels::launch_l2_flush(buffer, 1 << 20, sink, 0, nullptr), cudaErrorInvalidValue);
  cudaFree(buffer);
  cudaFree(sink);
}
#endif

}  // namespace
}  // namespace nvdet
