// The device-resident decode engine (lib/model/device_decoder.cpp) checked without a GPU: a fake
// DeviceDecodeOps keeps its "device" buffers in host memory, runs the backend ops through a CPU
// backend's run() and the elementwise steps as host_ops.h defines them. The engine must then
// reproduce the host engine bit for bit (completions, logits, notes, trace), which checks its
// scheduling, buffers, KV slots, page tables, q/k norm gathers and head rows; and it must refuse a
// decode that does not fit the device's free memory with exit 3 and one sentence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "lib/backend/backend.h"
#include "lib/backend/device_decode_ops.h"
#include "lib/core/error.h"
#include "lib/model/device_decoder.h"
#include "lib/model/host_ops.h"
#include "lib/model/kv_cache.h"
#include "tests/device_decode_fixture.h"
#include "tests/host_memory_device_ops.h"

namespace nvdet::testing {
namespace {

struct Decoded {
  std::vector<SequenceResult> results;
  RunNotes notes;
  TraceRecorder trace;
};

Decoded decode(Backend& b, const ModelWeights& w, bool host_path) {
  Decoded out;
  out.results = greedy_decode(b, w, decode_prompts(w.config.vocab), {0, 2, 5},
                              decode_options(host_path), &out.trace, &out.notes);
  return out;
}

// The device engine's completions, logits, notes (all but the decoder's own) and trace against
// the host engine's, bit for bit.
void expect_same_decode(Decoded host, Decoded device) {
  ASSERT_EQ(host.results.size(), device.results.size());
  for (size_t i = 0; i < host.results.size(); ++i) {
    EXPECT_EQ(host.results[i].completion, device.results[i].completion) << i;
    EXPECT_TRUE(same_bits(host.results[i].logits, device.results[i].logits)) << i;
  }
  host.notes.erase("decoder");
  device.notes.erase("decoder");
  EXPECT_EQ(host.notes, device.notes);
  EXPECT_GT(host.trace.keys.size(), 100u);
  EXPECT_EQ(host.trace.keys, device.trace.keys);
  EXPECT_TRUE(host.trace.bytes == device.trace.bytes);
}

TEST(DeviceEngine, ReproducesTheHostEngineBitwise) {
  for (const DecodeCase& c : decode_cases()) {
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
    for (const char* cpu : {"cpu-reference", "cpu-variant"}) {
      SCOPED_TRACE(c.name + " " + cpu);
      FakeDeviceBackend b(cpu);
      Decoded host = decode(b, w, true);
      Decoded device = decode(b, w, false);
      EXPECT_EQ(host.notes.at("decoder").rfind("host", 0), 0u);
      EXPECT_EQ(device.notes.at("decoder").rfind("device-resident", 0), 0u);
      ASSERT_EQ(host.results.size(), 3u);
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(host.results[i].completion.size(), 10u);
        // Finite throughout, so that the GPU test's comparison never rests on NaN payloads
        // (which the device and x86 produce differently).
        const HostTensor& l = host.results[i].logits;
        for (int64_t j = 0; j < l.numel(); ++j)
          ASSERT_TRUE(std::isfinite(l.get(j))) << i << " " << j;
      }
      expect_same_decode(std::move(host), std::move(device));
    }
  }
}

// MoE layers on the device engine: the router's logits downloaded and routed on the host, the
// experts' rows gathered into one grouped layout, each expert's GEMMs on its slice, the combine
// by launch_moe_combine's arithmetic: the host engine's bits, notes (the watched experts' rows and
// plans) and trace (each expert's tensors as pass tensors, zeros where a row went elsewhere).
// Qwen2-MoE's shared expert too: its gate/up, SwiGLU, down and gate on the device, added in the
// combine kernel after the routed sum.
TEST(DeviceEngine, ReproducesTheHostEngineOnMoeModelsBitwise) {
  for (const bool shared : {false, true}) {
    const ModelWeights w = make_synthetic_weights(moe_decode_config(shared), DType::kBF16, 1617);
    for (const char* cpu : {"cpu-reference", "cpu-variant"}) {
      SCOPED_TRACE(std::string(cpu) + (shared ? " shared expert" : ""));
      FakeDeviceBackend b(cpu);
      Decoded host = decode(b, w, true);
      Decoded device = decode(b, w, false);
      EXPECT_EQ(device.notes.at("decoder").rfind("device-resident", 0), 0u)
          << device.notes.at("decoder");
      ASSERT_EQ(device.results.size(), 3u);
      // The experts' calls and rows (and the shared expert's) are in the notes and the trace,
      // which the comparison covers.
      bool expert_notes = false, shared_traced = false;
      for (const auto& [k, v] : host.notes) expert_notes |= k.find(".expert") != std::string::npos;
      for (const auto& key : host.trace.keys) {
        shared_traced |= key.find("shared_expert") != std::string::npos;
      }
      EXPECT_TRUE(expert_notes);
      EXPECT_EQ(shared_traced, shared);
      expect_same_decode(std::move(host), std::move(device));
    }
  }
}

// Passes that record neither notes nor a trace run each stage's experts in one grouped launch
// where the backend offers one (as cuda-invariant does): the completions and logits stay the host
// engine's, bit for bit. (The traced decodes above take the per-expert calls.)
TEST(DeviceEngine, GroupedExpertLaunchesGiveTheHostEnginesBits) {
  const ModelWeights w = make_synthetic_weights(moe_decode_config(false), DType::kBF16, 1617);
  for (const char* cpu : {"cpu-reference", "cpu-variant"}) {
    SCOPED_TRACE(cpu);
    FakeDeviceBackend b(cpu);
    const auto run = [&](bool host_path) {
      return greedy_decode(b, w, decode_prompts(w.config.vocab), {0, 2, 5},
                           decode_options(host_path), nullptr, nullptr);
    };
    const std::vector<SequenceResult> host = run(true);
    EXPECT_EQ(b.ops.grouped_launches, 0);
    const std::vector<SequenceResult> device = run(false);
    EXPECT_GT(b.ops.grouped_launches, 0);
    ASSERT_EQ(host.size(), device.size());
    for (size_t i = 0; i < host.size(); ++i) {
      EXPECT_EQ(host[i].completion, device[i].completion) << i;
      EXPECT_TRUE(same_bits(host[i].logits, device[i].logits)) << i;
    }
  }
}

// A router logit that is not finite: the device routing flags the row, and the engine refuses
// with the host engine's sentence and exit code.
TEST(DeviceEngine, RefusesANonFiniteRouterLogitAsTheHostEngineDoes) {
  ModelWeights w = make_synthetic_weights(moe_decode_config(false), DType::kBF16, 1617);
  w.layers[0].router.set(0, NAN);  // every token's logit for expert 0 becomes NaN
  FakeDeviceBackend b("cpu-reference");
  std::string said[2];
  for (const bool host_path : {true, false}) {
    try {
      decode(b, w, host_path);
      ADD_FAILURE() << (host_path ? "host" : "device") << " engine decoded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kRuntime);
      said[host_path ? 0 : 1] = e.what();
    }
  }
  EXPECT_NE(said[0].find("router logit of row 0, expert 0 is not finite"), std::string::npos)
      << said[0];
  EXPECT_EQ(said[0], said[1]);
}

TEST(DeviceEngine, UploadsWeightsOncePerProcessAndDropsAnotherModels) {
  const DecodeCase c = decode_cases().front();
  const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
  FakeDeviceBackend b("cpu-reference");
  const int tensors = static_cast<int>(weight_tensors(w).size());
  decode(b, w, false);
  EXPECT_EQ(b.ops.uploads_of_weights, tensors);
  decode(b, w, false);
  EXPECT_EQ(b.ops.uploads_of_weights, tensors);  // resident already
  const ModelWeights other = make_synthetic_weights(c.config, c.dtype, 1617);
  decode(b, other, false);
  EXPECT_EQ(b.ops.uploads_of_weights, 2 * tensors);
  EXPECT_FALSE(b.ops.is_resident(w.embed));
}

TEST(DeviceEngine, RefusesADecodeThatDoesNotFitWithExit3) {
  const DecodeCase c = decode_cases().front();
  const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 1616);
  FakeDeviceBackend b("cpu-reference");
  const std::vector<int32_t> capacity = {26, 12, 49, 18, 35, 42};  // prompt + 9 per sequence
  const DeviceDecodeFootprint f = device_decode_footprint(w, capacity, 6 * 16, 16, 0, true);
  EXPECT_GE(f.trace, 256.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(f.kv_cache,
                   c.config.layers * PagedKvCache::bytes_for(capacity, 16, c.config.num_kv_heads,
                                                             c.config.head_dim, c.dtype));
  b.ops.free = static_cast<size_t>(f.total() - 1);  // weights still to upload on top of that
  try {
    decode(b, w, false);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    const std::string what = e.what();
    EXPECT_NE(what.find("GiB of device memory"), std::string::npos) << what;
    EXPECT_NE(what.find("are free"), std::string::npos) << what;
  }
  EXPECT_EQ(b.ops.uploads_of_weights, 0);  // refused before anything was uploaded
}

}  // namespace
}  // namespace nvdet::testing
