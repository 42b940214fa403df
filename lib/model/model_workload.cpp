// op: model. Each probed request is one prompt decoded greedily among the context's batch. Its
// output is the logits of every step ([max_new_tokens, vocab] fp32; step 0 = the logits after the
// prompt), its completion the generated ids, and its trace one XXH3-128 hash per intermediate
// tensor of that request (its rows only) per (step, layer, op), so the runner can name the first
// op whose bits parted (decoder.h lists the ops and their order).
#include <algorithm>
#include <cmath>
#include <map>

#include "lib/model/checkpoint.h"
#include "lib/model/model_runner.h"
#include "lib/workloads/footprint.h"
#include "lib/workloads/workload.h"

namespace nvdet {
namespace {

// Hashes each tensor of each watched request into its trace (or its scoring pass's trace).
class TraceHasher final : public TensorObserver {
 public:
  TraceHasher(std::vector<RequestOutput>& outputs, bool scoring)
      : outputs_(outputs), scoring_(scoring) {}
  void observe(size_t watched, int32_t step, int32_t layer, std::string_view op,
               const HostTensor& rows) override {
    RequestOutput& o = outputs_[watched];
    (scoring_ ? o.score_trace : o.trace)
        .push_back({step, layer, std::string(op), hash_bytes({rows.data(), rows.nbytes()})});
  }

 private:
  std::vector<RequestOutput>& outputs_;
  bool scoring_;
};

// bench_case: the LM head GEMM of one decode step ([batch, hidden] x [vocab, hidden]^T, fp32
// out), the largest single GEMM of a decode step and the one whose vendor heuristics see the
// batch size as m. Its input rows are seeded (timing does not depend on their values).
struct LmHeadBench final : BenchCase {
  std::shared_ptr<const ModelWeights> weights;
  HostTensor a;
};

class ModelWorkload final : public Workload {
 public:
  explicit ModelWorkload(const Scenario& s) : runner_(s) {}

  std::vector<std::string> coord_names() const override { return {"step", "vocab"}; }

  std::vector<RequestOutput> run(Backend& backend, const Context& c, RunNotes* notes) override {
    const Scenario& s = runner_.scenario();
    std::vector<RequestOutput> outputs(s.requests.size());
    TraceHasher hasher(outputs, false);
    std::vector<SequenceResult> results =
        runner_.run(backend, c, s.requests, &hasher, notes, &generated_[c.index]);
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].request = s.requests[i];
      outputs[i].output = std::move(results[i].logits);
      outputs[i].completion = std::move(results[i].completion);
      outputs[i].traffic_steps = std::move(results[i].steps);
    }
    if (runner_.scoring()) {
      std::vector<std::vector<int32_t>> completions;
      for (const RequestOutput& o : outputs) completions.push_back(o.completion);
      TraceHasher score_hasher(outputs, true);
      std::vector<HostTensor> scored =
          runner_.score(backend, c, s.requests, completions, &score_hasher, notes);
      for (size_t i = 0; i < outputs.size(); ++i) {
        outputs[i].score_logits = std::move(scored[i]);
        // The scoring pass reports in pass order; the decode's trace is in step order.
        std::stable_sort(outputs[i].score_trace.begin(), outputs[i].score_trace.end(),
                         [](const TraceEntry& a, const TraceEntry& b) { return a.step < b.step; });
      }
    }
    return outputs;
  }

  // What the context's last run generated: batch x max_new_tokens, or under serving traffic
  // every request's tokens until the probes finished.
  int64_t generated_tokens(const Context& c) const override {
    const auto it = generated_.find(c.index);
    return it != generated_.end() ? it->second : 0;
  }

  std::unique_ptr<BenchCase> bench_case(const Context& c) override {
    auto bc = std::make_unique<LmHeadBench>();
    bc->weights = runner_.shared_weights();
    const ModelConfig& cfg = bc->weights->config;
    const int64_t m = static_cast<int64_t>(runner_.batch_for(c).prompts.size());
    bc->a = HostTensor(bc->weights->dtype, {m, cfg.hidden});
    fill_normal(bc->a, runner_.scenario().seed, uint64_t{7} << 52);
    GemmArgs g;
    g.a = &bc->a;
    g.w = &bc->weights->lm_head;
    g.out_dtype = DType::kFP32;
    bc->args = g;
    const double k = cfg.hidden, n = cfg.vocab, size = dtype_size(bc->weights->dtype);
    bc->flops = 2.0 * m * n * k;
    bc->bytes = (m * k + n * k) * size + m * n * 4.0;
    return bc;
  }

 private:
  ModelRunner runner_;
  std::map<int, int64_t> generated_;  // by context index
};

}  // namespace

std::unique_ptr<Workload> make_model_workload(const Scenario& s) {
  return std::make_unique<ModelWorkload>(s);
}

Footprint model_footprint(const Scenario& s) {
  const ModelSpec& m = s.model;
  double hidden = m.hidden, layers = m.layers, heads = m.num_heads, kv_heads = m.num_kv_heads,
         inter = m.intermediate, vocab = m.vocab;
  double head_dim = m.head_dim ? m.head_dim : (m.num_heads ? m.hidden / m.num_heads : 0);
  double mlp_weights = layers * 3 * inter * hidden;  // every layer's MLP, every expert counted
  if (!m.checkpoint.empty()) {
    const ModelConfig c = read_hf_config(m.checkpoint);
    hidden = c.hidden, layers = c.layers, heads = c.num_heads, kv_heads = c.num_kv_heads,
    inter = c.intermediate, vocab = c.vocab, head_dim = c.head_dim;
    mlp_weights = 0;
    for (int32_t l = 0; l < c.layers; ++l) mlp_weights += c.mlp_weight_elems(l);
    // An MoE pass holds the router logits and, at most, every row's k experts' gate/up outputs.
    if (c.is_moe()) {
      inter = std::max(inter, static_cast<double>(c.experts_per_token) * c.expert_intermediate);
    }
  }
  double prompt = m.prompt_len;
  for (const auto& pr : m.prompts) prompt = std::max(prompt, static_cast<double>(pr.size()));
  prompt = axis_max(s, Axis::kPromptLen, prompt);
  double new_tokens = axis_max(s, Axis::kMaxNewTokens, m.max_new_tokens);
  double batch = batch_max(s);
  // The sequences decoded over the run and the rows of its largest pass: the batch and its
  // prompts in a fixed batch; under serving traffic every request of the replay, at most
  // max_num_seqs of them at once (the KV pool) and max_num_batched_tokens rows a step.
  double sequences = batch, pass_rows = batch * prompt, probed = batch;
  if (const TrafficSpec& t = s.traffic; t.enabled) {
    const double prefix = t.prefix_groups > 0 ? t.prefix_len : 0;
    double traffic_prompt = t.prompt_len.max;
    if (!t.prompts.empty()) {
      traffic_prompt = 0;
      for (const auto& pr : t.prompts)
        traffic_prompt = std::max(traffic_prompt, static_cast<double>(pr.size()));
    }
    prompt = std::max(prompt + (t.probe_prefix >= 0 ? prefix : 0), traffic_prompt + prefix);
    new_tokens = std::max<double>(new_tokens, t.max_new_tokens.max);
    probed = static_cast<double>(s.requests.size());
    sequences = probed + t.requests;
    batch =
        std::min(axis_max(s, Axis::kMaxNumSeqs, static_cast<double>(t.max_num_seqs)), sequences);
    pass_rows = std::min(
        axis_max(s, Axis::kMaxNumBatchedTokens, static_cast<double>(t.max_num_batched_tokens)),
        sequences * (prompt + new_tokens));
  }
  const double in = dtype_bytes(s.dtype);
  const double q = heads * head_dim, kv = kv_heads * head_dim;
  Footprint p;
  const double per_layer = hidden * (q + 2 * kv) + q * hidden + 2 * hidden;
  // embed + LM head, attention and norms, every MLP, the final norm
  p.weights = (2 * vocab * hidden + layers * per_layer + mlp_weights + hidden) * in;
  // tp > 1 (tp_engine.h): every rank's shards of the layers' projections, a second copy of them.
  if (axis_max(s, Axis::kTp, 1) > 1) p.weights += (layers * per_layer + mlp_weights) * in;
  p.kv = batch * (prompt + new_tokens) * layers * 2 * kv * in;
  p.inputs = sequences * prompt * hidden * in;
  p.outputs = probed * new_tokens * vocab * 4;  // the probed requests' logits rows
  // Activations of one prefill pass in fp32: residual, q/k/v, MLP (gate and up), logits row.
  p.workspace = pass_rows * (2 * hidden + q + 2 * kv + 2 * inter) * 4 + batch * vocab * 4;
  // A CPU backend widens each GEMM's weight to fp32 when it runs it (the largest: the LM head or
  // an MLP projection) and the activations it multiplies; cpu-reference accumulates in double.
  const double widest = std::max({vocab * hidden, inter * hidden, hidden * (q + 2 * kv)});
  const double rows = pass_rows;
  const double tokens = prompt + new_tokens;
  p.token_layers = sequences * tokens * layers;
  p.attention_pair_layers = sequences * tokens * (tokens + 1) / 2 * layers;
  p.cpu_copies = widest * 4 + rows * std::max(hidden, inter) * (4 + 8) + batch * vocab * 8;
  if (m.score) {
    // The scoring pass: score_batch sequences of prompt + completion in one pass (its KV cache,
    // its activations in fp32, and the scored request's logits rows).
    const double score_rows = axis_max(s, Axis::kScoreBatch, m.score_batch) * (prompt + new_tokens);
    p.kv += score_rows * layers * 2 * kv * in;
    p.workspace = std::max(p.workspace, score_rows * (2 * hidden + q + 2 * kv + 2 * inter) * 4 +
                                            new_tokens * vocab * 4);
    p.token_layers += score_rows * layers;
  }
  return p;
}

}  // namespace nvdet
