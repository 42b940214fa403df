// The device-resident decoder against the host decoder, for every CUDA backend that offers it:
// the same completions, logits bits, backend notes and bisect traces (bitwise), on seeded models
// with GQA, biases, Qwen3's q/k norms, llama3 RoPE scaling, chunked prefill and bf16 / fp16.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "lib/backend/backend.h"
#include "lib/backend/device_decode_ops.h"
#include "tests/device_decode_fixture.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

const char* const kDeviceBackends[] = {"cublas", "cublaslt-nosplit", "cublaslt-ws1k",
                                       "cuda-vendor-policy", "cuda-invariant"};

struct Decoded {
  std::vector<SequenceResult> results;
  RunNotes notes;
  TraceRecorder trace;
};

void decode(Backend& b, const ModelWeights& w, bool host_path, bool trace, Decoded& out) {
  const std::vector<size_t> watched = {0, 2, 5};
  out.results = greedy_decode(b, w, decode_prompts(w.config.vocab), watched,
                              decode_options(host_path), trace ? &out.trace : nullptr, &out.notes);
}

TEST(GpuDeviceDecoder, BitwiseEqualToTheHostPath) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for (const DecodeCase& c : decode_cases()) {
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
    for (const char* name : kDeviceBackends) {
      SCOPED_TRACE(c.name + " " + name);
      std::unique_ptr<Backend> b = make_backend(name);
      ASSERT_NE(b->device_decode_ops(), nullptr);
      for (const bool trace : {false, true}) {
        Decoded host, device;
        const auto t0 = std::chrono::steady_clock::now();
        decode(*b, w, true, trace, host);
        const auto t1 = std::chrono::steady_clock::now();
        decode(*b, w, false, trace, device);
        const auto t2 = std::chrono::steady_clock::now();
        std::cout << c.name << " " << name << (trace ? " traced" : "") << ": host path "
                  << std::chrono::duration<double>(t1 - t0).count() << " s, device path "
                  << std::chrono::duration<double>(t2 - t1).count() << " s\n";
        EXPECT_EQ(host.notes.at("decoder").rfind("host", 0), 0u);
        EXPECT_EQ(device.notes.at("decoder").rfind("device-resident", 0), 0u);
        ASSERT_EQ(host.results.size(), device.results.size());
        for (size_t i = 0; i < host.results.size(); ++i) {
          EXPECT_EQ(host.results[i].completion, device.results[i].completion) << "sequence " << i;
          EXPECT_TRUE(same_bits(host.results[i].logits, device.results[i].logits))
              << "sequence " << i;
        }
        host.notes.erase("decoder");
        device.notes.erase("decoder");
        EXPECT_EQ(host.notes, device.notes);
        if (trace) {
          EXPECT_GT(host.trace.keys.size(), 100u);
          EXPECT_EQ(host.trace.keys, device.trace.keys);
          ASSERT_EQ(host.trace.bytes.size(), device.trace.bytes.size());
          for (size_t i = 0; i < host.trace.bytes.size(); ++i) {
            EXPECT_EQ(host.trace.bytes[i], device.trace.bytes[i]) << host.trace.keys[i];
          }
        }
      }
    }
  }
}

// MoE models (moe_decode_config: 8 experts of 128, top-2, one dense layer) run on the device
// path: their routing, their experts' GEMMs, SwiGLU and combine on the device; every
// device backend gives the host path's bits, notes and trace, Qwen2-MoE's shared expert
// included.
TEST(GpuDeviceDecoder, MoeModelsRunOnTheDevicePath) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for (const bool shared : {false, true}) {
    const ModelWeights w = make_synthetic_weights(moe_decode_config(shared), DType::kBF16, 1617);
    for (const char* name : kDeviceBackends) {
      SCOPED_TRACE(std::string(name) + (shared ? " shared expert" : ""));
      std::unique_ptr<Backend> b = make_backend(name);
      Decoded host, device;
      decode(*b, w, true, true, host);
      decode(*b, w, false, true, device);
      EXPECT_EQ(device.notes.at("decoder").rfind("device-resident", 0), 0u)
          << device.notes.at("decoder");
      for (size_t i = 0; i < host.results.size(); ++i) {
        EXPECT_EQ(host.results[i].completion, device.results[i].completion) << i;
        EXPECT_TRUE(same_bits(host.results[i].logits, device.results[i].logits)) << i;
      }
      EXPECT_EQ(host.trace.keys, device.trace.keys);
      EXPECT_EQ(host.trace.bytes, device.trace.bytes);
      // Without notes or a trace, cuda-invariant runs each stage's experts in one grouped launch
      // (the other backends keep one call per expert): still the host path's bits.
      const auto plain = [&](bool host_path) {
        return greedy_decode(*b, w, decode_prompts(w.config.vocab), {0, 2, 5},
                             decode_options(host_path), nullptr, nullptr);
      };
      const std::vector<SequenceResult> plain_host = plain(true), plain_device = plain(false);
      ASSERT_EQ(plain_host.size(), plain_device.size());
      for (size_t i = 0; i < plain_host.size(); ++i) {
        EXPECT_EQ(plain_host[i].completion, plain_device[i].completion) << i;
        EXPECT_TRUE(same_bits(plain_host[i].logits, plain_device[i].logits)) << i;
      }
    }
  }
}

// The backends without device entry points keep the host path.
TEST(GpuDeviceDecoder, PortableAndCudnnKeepTheHostPath) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> b = make_backend("cuda-portable");
  EXPECT_EQ(b->device_decode_ops(), nullptr);
}

}  // namespace
}  // namespace nvdet::testing
