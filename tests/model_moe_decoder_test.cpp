// The decoder's MoE layer on the host path: each expert's gate/up and down GEMMs are backend
// calls over exactly the rows routed to that expert (the trace's nonzero rows of
// expert<e>.gate_up are those rows), a dense layer of a sparse-step model keeps its dense MLP,
// and a one-ulp change planted in one expert's down GEMM is where the traces first part, under
// that expert's name (what `nvdet bisect` reports).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <tuple>

#include "lib/backend/backend.h"
#include "lib/model/checkpoint.h"
#include "lib/model/decoder.h"
#include "tests/model_oracle.h"

namespace nvdet::testing {
namespace {

// cpu-invariant, recording every GEMM's weight and row count; optionally adding one ulp to
// element 0 of the `plant_at`-th GEMM call (0-based) whose weight is `plant_w`.
class RecordingBackend final : public Backend {
 public:
  RecordingBackend() : inner_(make_backend("cpu-invariant")) {}
  const BackendInfo& info() const override { return inner_->info(); }
  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    HostTensor out = inner_->run(args, notes);
    if (const auto* g = std::get_if<GemmArgs>(&args)) {
      calls.push_back({g->w, g->a->dim(0)});
      if (g->w == plant_w && seen_++ == plant_at) {
        uint32_t bits;
        std::memcpy(&bits, out.data(), 4);
        ++bits;  // fp32 out: the next float up
        std::memcpy(out.mutable_data(), &bits, 4);
        ++planted;
      }
    }
    return out;
  }
  std::vector<std::pair<const HostTensor*, int64_t>> calls;
  const HostTensor* plant_w = nullptr;
  int64_t plant_at = -1;
  int planted = 0;

 private:
  std::unique_ptr<Backend> inner_;
  int64_t seen_ = 0;
};

struct Traced {
  int32_t step, layer;
  std::string op;
  HostTensor rows;
};

class Recorder final : public TensorObserver {
 public:
  void observe(size_t watched, int32_t step, int32_t layer, std::string_view op,
               const HostTensor& rows) override {
    if (watched == 0) entries.push_back({step, layer, std::string(op), rows});
  }
  std::vector<Traced> entries;
};

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 17, 42, 99, 5, 200, 31}, {7, 7, 8, 250, 3}, {100, 1, 64, 128}};

int64_t nonzero_rows(const HostTensor& t) {
  int64_t n = 0;
  for (int64_t r = 0; r < t.dim(0); ++r) {
    bool any = false;
    for (int64_t c = 0; c < t.dim(1) && !any; ++c) any = t.get(r * t.dim(1) + c) != 0.0f;
    n += any;
  }
  return n;
}

TEST(ModelMoeDecoder, ExpertGemmsSeeExactlyTheirRoutedRows) {
  // qwen3moe-sparse-t5: layer 0 dense (decoder_sparse_step 2), layer 1 4 experts, top-2. One
  // prompt alone, so that its trace rows are every row of each pass.
  const ModelWeights w =
      load_hf_checkpoint(fixture_dir("qwen3moe-sparse-t5").string(), DType::kFP32);
  ASSERT_FALSE(w.config.is_moe_layer(0));
  ASSERT_TRUE(w.config.is_moe_layer(1));
  RecordingBackend backend;
  Recorder trace;
  DecodeOptions opt;
  opt.max_new_tokens = 3;
  opt.path = DecodePath::kHost;
  greedy_decode(backend, w, {kPrompts[0]}, {0}, opt, &trace, nullptr);

  const LayerWeights& dense = w.layers[0];
  const LayerWeights& moe = w.layers[1];
  EXPECT_TRUE(dense.router.empty());
  EXPECT_TRUE(moe.gate_up.empty());
  // Per step: the rows of the pass, and each expert's GEMM row counts in call order.
  const int64_t k = w.config.experts_per_token;
  int32_t step = -1;
  int64_t pass_rows = 0, routed_total = 0;
  std::map<std::pair<int32_t, int>, int64_t> gate_up_rows, down_rows;
  for (const auto& [weight, m] : backend.calls) {
    if (weight == &dense.qkv) {
      if (step >= 0) EXPECT_EQ(routed_total, pass_rows * k) << "step " << step;
      ++step;
      pass_rows = m;
      routed_total = 0;
    }
    EXPECT_NE(weight, &dense.router);
    if (weight == &dense.gate_up) EXPECT_EQ(m, pass_rows);
    if (weight == &moe.router) EXPECT_EQ(m, pass_rows);
    for (int e = 0; e < w.config.num_experts; ++e) {
      if (weight == &moe.expert_gate_up[e]) {
        EXPECT_GE(m, 1);  // an expert that got no rows makes no call
        gate_up_rows[{step, e}] = m;
        routed_total += m;
      }
      if (weight == &moe.expert_down[e]) down_rows[{step, e}] = m;
    }
  }
  EXPECT_EQ(routed_total, pass_rows * k) << "step " << step;
  EXPECT_EQ(step, 2);
  EXPECT_EQ(gate_up_rows, down_rows);
  // The trace's expert<e>.gate_up has a nonzero row exactly where a row went to expert e.
  int checked = 0;
  for (const Traced& t : trace.entries) {
    if (t.layer != 1 || t.op.rfind("expert", 0) != 0 || t.op.find(".gate_up") == std::string::npos)
      continue;
    const int e = std::stoi(t.op.substr(6));
    const auto it = gate_up_rows.find({t.step, e});
    EXPECT_EQ(nonzero_rows(t.rows), it == gate_up_rows.end() ? 0 : it->second) << t.op;
    ++checked;
  }
  EXPECT_EQ(checked, 3 * w.config.num_experts);  // every expert, every step
  // The layer's ops, in order.
  std::vector<std::string> ops;
  for (const Traced& t : trace.entries)
    if (t.step == 1 && t.layer == 1) ops.push_back(t.op);
  ASSERT_GE(ops.size(), 12u);
  const std::vector<std::string> tail(ops.end() - 12, ops.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"mlp_norm", "router", "expert0.gate_up", "expert0.down",
                                            "expert1.gate_up", "expert1.down", "expert2.gate_up",
                                            "expert2.down", "expert3.gate_up", "expert3.down",
                                            "combine", "mlp_residual"}));
}

TEST(ModelMoeDecoder, PlantedChangeInOneExpertIsWhereTracesPart) {
  const ModelWeights w = load_hf_checkpoint(fixture_dir("mixtral-t4").string(), DType::kFP32);
  DecodeOptions opt;
  opt.max_new_tokens = 4;
  opt.path = DecodePath::kHost;
  RecordingBackend clean;
  Recorder a;
  greedy_decode(clean, w, kPrompts, {0}, opt, &a, nullptr);
  // The first expert down GEMM of layer 1 in decode step 2 whose rows include prompt 0's: find
  // it through the clean trace (its expert<e>.down row of step 2 is nonzero).
  int target = -1;
  for (const Traced& t : a.entries) {
    if (t.step == 2 && t.layer == 1 && t.op.find(".down") != std::string::npos &&
        nonzero_rows(t.rows) == 1) {
      target = std::stoi(t.op.substr(6));
      break;
    }
  }
  ASSERT_GE(target, 0);
  const HostTensor* victim = &w.layers[1].expert_down[target];
  // Its calls before step 2's: prefill and step 1 (at most one call each).
  int64_t before = 0;
  int32_t step = -1;
  for (const auto& [weight, m] : clean.calls) {
    if (weight == &w.layers[0].qkv) ++step;
    if (weight == victim && step < 2) ++before;
  }
  RecordingBackend planted;
  planted.plant_w = victim;
  planted.plant_at = before;
  Recorder b;
  greedy_decode(planted, w, kPrompts, {0}, opt, &b, nullptr);
  ASSERT_EQ(planted.planted, 1);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  // Element 0 of the call's output is its first routed row; whether that row is prompt 0's
  // decides whether prompt 0's trace sees the change; prompt 0 is the pass's row 0, so a call
  // that includes it starts with it.
  const Traced* first = nullptr;
  for (size_t i = 0; i < a.entries.size() && !first; ++i) {
    const HostTensor& x = a.entries[i].rows;
    const HostTensor& y = b.entries[i].rows;
    ASSERT_EQ(a.entries[i].op, b.entries[i].op);
    if (x.nbytes() != y.nbytes() || std::memcmp(x.data(), y.data(), x.nbytes()) != 0) {
      first = &b.entries[i];
    }
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->step, 2);
  EXPECT_EQ(first->layer, 1);
  EXPECT_EQ(first->op, "expert" + std::to_string(target) + ".down");
}

}  // namespace
}  // namespace nvdet::testing
