#include "lib/model/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "lib/backend/device_decode_ops.h"
#include "lib/core/error.h"
#include "lib/model/decode_pass.h"
#include "lib/model/device_decoder.h"
#include "lib/model/host_ops.h"
#include "lib/model/kv_cache.h"
#include "lib/model/moe_combine.h"
#include "lib/model/sampler.h"
#include "lib/model/tp_engine.h"
#include "lib/ops/moe_routing.h"

namespace nvdet {
namespace {

HostTensor gather_rows(const HostTensor& t, const std::vector<int64_t>& rows) {
  std::vector<int64_t> shape = t.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  HostTensor out(t.dtype(), shape);
  const size_t row_bytes = static_cast<size_t>(t.row_elems()) * dtype_size(t.dtype());
  std::byte* dst = out.mutable_data();
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(dst + i * row_bytes, t.data() + rows[i] * row_bytes, row_bytes);
  }
  return out;
}

// The Q columns of qkv as the attention ops take them: [rows, heads, head_dim].
HostTensor query_of(const HostTensor& qkv, const ModelConfig& c) {
  const int64_t rows = qkv.dim(0);
  HostTensor q(qkv.dtype(), {rows, c.num_heads, c.head_dim});
  const size_t elem = dtype_size(qkv.dtype());
  const size_t q_bytes = static_cast<size_t>(c.q_dim()) * elem;
  std::byte* dst = q.mutable_data();
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * q_bytes, qkv.data() + r * qkv.dim(1) * elem, q_bytes);
  }
  return q;
}

// The host engine: every op through Backend::run with host tensors, the KV cache on the host,
// the elementwise steps in host_ops.h.
// kAuto: the device-resident path wherever a backend offers it (its equality with the host path
// is a GPU test), unless NVDET_DEVICE_DECODE=0 opts out.
bool use_device_path(DecodePath path) {
  if (path != DecodePath::kAuto) return path == DecodePath::kDevice;
  const char* v = std::getenv("NVDET_DEVICE_DECODE");
  return v == nullptr || std::string_view(v) != "0";
}

// The "decoder" note's words for the engines (the case's notes say which decoded it).
constexpr const char* kDeviceDecoderNote =
    "device-resident (weights, KV cache and activations on the GPU)";
constexpr const char* kHostDecoderNote = "host (each op through the backend's run)";
class HostEngine final : public PassEngine {
 public:
  HostEngine(Backend& backend, const ModelWeights& w, std::shared_ptr<const KvPageMap> pages,
             PassTrace& trace, RunNotes* notes, const Fp8Scheme& fp8 = {})
      : backend_(backend),
        w_(w),
        c_(w.config),
        trace_(trace),
        notes_(notes),
        rope_(w.config),
        fp8_(fp8) {
    const double bytes =
        c_.layers * PagedKvCache::bytes_for_pages(pages->total_pages(), pages->page_size(),
                                                  c_.num_kv_heads, c_.head_dim, w_.dtype);
    if (bytes > kMaxKvBytes) {
      throw_input_error("the batch's KV cache would take " +
                        std::to_string(static_cast<int64_t>(bytes / (1 << 20))) +
                        " MiB of host memory (limit " +
                        std::to_string(static_cast<int64_t>(kMaxKvBytes / (1 << 20))) +
                        " MiB); lower batch, prompt length or max_new_tokens");
    }
    for (int32_t l = 0; l < c_.layers; ++l) {
      caches_.push_back(
          std::make_unique<PagedKvCache>(pages, c_.num_kv_heads, c_.head_dim, w_.dtype));
    }
  }

  HostTensor cached_kv(int32_t layer, size_t seq, int32_t count) override {
    return caches_.at(static_cast<size_t>(layer))->read(seq, count);
  }

  PassOutput forward(const Pass& p, const std::vector<bool>& want_logits,
                     const char* notes_tag) override {
    HostTensor x = embed_tokens(w_.embed, p.tokens);
    emit(p, -1, "embed", x);
    for (int32_t l = 0; l < c_.layers; ++l) {
      const LayerWeights& L = w_.layers[l];
      const char* tag = l == 0 ? notes_tag : nullptr;
      const HostTensor h = rmsnorm(x, L.attn_norm, tag, "attn_norm");
      emit(p, l, "attn_norm", h);
      HostTensor qkv = gemm(h, L.qkv, L.fp8.qkv, bias_of(L.qkv_bias), w_.dtype, tag, "qkv");
      emit(p, l, "qkv", qkv);
      if (c_.qk_norm) {
        normalize_heads(qkv, 0, c_.num_heads, L.q_norm, tag, "q_norm");
        normalize_heads(qkv, c_.q_dim(), c_.num_kv_heads, L.k_norm, tag, "k_norm");
        emit(p, l, "qk_norm", qkv);
      }
      rope_.apply(qkv, p.positions);
      emit(p, l, "rope", qkv);
      for (size_t i = 0; i < p.seqs.size(); ++i) {
        for (int32_t r = p.row_start[i]; r < p.row_start[i + 1]; ++r) {
          caches_[l]->write(p.seqs[i], p.positions[r], qkv, r, c_.q_dim());
        }
      }
      const HostTensor attn = attention(p, *caches_[l], query_of(qkv, c_), tag);
      emit(p, l, "attention", attn);
      const HostTensor o = gemm(reshaped(attn, {attn.dim(0), c_.q_dim()}), L.o_proj, L.fp8.o_proj,
                                bias_of(L.o_bias), w_.dtype, tag, "o_proj");
      emit(p, l, "o_proj", o);
      x = add(x, o);
      emit(p, l, "attn_residual", x);
      const HostTensor h2 = rmsnorm(x, L.mlp_norm, tag, "mlp_norm");
      emit(p, l, "mlp_norm", h2);
      const HostTensor d =
          c_.is_moe_layer(l) ? moe_mlp(p, l, L, h2, tag) : dense_mlp(p, l, L, h2, tag);
      x = add(x, d);
      emit(p, l, "mlp_residual", x);
    }
    if (p.head_seqs.empty()) return {};
    const HostTensor last = gather_rows(x, p.head_rows);
    const HostTensor fn = rmsnorm(last, w_.final_norm, notes_tag, "final_norm");
    if (trace_.tracing()) trace_.emit_head(p, "final_norm", rows_of(fn));
    const HostTensor logits =
        gemm(fn, w_.lm_head, w_.fp8_lm_head, nullptr, DType::kFP32, notes_tag, "lm_head");
    return head_output(p, trace_, logits, want_logits);
  }

 private:
  // Host memory the batch's KV caches (all layers) may take.
  static constexpr double kMaxKvBytes = 16.0 * (1 << 30);

  void emit(const Pass& p, int32_t layer, std::string_view op, const HostTensor& t) {
    if (trace_.tracing()) trace_.emit(p, layer, op, rows_of(t));
  }

  static const HostTensor* bias_of(const HostTensor& b) { return b.empty() ? nullptr : &b; }

  HostTensor dense_mlp(const Pass& p, int32_t l, const LayerWeights& L, const HostTensor& h,
                       const char* tag) {
    const HostTensor gu =
        gemm(h, L.gate_up, L.fp8.gate_up, bias_of(L.gate_up_bias), w_.dtype, tag, "gate_up");
    emit(p, l, "gate_up", gu);
    const HostTensor act = swiglu(gu);
    emit(p, l, "swiglu", act);
    const HostTensor d = gemm(act, L.down, L.fp8.down, bias_of(L.down_bias), w_.dtype, tag, "down");
    emit(p, l, "down", d);
    return d;
  }

  // An MoE layer's MLP: the router GEMM (fp32 logits), the shared routing (moe_routing.h), then
  // for each expert in ascending order one gate/up GEMM and one down GEMM over exactly the rows
  // routed to it (so a backend's GEMM plan sees the expert's row count, the batch dependence
  // serving MoE kernels have), SwiGLU between them as in the dense MLP, and the combine
  // (moe_combine.h). Traced as "router", "expert<e>.gate_up" and "expert<e>.down" for every
  // expert (a pass row the expert did not receive is zeros there, so that every context traces
  // the same ops in the same order), Qwen2-MoE's "shared_expert.gate_up", "shared_expert.down"
  // and "shared_expert_gate", and "combine".
  HostTensor moe_mlp(const Pass& p, int32_t l, const LayerWeights& L, const HostTensor& h,
                     const char* tag) {
    const int rows = static_cast<int>(h.dim(0)), experts = c_.num_experts;
    const HostTensor logits = gemm(h, L.router, L.fp8.router, nullptr, DType::kFP32, tag, "router");
    emit(p, l, "router", logits);
    const MoeRoute route =
        route_tokens({logits.data_as<float>(), static_cast<size_t>(logits.numel())}, rows, experts,
                     c_.experts_per_token, c_.norm_topk_prob);
    const MoeExpertRows by_expert = group_rows_by_expert(route, experts);
    const std::vector<bool> noted =
        tag && notes_ ? watched_experts(p, route, experts, trace_) : std::vector<bool>();
    // Every expert's gate/up first, then every down: an FP8 dynamic_tensor scale is a max over a
    // whole stage's (token, top-k) rows, as a fused MoE kernel quantises its input buffer
    // (fp8_stage_scheme). The trace keeps the per-expert order.
    const auto fp8_of = [](const std::vector<LayerFp8::Weight>& w, int e) {
      return w.empty() ? nullptr : w[static_cast<size_t>(e)];
    };
    std::vector<std::vector<int64_t>> routed(static_cast<size_t>(experts));
    std::vector<HostTensor> gate_ups(static_cast<size_t>(experts)),
        acts(static_cast<size_t>(experts));
    std::vector<HostTensor> outputs(static_cast<size_t>(experts));
    const auto tag_of = [&](int e) { return !noted.empty() && noted[e] ? tag : nullptr; };
    const Fp8Scheme gate_up_fp8 = stage_fp8({&h}, tag, "experts.gate_up");
    for (int e = 0; e < experts; ++e) {
      const int32_t begin = by_expert.offsets[e], end = by_expert.offsets[e + 1];
      routed[e].assign(by_expert.row.begin() + begin, by_expert.row.begin() + end);
      if (routed[e].empty()) continue;
      const std::string name = "expert" + std::to_string(e);
      if (tag_of(e))
        (*notes_)[std::string(tag) + "." + name + ".rows"] = std::to_string(routed[e].size());
      gate_ups[e] =
          gemm(gather_rows(h, routed[e]), L.expert_gate_up[e], fp8_of(L.fp8.expert_gate_up, e),
               nullptr, w_.dtype, tag_of(e), (name + ".gate_up").c_str(), &gate_up_fp8);
      acts[e] = swiglu(gate_ups[e]);
    }
    std::vector<const HostTensor*> down_inputs;
    for (const HostTensor& a : acts)
      if (!a.empty()) down_inputs.push_back(&a);
    const Fp8Scheme down_fp8 = stage_fp8(down_inputs, tag, "experts.down");
    for (int e = 0; e < experts; ++e) {
      if (routed[e].empty()) continue;
      outputs[e] = gemm(acts[e], L.expert_down[e], fp8_of(L.fp8.expert_down, e), nullptr, w_.dtype,
                        tag_of(e), ("expert" + std::to_string(e) + ".down").c_str(), &down_fp8);
    }
    for (int e = 0; e < experts; ++e) {
      const std::string name = "expert" + std::to_string(e);
      const bool any = !routed[e].empty();
      emit_expert(p, l, name + ".gate_up", any ? &gate_ups[e] : nullptr, routed[e],
                  2 * int64_t{c_.expert_intermediate});
      emit_expert(p, l, name + ".down", any ? &outputs[e] : nullptr, routed[e], c_.hidden);
    }
    if (L.shared_gate_up.empty() && !L.fp8.shared_gate_up) {
      HostTensor out = combine_experts(route, by_expert, outputs, c_.hidden, w_.dtype);
      emit(p, l, "combine", out);
      return out;
    }
    // Qwen2-MoE's shared expert: every row, gated by sigmoid(x · shared_gate) in the combine.
    const HostTensor sgu = gemm(h, L.shared_gate_up, L.fp8.shared_gate_up, nullptr, w_.dtype, tag,
                                "shared_expert.gate_up");
    emit(p, l, "shared_expert.gate_up", sgu);
    const HostTensor shared = gemm(swiglu(sgu), L.shared_down, L.fp8.shared_down, nullptr, w_.dtype,
                                   tag, "shared_expert.down");
    emit(p, l, "shared_expert.down", shared);
    const HostTensor gate =
        gemm(h, L.shared_gate, L.fp8.shared_gate, nullptr, DType::kFP32, tag, "shared_expert_gate");
    emit(p, l, "shared_expert_gate", gate);
    HostTensor out =
        combine_experts(route, by_expert, outputs, c_.hidden, w_.dtype, &shared, &gate);
    emit(p, l, "combine", out);
    return out;
  }

  // An MoE stage's FP8 scheme over all its inputs (fp8_stage_scheme): with dynamic_tensor, the
  // stage-wide scale, noted as "<tag>.<name>.act_scale".
  Fp8Scheme stage_fp8(const std::vector<const HostTensor*>& inputs, const char* tag,
                      const char* name) {
    if (!w_.fp8) return fp8_;
    const Fp8Scheme s = fp8_stage_scheme(fp8_, inputs);
    if (tag && notes_ && s.stage_scale > 0)
      (*notes_)[std::string(tag) + "." + name + ".act_scale"] = fp8_stage_note(s, inputs);
    return s;
  }

  // Traces one expert's tensor as a pass tensor: row r holds the expert's row for pass row r
  // when r was routed to it (`routed`, ascending), zeros otherwise.
  void emit_expert(const Pass& p, int32_t l, const std::string& op, const HostTensor* t,
                   const std::vector<int64_t>& routed, int64_t width) {
    if (!trace_.tracing()) return;
    trace_.emit(p, l, op, [&](int64_t first, int64_t count) {
      HostTensor rows(t ? t->dtype() : w_.dtype, {count, width});
      const auto lo = std::lower_bound(routed.begin(), routed.end(), first);
      const size_t row_bytes = static_cast<size_t>(width) * dtype_size(rows.dtype());
      for (auto it = lo; it != routed.end() && *it < first + count; ++it) {
        std::memcpy(rows.mutable_data() + (*it - first) * row_bytes,
                    t->data() + (it - routed.begin()) * row_bytes, row_bytes);
      }
      return rows;
    });
  }

  // Qwen3's q_norm / k_norm: an RMSNorm over each head_dim-wide head of the `heads` heads that
  // start at column `first` of every qkv row, run on the backend as one [rows * heads, head_dim]
  // rmsnorm call (a per-row reduction like the others), written back in place.
  void normalize_heads(HostTensor& qkv, int64_t first, int64_t heads, const HostTensor& weight,
                       const char* tag, const char* name) {
    const int64_t rows = qkv.dim(0), width = qkv.dim(1);
    const size_t elem = dtype_size(qkv.dtype());
    const size_t bytes = static_cast<size_t>(heads * c_.head_dim) * elem;
    HostTensor x(qkv.dtype(), {rows * heads, c_.head_dim});
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(x.mutable_data() + r * bytes, qkv.data() + (r * width + first) * elem, bytes);
    }
    const HostTensor y = rmsnorm(x, weight, tag, name);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(qkv.mutable_data() + (r * width + first) * elem, y.data() + r * bytes, bytes);
    }
  }

  HostTensor rmsnorm(const HostTensor& x, const HostTensor& weight, const char* tag,
                     const char* name) {
    return run_op(rmsnorm_args(x, weight, c_, w_.dtype), tag, name);
  }

  // One linear layer: `weight` in the activation dtype, or `fp8` (an FP8 checkpoint's layer)
  // with the run's activation scheme, or an MoE stage's (`stage`).
  HostTensor gemm(const HostTensor& a, const HostTensor& weight, const LayerFp8::Weight& fp8,
                  const HostTensor* bias, DType out_dtype, const char* tag, const char* name,
                  const Fp8Scheme* stage = nullptr) {
    GemmArgs g;
    g.a = &a;
    g.w = &weight;
    g.bias = bias;
    g.out_dtype = out_dtype;
    if (fp8) {
      g.w = nullptr;
      g.fp8_w = fp8.get();
      g.fp8 = stage ? *stage : fp8_;
      g.fp8.format = fp8->format;
      g.fp8.weight_scale = fp8->scale_kind;
    }
    return run_op(g, tag, name);
  }

  HostTensor attention(const Pass& p, const PagedKvCache& cache, const HostTensor& q,
                       const char* tag) {
    if (p.decode_seqs == 0) {
      return run_op(attention_op_args(p, c_, w_.dtype, cache.view(p.seqs, p.kv_lens), q), tag,
                    "attention");
    }
    // A serving step: its decode rows through attention_decode, its prompt chunks through
    // attention_prefill, the outputs back in row order (decode rows first).
    const ServingParts parts = split_serving_pass(p);
    const int64_t d = static_cast<int64_t>(p.decode_seqs);
    const HostTensor q_decode = q.slice_rows(0, d), q_prefill = q.slice_rows(d, q.dim(0) - d);
    const HostTensor decoded =
        run_op(attention_op_args(parts.decode, c_, w_.dtype,
                                 cache.view(parts.decode.seqs, parts.decode.kv_lens), q_decode),
               tag, "attention_decode");
    const HostTensor prefilled =
        run_op(attention_op_args(parts.prefill, c_, w_.dtype,
                                 cache.view(parts.prefill.seqs, parts.prefill.kv_lens), q_prefill),
               tag, "attention_prefill");
    return concat_rows({decoded, prefilled});
  }

  HostTensor run_op(const OpArgs& args, const char* tag, const char* name) {
    return run_noted(backend_, args, notes_, tag, name);
  }

  Backend& backend_;
  const ModelWeights& w_;
  const ModelConfig& c_;
  PassTrace& trace_;
  RunNotes* notes_;
  Rope rope_;
  std::vector<std::unique_ptr<PagedKvCache>> caches_;
  Fp8Scheme fp8_;  // an FP8 checkpoint's activation scheme and accumulation (DecodeOptions::fp8)
};

// The scheduler: checks the inputs, cuts the prompts into prefill passes and then decode steps,
// keeps the greedy tokens and the watched sequences' logits, and hands the watched rows of every
// traced tensor to the observer in trace order.
class BatchDecoder final : public PassTrace {
 public:
  BatchDecoder(Backend& backend, const ModelWeights& w,
               const std::vector<std::vector<int32_t>>& prompts, const std::vector<size_t>& watched,
               const DecodeOptions& options, TensorObserver* observer, RunNotes* notes)
      : backend_(backend),
        w_(w),
        c_(w.config),
        prompts_(prompts),
        watched_(watched),
        options_(options),
        observer_(observer),
        notes_(notes) {}

  std::vector<SequenceResult> run() {
    check_inputs();
    std::vector<int32_t> capacity;
    for (const auto& p : prompts_) {
      capacity.push_back(static_cast<int32_t>(p.size()) + options_.max_new_tokens - 1);
    }
    // The device engine declines FP8 layers (computed on the host path, one backend call per
    // op); so is tensor parallelism (each rank's shard through the backend).
    DeviceDecodeOps* device = use_device_path(options_.path) && !w_.fp8 && options_.tp.tp == 1
                                  ? backend_.device_decode_ops()
                                  : nullptr;
    if (w_.fp8 && options_.tp.tp > 1)
      throw_input_error("tensor parallelism ('tp') is not implemented for FP8 checkpoints");
    if (options_.tp.tp > 1) {
      engine_ = make_tp_engine(backend_, w_, capacity, options_, *this, notes_);
    } else if (device) {
      engine_ = make_device_engine(*device, w_, capacity, max_pass_rows(), options_, *this, notes_);
    } else {
      engine_ = std::make_unique<HostEngine>(
          backend_, w_, std::make_shared<KvPageLayout>(capacity, options_.page_size), *this, notes_,
          options_.fp8);
    }
    watch_index_.assign(prompts_.size(), -1);
    for (size_t i = 0; i < watched_.size(); ++i) watch_index_.at(watched_[i]) = static_cast<int>(i);
    results_.resize(watched_.size());
    for (SequenceResult& r : results_) {
      r.logits = HostTensor(DType::kFP32, {options_.max_new_tokens, c_.vocab});
    }
    pending_.resize(watched_.size());
    last_token_.assign(prompts_.size(), 0);

    prefill();
    for (int32_t step = 1; step < options_.max_new_tokens; ++step) {
      decode(step);
      if (options_.on_step) options_.on_step(step + 1, options_.max_new_tokens);
    }
    if (notes_) {
      (*notes_)["batch"] = std::to_string(prompts_.size());
      (*notes_)["decoder"] = device ? kDeviceDecoderNote
                             : options_.tp.tp > 1
                                 ? "host, tensor parallel over " + std::to_string(options_.tp.tp) +
                                       " simulated ranks (each shard through the backend's run)"
                                 : kHostDecoderNote;
    }
    return std::move(results_);
  }

  bool tracing() const override { return observer_ != nullptr; }
  bool watched(size_t seq) const override { return watch_index_.at(seq) >= 0; }

  // Hands the watched sequences' rows of a pass tensor to the observer (prefill: kept until
  // the prompt is complete).
  void emit(const Pass& p, int32_t layer, std::string_view op, const RowFetch& rows) override {
    if (!observer_) return;
    for (size_t i = 0; i < p.seqs.size(); ++i) {
      const int w = watch_index_[p.seqs[i]];
      if (w < 0) continue;
      deliver(p, w, layer, op, rows(p.row_start[i], p.row_start[i + 1] - p.row_start[i]));
    }
  }

  void emit_head(const Pass& p, std::string_view op, const RowFetch& rows) override {
    if (!observer_) return;
    for (size_t i = 0; i < p.head_seqs.size(); ++i) {
      const int w = watch_index_[p.head_seqs[i]];
      if (w >= 0) deliver(p, w, -1, op, rows(static_cast<int64_t>(i), 1));
    }
  }

 private:
  void check_inputs() const {
    if (prompts_.empty()) throw_input_error("the model's batch holds no prompts");
    if (options_.page_size < 1) throw_input_error("page_size must be at least 1");
    if (options_.max_new_tokens < 1) throw_input_error("max_new_tokens must be at least 1");
    if (options_.prefill_chunk < 0) throw_input_error("prefill_chunk must be at least 1");
    for (const auto& p : prompts_) {
      if (p.empty()) throw_input_error("a prompt of the batch holds no tokens");
      const int64_t length = static_cast<int64_t>(p.size()) + options_.max_new_tokens - 1;
      if (c_.sliding_window > 0 && length > c_.sliding_window) {
        throw_input_error("the model's 'sliding_window' is " + std::to_string(c_.sliding_window) +
                          " tokens but a sequence of this run reaches " + std::to_string(length) +
                          "; sliding-window attention is not implemented, only full attention "
                          "(equal to it while sequences fit the window)");
      }
      for (int32_t id : p) {
        if (id < 0 || id >= c_.vocab) {
          throw_input_error("token id " + std::to_string(id) +
                            " is outside the model's vocabulary (0.." +
                            std::to_string(c_.vocab - 1) + ")");
        }
      }
    }
  }

  int32_t prefill_chunk() const {
    size_t longest = 0;
    for (const auto& p : prompts_) longest = std::max(longest, p.size());
    return options_.prefill_chunk > 0 ? options_.prefill_chunk : static_cast<int32_t>(longest);
  }

  // The most rows any pass holds: the first prefill pass (every prompt's first chunk) or a
  // decode step (one row per sequence).
  int64_t max_pass_rows() const {
    const int64_t chunk = prefill_chunk();
    int64_t first = 0;
    for (const auto& p : prompts_)
      first += std::min<int64_t>(chunk, static_cast<int64_t>(p.size()));
    return std::max<int64_t>(first, static_cast<int64_t>(prompts_.size()));
  }

  void prefill() {
    size_t longest = 0;
    for (const auto& p : prompts_) longest = std::max(longest, p.size());
    const int32_t chunk = prefill_chunk();
    int passes = 0;
    for (int32_t start = 0; start < static_cast<int32_t>(longest); start += chunk, ++passes) {
      Pass p;
      p.prefill = true;
      p.row_start.push_back(0);
      for (size_t s = 0; s < prompts_.size(); ++s) {
        const int32_t len = static_cast<int32_t>(prompts_[s].size());
        if (len <= start) continue;
        const int32_t n = std::min(chunk, len - start);
        p.seqs.push_back(s);
        for (int32_t i = 0; i < n; ++i) {
          p.tokens.push_back(prompts_[s][start + i]);
          p.positions.push_back(start + i);
        }
        p.row_start.push_back(static_cast<int32_t>(p.tokens.size()));
        p.kv_lens.push_back(start + n);
        if (start + n == len) {
          p.head_seqs.push_back(s);
          p.head_rows.push_back(p.row_start.back() - 1);
        }
      }
      run_pass(p, passes == 0 ? "prefill" : nullptr);
    }
    if (notes_) (*notes_)["prefill_passes"] = std::to_string(passes);
    // Step 0's tensors of the watched sequences, whole prompts, in trace order.
    for (size_t w = 0; observer_ && w < pending_.size(); ++w) {
      for (Pending& e : pending_[w]) {
        observer_->observe(w, 0, e.layer, e.op, concat_rows(e.pieces));
      }
      pending_[w].clear();
    }
  }

  void decode(int32_t step) {
    Pass p;
    p.step = step;
    p.row_start.push_back(0);
    for (size_t s = 0; s < prompts_.size(); ++s) {
      const int32_t len = static_cast<int32_t>(prompts_[s].size());
      p.seqs.push_back(s);
      p.tokens.push_back(last_token_[s]);
      p.positions.push_back(len + step - 1);
      p.row_start.push_back(static_cast<int32_t>(s + 1));
      p.kv_lens.push_back(len + step);
      p.head_seqs.push_back(s);
      p.head_rows.push_back(static_cast<int64_t>(s));
    }
    run_pass(p, step == 1 ? "decode" : nullptr);
  }

  // Runs the pass and keeps the greedy choice of every sequence it produced logits for.
  void run_pass(const Pass& p, const char* notes_tag) {
    std::vector<bool> want(p.head_seqs.size());
    for (size_t i = 0; i < p.head_seqs.size(); ++i) {
      want[i] = options_.sampler || watch_index_[p.head_seqs[i]] >= 0;
    }
    const PassOutput out = engine_->forward(p, want, notes_tag);
    const std::vector<int32_t> tokens = options_.sampler ? sampled(p, out) : out.tokens;
    const size_t row_bytes = static_cast<size_t>(c_.vocab) * sizeof(float);
    for (size_t i = 0; i < p.head_seqs.size(); ++i) {
      const size_t s = p.head_seqs[i];
      last_token_[s] = tokens.at(i);
      if (const int w = watch_index_[s]; w >= 0) {
        std::memcpy(results_[w].logits.mutable_data() + p.step * row_bytes, out.logits.at(i).data(),
                    row_bytes);
        results_[w].completion.push_back(last_token_[s]);
      }
    }
  }

  // The sampler's tokens for the pass's head sequences, in their (batch) order.
  std::vector<int32_t> sampled(const Pass& p, const PassOutput& out) const {
    std::vector<uint64_t> ids;
    std::vector<const float*> rows;
    for (size_t i = 0; i < p.head_seqs.size(); ++i) {
      ids.push_back(options_.sampling_ids.at(p.head_seqs[i]));
      rows.push_back(reinterpret_cast<const float*>(out.logits.at(i).data()));
    }
    return options_.sampler->choose(p.step, ids, rows, c_.vocab);
  }

  void deliver(const Pass& p, int w, int32_t layer, std::string_view op, HostTensor rows) {
    if (!p.prefill) {
      observer_->observe(static_cast<size_t>(w), p.step, layer, op, rows);
      return;
    }
    for (Pending& e : pending_[w]) {
      if (e.layer == layer && e.op == op) {
        e.pieces.push_back(std::move(rows));
        return;
      }
    }
    pending_[w].push_back({layer, std::string(op), {std::move(rows)}});
  }

  struct Pending {
    int32_t layer = 0;
    std::string op;
    std::vector<HostTensor> pieces;
  };

  Backend& backend_;
  const ModelWeights& w_;
  const ModelConfig& c_;
  const std::vector<std::vector<int32_t>>& prompts_;
  const std::vector<size_t>& watched_;
  DecodeOptions options_;
  TensorObserver* observer_;
  RunNotes* notes_;
  std::unique_ptr<PassEngine> engine_;
  std::vector<int> watch_index_;
  std::vector<SequenceResult> results_;
  std::vector<std::vector<Pending>> pending_;
  std::vector<int32_t> last_token_;
};

}  // namespace

HostTensor concat_rows(const std::vector<HostTensor>& pieces) {
  if (pieces.size() == 1) return pieces.front();
  std::vector<int64_t> shape = pieces.front().shape();
  shape[0] = 0;
  for (const HostTensor& p : pieces) shape[0] += p.dim(0);
  HostTensor out(pieces.front().dtype(), shape);
  int64_t row = 0;
  for (const HostTensor& p : pieces) {
    copy_rows(p, out, row);
    row += p.dim(0);
  }
  return out;
}

RowFetch rows_of(const HostTensor& t) {
  return [&t](int64_t first, int64_t count) { return t.slice_rows(first, count); };
}

PassOutput head_output(const Pass& p, PassTrace& trace, const HostTensor& logits,
                       const std::vector<bool>& want_logits) {
  if (trace.tracing()) trace.emit_head(p, "logits", rows_of(logits));
  PassOutput out;
  for (size_t i = 0; i < p.head_seqs.size(); ++i) {
    out.tokens.push_back(argmax_row(logits, static_cast<int64_t>(i)));
    out.logits.push_back(want_logits[i] ? logits.slice_rows(static_cast<int64_t>(i), 1)
                                        : HostTensor());
  }
  return out;
}

RmsNormArgs rmsnorm_args(const HostTensor& x, const HostTensor& weight, const ModelConfig& c,
                         DType dtype) {
  RmsNormArgs a;
  a.x = &x;
  a.weight = &weight;
  a.eps = c.rms_eps;
  a.out_dtype = dtype;
  return a;
}

HostTensor run_noted(Backend& backend, const OpArgs& args, RunNotes* notes, const char* tag,
                     const char* name) {
  if (!tag || !notes) return backend.run(args, nullptr);
  RunNotes call_notes;
  HostTensor out = backend.run(args, &call_notes);
  keep_notes(notes, tag, name, call_notes);
  return out;
}

void keep_notes(RunNotes* notes, const char* tag, const char* name, const RunNotes& call_notes) {
  if (!tag || !notes) return;
  for (const auto& [k, v] : call_notes) (*notes)[std::string(tag) + "." + name + "." + k] = v;
}

std::vector<bool> watched_experts(const Pass& p, const MoeRoute& route, int32_t num_experts,
                                  const PassTrace& trace) {
  std::vector<bool> used(static_cast<size_t>(num_experts), false);
  for (size_t i = 0; i < p.seqs.size(); ++i) {
    if (!trace.watched(p.seqs[i])) continue;
    for (int32_t r = p.row_start[i]; r < p.row_start[i + 1]; ++r) {
      for (int j = 0; j < route.top_k; ++j) {
        used[route.expert[static_cast<size_t>(r) * route.top_k + j]] = true;
      }
    }
  }
  return used;
}

namespace {

// The fields decode and prefill attention share: the cache, the heads and the softmax scale.
template <class Args>
Args attention_args(const ModelConfig& c, DType dtype, PagedKv kv) {
  Args a;
  a.kv = std::move(kv);
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.out_dtype = dtype;
  return a;
}

}  // namespace

AttentionDecodeArgs decode_attention_args(const ModelConfig& c, DType dtype, PagedKv kv) {
  return attention_args<AttentionDecodeArgs>(c, dtype, std::move(kv));
}

AttentionPrefillArgs prefill_attention_args(const Pass& p, const ModelConfig& c, DType dtype,
                                            PagedKv kv) {
  auto a = attention_args<AttentionPrefillArgs>(c, dtype, std::move(kv));
  a.q_start = p.row_start;
  a.prefix_len = p.prefix_lens;
  a.prefix_len.resize(p.seqs.size(), 0);
  return a;
}

ServingParts split_serving_pass(const Pass& p) {
  ServingParts parts;
  parts.prefill.prefill = true;
  const size_t d = p.decode_seqs;
  parts.decode.row_start.push_back(0);
  parts.prefill.row_start.push_back(0);
  for (size_t i = 0; i < p.seqs.size(); ++i) {
    Pass& part = i < d ? parts.decode : parts.prefill;
    part.seqs.push_back(p.seqs[i]);
    part.kv_lens.push_back(p.kv_lens[i]);
    part.prefix_lens.push_back(p.prefix_lens.empty() ? 0 : p.prefix_lens[i]);
    const int32_t first = i < d ? 0 : p.row_start[d];
    part.row_start.push_back(p.row_start[i + 1] - first);
  }
  return parts;
}

OpArgs attention_op_args(const Pass& p, const ModelConfig& c, DType dtype, PagedKv kv,
                         const HostTensor& q) {
  if (p.prefill) {
    AttentionPrefillArgs a = prefill_attention_args(p, c, dtype, std::move(kv));
    a.q = &q;
    return a;
  }
  AttentionDecodeArgs a = decode_attention_args(c, dtype, std::move(kv));
  a.q = &q;
  return a;
}

std::unique_ptr<PassEngine> make_host_engine(Backend& backend, const ModelWeights& weights,
                                             const std::vector<int32_t>& capacity,
                                             int32_t page_size, const Fp8Scheme& fp8,
                                             PassTrace& trace, RunNotes* notes) {
  return std::make_unique<HostEngine>(
      backend, weights, std::make_shared<KvPageLayout>(capacity, page_size), trace, notes, fp8);
}

std::unique_ptr<PassEngine> make_serving_engine(Backend& backend, const ModelWeights& weights,
                                                std::shared_ptr<const KvPageMap> pages,
                                                int64_t max_rows, int64_t max_heads,
                                                DecodePath path, PassTrace& trace, RunNotes* notes,
                                                std::string& decoder) {
  if (weights.fp8) throw_input_error("serving traffic is not implemented for FP8 checkpoints");
  DeviceDecodeOps* device = use_device_path(path) ? backend.device_decode_ops() : nullptr;
  if (device) {
    decoder = kDeviceDecoderNote;
    return make_serving_device_engine(*device, weights, std::move(pages), max_rows, max_heads,
                                      trace, notes);
  }
  decoder = kHostDecoderNote;
  return std::make_unique<HostEngine>(backend, weights, std::move(pages), trace, notes);
}

std::vector<SequenceResult> greedy_decode(Backend& backend, const ModelWeights& weights,
                                          const std::vector<std::vector<int32_t>>& prompts,
                                          const std::vector<size_t>& watched,
                                          const DecodeOptions& options, TensorObserver* observer,
                                          RunNotes* notes) {
  BatchDecoder d(backend, weights, prompts, watched, options, observer, notes);
  return d.run();
}

}  // namespace nvdet
