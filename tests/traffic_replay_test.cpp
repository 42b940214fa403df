// A replay of serving traffic (lib/model/traffic_replay.h) on the CPU backends, with a tiny
// seeded model: on cpu-invariant (and cpu-portable) a probe decoded alone gives the same bits as
// the probe under any traffic, and a prompt's prefix-cache hit holds the same K and V bits as a
// cold prefill of it, while cpu-variant shows both checks can fail; every step runs every GEMM
// over all its rows and the attention ops over their own; and the device-resident engine (on
// host memory) runs mixed steps as the host engine does, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "lib/backend/backend.h"
#include "lib/model/decoder.h"
#include "lib/model/model_weights.h"
#include "tests/device_decode_fixture.h"
#include "tests/host_memory_device_ops.h"
#include "tests/traffic_fixture.h"

namespace nvdet::testing {
namespace {

// The fixture's Llama layout (GQA, llama3 RoPE scaling) at a quarter of its width.
ModelConfig tiny_model() {
  ModelConfig c = decode_cases().front().config;
  c.hidden = 64;
  c.head_dim = 16;
  c.intermediate = 128;
  c.vocab = 256;
  return c;
}

struct Replayed {
  SequenceResult probe;
  TraceRecorder trace;
  int64_t steps_with_others = 0;  // the probe's steps that other requests' rows shared
  bool chunked = false;           // its prompt came in more than one chunk
};

Replayed replay(Backend& b, const ModelWeights& w, const Scenario& s, int64_t seed, int32_t max_new,
                DecodePath path = DecodePath::kHost) {
  Replayed out;
  TrafficReplay r(b, w, traffic_requests(s, w.config.vocab, seed, max_new), traffic_options(path),
                  {0}, &out.trace, nullptr);
  out.probe = r.run().at(0);
  for (const ProbeStep& p : out.probe.steps) {
    out.chunked = out.chunked || (p.step == 0 && p.engine_steps.size() > 1);
    for (const EngineStep& e : p.engine_steps) out.steps_with_others += e.requests.size() > 1;
  }
  return out;
}

SequenceResult alone(Backend& b, const ModelWeights& w, const Scenario& s, int32_t max_new,
                     TraceRecorder* trace) {
  DecodeOptions o;
  o.page_size = 8;
  o.max_new_tokens = max_new;
  o.path = DecodePath::kHost;
  const std::vector<int32_t> prompt =
      synthetic_prompt(s.seed, 0, s.model.prompt_len, w.config.vocab);
  return greedy_decode(b, w, {prompt}, {0}, o, trace, nullptr).at(0);
}

TEST(TrafficReplay, ProbeAloneEqualsProbeUnderTrafficOnInvariantBackends) {
  const Scenario s = traffic_scenario(10, 21, false);
  const ModelWeights w = make_synthetic_weights(tiny_model(), DType::kBF16, 3402);
  for (const char* name : {"cpu-invariant", "cpu-portable"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Backend> b = make_backend(name);
    TraceRecorder alone_trace;
    const SequenceResult ref = alone(*b, w, s, 10, &alone_trace);
    bool any_chunked = false;
    for (int64_t seed = 1; seed <= 4; ++seed) {
      SCOPED_TRACE("traffic_seed " + std::to_string(seed));
      const Replayed got = replay(*b, w, s, seed, 10);
      EXPECT_GT(got.steps_with_others, 5);  // the probe did share its steps
      any_chunked = any_chunked || got.chunked;
      EXPECT_EQ(got.probe.completion, ref.completion);
      EXPECT_TRUE(same_bits(got.probe.logits, ref.logits));
      // Every traced tensor too: the prompt's rows gathered over its chunks, then each step.
      EXPECT_EQ(got.trace.keys, alone_trace.keys);
      EXPECT_TRUE(got.trace.bytes == alone_trace.bytes);
    }
    EXPECT_TRUE(any_chunked);  // some replay cut the probe's prompt
  }
}

// The same comparison in fp32 on cpu-variant, whose GEMM and attention plans follow the rows a
// step holds: the probe's bits differ from alone under some traffic, so the check above can fail.
TEST(TrafficReplay, ProbeUnderTrafficDiffersOnTheVariantBackend) {
  const Scenario s = traffic_scenario(10, 21, false);
  const ModelWeights w = make_synthetic_weights(tiny_model(), DType::kFP32, 3402);
  std::unique_ptr<Backend> b = make_backend("cpu-variant");
  const SequenceResult ref = alone(*b, w, s, 10, nullptr);
  int differ = 0;
  for (int64_t seed = 1; seed <= 4; ++seed)
    differ += !same_bits(replay(*b, w, s, seed, 10).probe.logits, ref.logits);
  EXPECT_GT(differ, 0);
}

// Request B's prompt is the shared prefix (16 tokens, two pages) and 6 tokens of its own. Cold: B
// alone, its prompt in one step. Hit: request A (the prefix and 10 tokens) first, prefilled in
// chunks of 8 under a budget of 8; B then takes A's two pages from the prefix cache. B's K and V
// of all 22 positions, every layer, as they stand once its prompt is in.
struct KvOfB {
  std::vector<HostTensor> layers;
  int32_t cached = 0;
};

KvOfB kv_of_b(Backend& b, const ModelWeights& w, bool with_a) {
  const std::vector<int32_t> prefix = synthetic_prompt(77, 1, 16, w.config.vocab);
  std::vector<int32_t> a_prompt = prefix, b_prompt = prefix;
  for (int32_t t : synthetic_prompt(77, 2, 10, w.config.vocab)) a_prompt.push_back(t);
  for (int32_t t : synthetic_prompt(77, 3, 6, w.config.vocab)) b_prompt.push_back(t);
  std::vector<TrafficRequest> requests;
  if (with_a) requests.push_back({"r0", -1, 0, a_prompt, 4});
  requests.push_back({"probe 0", 0, with_a ? 4 : 0, b_prompt, 3});
  TrafficRunOptions o = traffic_options(DecodePath::kHost);
  o.scheduler = {with_a ? 8 : 32, 4, true, true};
  TrafficReplay r(b, w, requests, o, {0}, nullptr, nullptr);
  const size_t index_of_b = requests.size() - 1;
  KvOfB out;
  r.after_step = [&](const StepPlan&) {
    const RequestState& st = r.scheduler().state(index_of_b);
    if (st.output.size() != 1 || !out.layers.empty()) return;
    for (int32_t l = 0; l < w.config.layers; ++l)
      out.layers.push_back(r.cached_kv(l, index_of_b, 22));
    out.cached = st.cached;
  };
  r.run();
  return out;
}

TEST(TrafficReplay, PrefixCacheHitHoldsTheColdPrefillsKvBits) {
  for (const DType dtype : {DType::kBF16, DType::kFP32}) {
    const ModelWeights w = make_synthetic_weights(tiny_model(), dtype, 3403);
    for (const char* name : {"cpu-invariant", "cpu-portable"}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dtype)));
      std::unique_ptr<Backend> b = make_backend(name);
      const KvOfB cold = kv_of_b(*b, w, false), hit = kv_of_b(*b, w, true);
      EXPECT_EQ(cold.cached, 0);
      EXPECT_EQ(hit.cached, 16);  // both prefix pages came from A
      ASSERT_EQ(cold.layers.size(), 2u);
      ASSERT_EQ(hit.layers.size(), 2u);
      for (size_t l = 0; l < 2; ++l) EXPECT_TRUE(same_bits(cold.layers[l], hit.layers[l])) << l;
    }
  }
  // cpu-variant's prefill attention cuts its reduction at the chunk start: A's chunks of 8 leave
  // other bits in the cached pages than B's cold prefill in one chunk.
  const ModelWeights w = make_synthetic_weights(tiny_model(), DType::kFP32, 3403);
  std::unique_ptr<Backend> b = make_backend("cpu-variant");
  const KvOfB cold = kv_of_b(*b, w, false), hit = kv_of_b(*b, w, true);
  EXPECT_EQ(hit.cached, 16);
  EXPECT_FALSE(same_bits(cold.layers.at(1), hit.layers.at(1)));
}

// Records every backend call: its op and the rows it computed.
class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(const std::string& name) : inner_(make_backend(name)) {}
  const BackendInfo& info() const override { return inner_->info(); }
  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    int64_t rows = 0;
    if (const auto* g = std::get_if<GemmArgs>(&args)) rows = g->a->dim(0);
    if (const auto* n = std::get_if<RmsNormArgs>(&args)) rows = n->x->dim(0);
    if (const auto* d = std::get_if<AttentionDecodeArgs>(&args)) rows = d->q->dim(0);
    if (const auto* p = std::get_if<AttentionPrefillArgs>(&args)) rows = p->q->dim(0);
    calls.push_back({op_kind(args), rows});
    return inner_->run(args, notes);
  }
  struct Call {
    OpKind op;
    int64_t rows;
  };
  std::vector<Call> calls;

 private:
  std::unique_ptr<Backend> inner_;
};

TEST(TrafficReplay, AStepRunsEveryGemmOverAllItsRowsAndEachAttentionOpOverItsOwn) {
  const Scenario s = traffic_scenario(8, 21, true);
  const ModelWeights w = make_synthetic_weights(tiny_model(), DType::kBF16, 3404);
  RecordingBackend b("cpu-invariant");
  TrafficReplay r(b, w, traffic_requests(s, w.config.vocab, 5, 6),
                  traffic_options(DecodePath::kHost), {0}, nullptr, nullptr);
  int mixed = 0;
  r.after_step = [&](const StepPlan& plan) {
    const int64_t rows = plan.decode_rows() + plan.prefill_rows();
    int64_t heads = 0;
    for (const ScheduledRows& x : plan.rows) heads += x.produces_token;
    int gemms = 0, decode_calls = 0, prefill_calls = 0;
    for (const RecordingBackend::Call& c : b.calls) {
      if (c.op == OpKind::kGemm) {
        ++gemms;
        // The layers' projections see the step's rows; the LM head, one row per new token.
        EXPECT_TRUE(c.rows == rows || c.rows == heads) << c.rows;
        if (gemms <= 4 * w.config.layers) EXPECT_EQ(c.rows, rows);
      }
      if (c.op == OpKind::kAttentionDecode) {
        ++decode_calls;
        EXPECT_EQ(c.rows, plan.decode_rows());
      }
      if (c.op == OpKind::kAttentionPrefill) {
        ++prefill_calls;
        EXPECT_EQ(c.rows, plan.prefill_rows());
      }
    }
    EXPECT_EQ(gemms, 4 * w.config.layers + (heads > 0 ? 1 : 0));
    EXPECT_EQ(decode_calls, plan.decode_rows() > 0 ? w.config.layers : 0);
    EXPECT_EQ(prefill_calls, plan.prefill_rows() > 0 ? w.config.layers : 0);
    mixed += plan.decode_rows() > 0 && plan.prefill_rows() > 0;
    b.calls.clear();
  };
  r.run();
  EXPECT_GT(mixed, 3);
}

TEST(TrafficReplay, DeviceEngineRunsMixedStepsAsTheHostEngineDoes) {
  for (const DecodeCase& c : decode_cases()) {
    const ModelWeights w = make_synthetic_weights(c.config, c.dtype, 3405);
    const Scenario s = traffic_scenario(8, 21, true);
    for (const char* cpu : {"cpu-reference", "cpu-variant"}) {
      SCOPED_TRACE(c.name + " " + cpu);
      FakeDeviceBackend b(cpu);
      const Replayed host = replay(b, w, s, 2, 6, DecodePath::kHost);
      const Replayed device = replay(b, w, s, 2, 6, DecodePath::kDevice);
      EXPECT_GT(host.steps_with_others, 3);
      EXPECT_EQ(host.probe.completion, device.probe.completion);
      EXPECT_TRUE(same_bits(host.probe.logits, device.probe.logits));
      EXPECT_GT(host.trace.keys.size(), 50u);
      EXPECT_EQ(host.trace.keys, device.trace.keys);
      EXPECT_TRUE(host.trace.bytes == device.trace.bytes);
      ASSERT_EQ(host.probe.steps.size(), device.probe.steps.size());
      for (size_t i = 0; i < host.probe.steps.size(); ++i) {
        const ProbeStep &h = host.probe.steps[i], &d = device.probe.steps[i];
        ASSERT_EQ(h.engine_steps.size(), d.engine_steps.size());
        for (size_t e = 0; e < h.engine_steps.size(); ++e) {
          EXPECT_EQ(h.engine_steps[e].notes, d.engine_steps[e].notes);
          EXPECT_FALSE(h.engine_steps[e].notes.empty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace nvdet::testing
