// Serving traffic on the GPU: every CUDA backend that offers the device-resident decoder replays
// the traffic of tests/traffic_fixture.h (steps that mix decode rows and prompt chunks, a
// prefix-cache hit for the probe) on the device path and on the host path, and the two give the
// same completions, logits bits, traces and step notes; cuda-invariant gives the probe the bits
// it has alone, under every traffic seed.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "lib/backend/backend.h"
#include "tests/device_decode_fixture.h"
#include "tests/test_support.h"
#include "tests/traffic_fixture.h"

namespace nvdet::testing {
namespace {

const char* const kDeviceBackends[] = {"cublas", "cublaslt-nosplit", "cublaslt-ws1k",
                                       "cuda-vendor-policy", "cuda-invariant"};

struct Replayed {
  SequenceResult probe;
  TraceRecorder trace;
};

Replayed replay(Backend& b, const ModelWeights& w, int64_t seed, DecodePath path) {
  const Scenario s = traffic_scenario(12, 24, true);
  Replayed out;
  TrafficReplay r(b, w, traffic_requests(s, w.config.vocab, seed, 8), traffic_options(path), {0},
                  &out.trace, nullptr);
  out.probe = r.run().at(0);
  return out;
}

TEST(GpuTraffic, DevicePathReplaysMixedStepsAsTheHostPath) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for (const DecodeCase& c : decode_cases()) {
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 3405);
    for (const char* name : kDeviceBackends) {
      SCOPED_TRACE(c.name + " " + name);
      std::unique_ptr<Backend> b = make_backend(name);
      ASSERT_NE(b->device_decode_ops(), nullptr);
      const auto t0 = std::chrono::steady_clock::now();
      const Replayed host = replay(*b, w, 3, DecodePath::kHost);
      const auto t1 = std::chrono::steady_clock::now();
      const Replayed device = replay(*b, w, 3, DecodePath::kDevice);
      const auto t2 = std::chrono::steady_clock::now();
      std::cout << c.name << " " << name << ": host path "
                << std::chrono::duration<double>(t1 - t0).count() << " s, device path "
                << std::chrono::duration<double>(t2 - t1).count() << " s\n";
      EXPECT_EQ(host.probe.completion, device.probe.completion);
      EXPECT_TRUE(same_bits(host.probe.logits, device.probe.logits));
      EXPECT_EQ(host.trace.keys, device.trace.keys);
      EXPECT_TRUE(host.trace.bytes == device.trace.bytes);
      ASSERT_EQ(host.probe.steps.size(), device.probe.steps.size());
      for (size_t i = 0; i < host.probe.steps.size(); ++i) {
        ASSERT_EQ(host.probe.steps[i].engine_steps.size(),
                  device.probe.steps[i].engine_steps.size());
        for (size_t e = 0; e < host.probe.steps[i].engine_steps.size(); ++e) {
          EXPECT_EQ(host.probe.steps[i].engine_steps[e].notes,
                    device.probe.steps[i].engine_steps[e].notes);
        }
      }
    }
  }
}

TEST(GpuTraffic, CudaInvariantGivesTheProbeOneResultUnderAnyTraffic) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const DecodeCase c = decode_cases().front();
  const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 3406);
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  const Replayed first = replay(*b, w, 1, DecodePath::kDevice);
  for (int64_t seed = 2; seed <= 6; ++seed) {
    SCOPED_TRACE("traffic_seed " + std::to_string(seed));
    const Replayed other = replay(*b, w, seed, DecodePath::kDevice);
    EXPECT_EQ(other.probe.completion, first.probe.completion);
    EXPECT_TRUE(same_bits(other.probe.logits, first.probe.logits));
  }
}

}  // namespace
}  // namespace nvdet::testing
