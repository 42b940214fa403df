// The GPU backends' timers with the L2 evicted before each timed run (`nvdet bench --l2 cold`,
// kernels/l2_flush.cuh): every run is timed, the spread is ordered, and the flush's launcher
// refuses a buffer it cannot read whole. The timed runs queued behind a held stream
// (kernels/stream_hold.cuh) unless `--launch-gaps`: the hold holds until the host releases its
// generation and gives up after its timeout, and a call that waits for the device inside its
// launch is timed without it rather than hanging. Which mode is faster is left to nvdet bench: a
// unit test does not time speed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/tensor.h"
#include "lib/ops/op_args.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/l2_flush.cuh"
#include "kernels/stream_hold.cuh"
#include "lib/cuda/device_context.h"
#endif

namespace nvdet {
namespace {

HostTensor seeded(std::vector<int64_t> shape, uint64_t stream) {
  HostTensor t(DType::kBF16, std::move(shape));
  fill_normal(t, 20261206, stream);
  return t;
}

// A timing of `reps` runs whose minimum, median and maximum are positive and in order.
void expect_ordered_timing(const Timing& t, int reps, const char* name) {
  EXPECT_EQ(t.repetitions, reps) << name;
  EXPECT_GT(t.min_us, 0.0) << name;
  EXPECT_LE(t.min_us, t.median_us) << name;
  EXPECT_LE(t.median_us, t.max_us) << name;
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
      expect_ordered_timing(*t, 7, name);
    }
  }
}

TEST(GpuBenchTiming, RunsAreQueuedAheadUnlessLaunchGapsAreAsked) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  const HostTensor a = seeded({4, 1024}, 3), w = seeded({1024, 1024}, 4);
  const GemmArgs args{&a, &w, nullptr, DType::kBF16, false};
  for (const char* name : {"cuda-invariant", "cublas"}) {
    auto backend = make_backend(name);
    for (const bool gaps : {false, true}) {
      TimingOptions opts;
      opts.warmup = 1;
      opts.repetitions = 19;  // more than one hold's worth of runs, the last hold part full
      opts.launch_gaps = gaps;
      const std::optional<Timing> t = backend->time(args, opts);
      ASSERT_TRUE(t.has_value()) << name;
      EXPECT_EQ(t->queued, !gaps) << name;
      expect_ordered_timing(*t, 19, name);
      // The copy ceiling is timed in the run's launch mode too.
      EXPECT_GT(backend->copy_bandwidth_gbps(opts).value_or(0.0), 0.0) << name;
    }
  }
}

#ifdef NVDET_WITH_CUDA
TEST(GpuBenchTiming, TheHoldWaitsForItsGenerationAndGivesUpAfterItsTimeout) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  unsigned* word = nullptr;
  unsigned* timed_out = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&word), sizeof(unsigned), cudaHostAllocMapped),
            cudaSuccess);
  ASSERT_EQ(cudaMalloc(&timed_out, sizeof(unsigned)), cudaSuccess);
  ASSERT_EQ(cudaMemset(timed_out, 0, sizeof(unsigned)), cudaSuccess);
  std::atomic_ref<unsigned>(*word).store(0);
  void* device_word = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&device_word, word, 0), cudaSuccess);
  const auto* release = static_cast<const volatile unsigned*>(device_word);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);

  // Held (a 10 s timeout) until the host writes generation 1; then it returns, not timed out.
  ASSERT_EQ(kernels::launch_stream_hold(release, 1, 10'000'000'000ull, timed_out, stream),
            cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  std::atomic_ref<unsigned>(*word).store(1);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  unsigned flag = 7;
  ASSERT_EQ(cudaMemcpy(&flag, timed_out, sizeof(flag), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(flag, 0u);
  // An earlier generation than the word's is already released.
  ASSERT_EQ(kernels::launch_stream_hold(release, 1, 10'000'000'000ull, timed_out, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  // Never released: it gives up after 2 ms and says so.
  ASSERT_EQ(kernels::launch_stream_hold(release, 2, 2'000'000ull, timed_out, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&flag, timed_out, sizeof(flag), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(flag, 1u);
  EXPECT_EQ(kernels::launch_stream_hold(nullptr, 1, 1000, timed_out, stream),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernels::launch_stream_hold(release, 1, 1000, nullptr, stream), cudaErrorInvalidValue);
  cudaStreamDestroy(stream);
  cudaFree(timed_out);
  cudaFreeHost(word);
}

TEST(GpuBenchTiming, ACallThatWaitsForTheDeviceIsTimedWithoutTheHold) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  cuda::DeviceContext ctx;
  cuda::DeviceBuffer buffer(1 << 20);
  cuda::PreparedCall call;
  int launches = 0;
  call.launch = [&](cudaStream_t stream) {
    ++launches;
    const cudaError_t st = cudaMemsetAsync(buffer.get(), launches & 0xff, 1 << 20, stream);
    if (st != cudaSuccess) return st;
    return cudaStreamSynchronize(stream);  // waits for the device, and so for any hold
  };
  const auto start = std::chrono::steady_clock::now();
  const Timing t = cuda::time_prepared(ctx, call, TimingOptions{.warmup = 1, .repetitions = 3});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(t.queued);
  EXPECT_EQ(t.repetitions, 3);
  EXPECT_GT(t.min_us, 0.0);
  EXPECT_LE(t.median_us, t.max_us);
  // The first hold gave up after its timeout (1 s), and the runs were timed again without one.
  EXPECT_GE(launches, 1 + 3 + 3);
  EXPECT_LT(seconds, 30.0);

  // A call that does not wait is queued.
  cuda::PreparedCall quick;
  quick.launch = [&](cudaStream_t stream) {
    return cudaMemsetAsync(buffer.get(), 0x5a, 1 << 20, stream);
  };
  EXPECT_TRUE(cuda::time_prepared(ctx, quick, TimingOptions{.warmup = 1, .repetitions = 9}).queued);
}

// A launch that fails inside a held batch throws, and its hold is released on the way out: the
// next timing on the same context is queued, not told that a hold gave up.
TEST(GpuBenchTiming, AFailedLaunchReleasesItsHold) {
  if (!testing::gpu_available()) GTEST_SKIP() << "no GPU";
  cuda::DeviceContext ctx;
  cuda::DeviceBuffer buffer(1 << 20);
  cuda::PreparedCall failing;
  int launches = 0;
  failing.launch = [&](cudaStream_t stream) {
    if (++launches == 3) return cudaErrorInvalidValue;  // the second timed run
    return cudaMemsetAsync(buffer.get(), 0x11, 1 << 20, stream);
  };
  EXPECT_ANY_THROW(cuda::time_prepared(ctx, failing, TimingOptions{.warmup = 1, .repetitions = 5}));
  cuda::PreparedCall quick;
  quick.launch = [&](cudaStream_t stream) {
    return cudaMemsetAsync(buffer.get(), 0x5a, 1 << 20, stream);
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(cuda::time_prepared(ctx, quick, TimingOptions{.warmup = 1, .repetitions = 5}).queued);
  // Released at once: neither timing waited out a hold's second.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.9);
}

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
