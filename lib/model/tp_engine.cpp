#include "lib/model/tp_engine.h"

#include <cstring>
#include <string>

#include "lib/core/error.h"
#include "lib/model/host_ops.h"
#include "lib/model/kv_cache.h"
#include "lib/workloads/tp_gemm.h"

namespace nvdet {
namespace {

// One layer's shards: built once per engine from the layer's weights.
struct ShardedLayer {
  ColumnParallelLinear qkv, gate_up;
  RowParallelLinear o_proj, down;
};

const HostTensor* bias_or_null(const HostTensor& b) { return b.empty() ? nullptr : &b; }

class TpHostEngine final : public PassEngine {
 public:
  TpHostEngine(Backend& backend, const ModelWeights& w, const std::vector<int32_t>& capacity,
               const DecodeOptions& options, PassTrace& trace, RunNotes* notes)
      : backend_(backend),
        w_(w),
        c_(w.config),
        rank_c_(rank_config(w.config, options.tp.tp)),
        tp_(options.tp),
        trace_(trace),
        notes_(notes),
        rope_(rank_c_) {
    for (const LayerWeights& L : w_.layers) {
      layers_.push_back({ColumnParallelLinear(L.qkv, bias_or_null(L.qkv_bias), tp_.tp,
                                              {c_.q_dim(), c_.kv_dim(), c_.kv_dim()}),
                         ColumnParallelLinear(L.gate_up, bias_or_null(L.gate_up_bias), tp_.tp,
                                              {c_.intermediate, c_.intermediate}),
                         RowParallelLinear(L.o_proj, bias_or_null(L.o_bias), tp_.tp),
                         RowParallelLinear(L.down, bias_or_null(L.down_bias), tp_.tp)});
      for (int r = 0; r < tp_.tp; ++r)
        caches_.push_back(std::make_unique<PagedKvCache>(
            capacity, options.page_size, rank_c_.num_kv_heads, c_.head_dim, w_.dtype));
    }
  }

  PassOutput forward(const Pass& p, const std::vector<bool>& want_logits,
                     const char* notes_tag) override {
    HostTensor x = embed_tokens(w_.embed, p.tokens);
    emit(p, -1, "embed", x);
    for (int32_t l = 0; l < c_.layers; ++l) x = layer(p, l, x, l == 0 ? notes_tag : nullptr);
    if (p.head_seqs.empty()) return {};
    HostTensor last(x.dtype(), {static_cast<int64_t>(p.head_rows.size()), c_.hidden});
    for (size_t i = 0; i < p.head_rows.size(); ++i)
      copy_rows(x.slice_rows(p.head_rows[i], 1), last, static_cast<int64_t>(i));
    const HostTensor fn = norm(last, w_.final_norm, notes_tag, "final_norm");
    if (trace_.tracing()) trace_.emit_head(p, "final_norm", rows_of(fn));
    GemmArgs head;
    head.a = &fn;
    head.w = &w_.lm_head;
    head.out_dtype = DType::kFP32;
    const HostTensor logits = call(head, notes_tag, "lm_head");
    return head_output(p, trace_, logits, want_logits);
  }

  // Every rank's KV heads side by side in rank order: the unsharded cache's row layout.
  HostTensor cached_kv(int32_t layer, size_t seq, int32_t count) override {
    const size_t elem = dtype_size(w_.dtype);
    const size_t rank_bytes = static_cast<size_t>(rank_c_.kv_dim()) * elem;
    const size_t full_bytes = static_cast<size_t>(c_.kv_dim()) * elem;
    HostTensor out(w_.dtype, {count, 2 * c_.kv_dim()});
    for (int r = 0; r < tp_.tp; ++r) {
      const HostTensor part = caches_.at(static_cast<size_t>(layer * tp_.tp + r))->read(seq, count);
      for (int32_t t = 0; t < count; ++t) {
        const std::byte* src = part.data() + 2 * t * rank_bytes;
        std::byte* dst = out.mutable_data() + 2 * t * full_bytes + r * rank_bytes;
        std::memcpy(dst, src, rank_bytes);                            // K heads of rank r
        std::memcpy(dst + full_bytes, src + rank_bytes, rank_bytes);  // V heads of rank r
      }
    }
    return out;
  }

 private:
  static ModelConfig rank_config(const ModelConfig& c, int tp) {
    check_tp_degree(c, tp);
    ModelConfig r = c;
    r.num_heads /= tp;
    r.num_kv_heads /= tp;
    return r;
  }

  void emit(const Pass& p, int32_t layer, std::string_view op, const HostTensor& t) {
    if (trace_.tracing()) trace_.emit(p, layer, op, rows_of(t));
  }

  HostTensor call(const OpArgs& args, const char* tag, const char* name) {
    return run_noted(backend_, args, notes_, tag, name);
  }
  HostTensor norm(const HostTensor& x, const HostTensor& weight, const char* tag,
                  const char* name) {
    return call(rmsnorm_args(x, weight, c_, w_.dtype), tag, name);
  }

  // Rank r's qkv: RMSNorm of each of `heads` heads starting at column `first`, in place.
  void norm_heads(HostTensor& qkv, int64_t first, int64_t heads, const HostTensor& weight,
                  const char* tag, const char* name) {
    const int64_t rows = qkv.dim(0);
    const HostTensor cols = column_slice(qkv, first, heads * c_.head_dim);
    const HostTensor y = norm(reshaped(cols, {rows * heads, c_.head_dim}), weight, tag, name);
    const HostTensor back = reshaped(y, {rows, heads * c_.head_dim});
    const size_t elem = dtype_size(qkv.dtype()), bytes = static_cast<size_t>(back.dim(1)) * elem;
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(qkv.mutable_data() + (r * qkv.dim(1) + first) * elem, back.data() + r * bytes,
                  bytes);
  }

  // Rank r's queries [rows, heads / tp, head_dim].
  HostTensor queries(const HostTensor& qkv_r) const {
    return reshaped(column_slice(qkv_r, 0, rank_c_.q_dim()),
                    {qkv_r.dim(0), rank_c_.num_heads, c_.head_dim});
  }

  HostTensor rank_attention(const Pass& p, const PagedKvCache& cache, const HostTensor& q,
                            const char* tag) {
    return call(attention_op_args(p, rank_c_, w_.dtype, cache.view(p.seqs, p.kv_lens), q), tag,
                "attention");
  }

  HostTensor sharded(const RowParallelLinear& linear, const std::vector<HostTensor>& shards,
                     const char* tag, const char* name) {
    RunNotes n;
    HostTensor out = linear.run(backend_, shards, w_.dtype, tp_, tag && notes_ ? &n : nullptr);
    keep_notes(notes_, tag, name, n);
    return out;
  }
  std::vector<HostTensor> sharded(const ColumnParallelLinear& linear, const HostTensor& x,
                                  const char* tag, const char* name) {
    RunNotes n;
    std::vector<HostTensor> out = linear.run(backend_, x, w_.dtype, tag && notes_ ? &n : nullptr);
    keep_notes(notes_, tag, name, n);
    return out;
  }

  HostTensor layer(const Pass& p, int32_t l, const HostTensor& x, const char* tag) {
    const LayerWeights& L = w_.layers[l];
    const ShardedLayer& S = layers_[l];
    const bool tracing = trace_.tracing();
    const HostTensor h = norm(x, L.attn_norm, tag, "attn_norm");
    emit(p, l, "attn_norm", h);
    std::vector<HostTensor> qkv = sharded(S.qkv, h, tag, "qkv");
    if (tracing) emit(p, l, "qkv", S.qkv.gather(qkv));
    if (c_.qk_norm) {
      for (HostTensor& q : qkv) {
        norm_heads(q, 0, rank_c_.num_heads, L.q_norm, tag, "q_norm");
        norm_heads(q, rank_c_.q_dim(), rank_c_.num_kv_heads, L.k_norm, tag, "k_norm");
      }
      if (tracing) emit(p, l, "qk_norm", S.qkv.gather(qkv));
    }
    for (HostTensor& q : qkv) rope_.apply(q, p.positions);
    if (tracing) emit(p, l, "rope", S.qkv.gather(qkv));
    std::vector<HostTensor> attn;
    for (int r = 0; r < tp_.tp; ++r) {
      PagedKvCache& cache = *caches_[static_cast<size_t>(l) * tp_.tp + r];
      for (size_t i = 0; i < p.seqs.size(); ++i)
        for (int32_t row = p.row_start[i]; row < p.row_start[i + 1]; ++row)
          cache.write(p.seqs[i], p.positions[row], qkv[r], row, rank_c_.q_dim());
      const HostTensor a = rank_attention(p, cache, queries(qkv[r]), r == 0 ? tag : nullptr);
      attn.push_back(reshaped(a, {a.dim(0), rank_c_.q_dim()}));
    }
    if (tracing) emit(p, l, "attention", concat_columns(attn));
    const HostTensor o = sharded(S.o_proj, attn, tag, "o_proj");
    emit(p, l, "o_proj", o);
    const HostTensor x2 = add(x, o);
    emit(p, l, "attn_residual", x2);
    const HostTensor h2 = norm(x2, L.mlp_norm, tag, "mlp_norm");
    emit(p, l, "mlp_norm", h2);
    const std::vector<HostTensor> gu = sharded(S.gate_up, h2, tag, "gate_up");
    if (tracing) emit(p, l, "gate_up", S.gate_up.gather(gu));
    std::vector<HostTensor> act;
    for (const HostTensor& g : gu) act.push_back(swiglu(g));
    if (tracing) emit(p, l, "swiglu", concat_columns(act));
    const HostTensor d = sharded(S.down, act, tag, "down");
    emit(p, l, "down", d);
    const HostTensor out = add(x2, d);
    emit(p, l, "mlp_residual", out);
    return out;
  }

  Backend& backend_;
  const ModelWeights& w_;
  const ModelConfig& c_;
  ModelConfig rank_c_;  // one rank's share of the heads
  TpOptions tp_;
  PassTrace& trace_;
  RunNotes* notes_;
  Rope rope_;
  std::vector<ShardedLayer> layers_;
  std::vector<std::unique_ptr<PagedKvCache>> caches_;  // [layer * tp + rank]
};

}  // namespace

void check_tp_degree(const ModelConfig& c, int tp) {
  // The sharded engine splits dense MLPs by columns; expert sharding (and expert parallelism) is
  // not implemented, so an MoE model at tp > 1 is refused rather than computed some other way.
  if (tp > 1 && c.is_moe())
    throw_input_error("tp " + std::to_string(tp) +
                      " is not implemented for a mixture-of-experts model (tensor-parallel "
                      "experts are not sharded yet); use tp 1");
  if (tp < 1 || c.num_heads % tp != 0 || c.num_kv_heads % tp != 0 || c.intermediate % tp != 0)
    throw_input_error("tp " + std::to_string(tp) + " must divide the model's " +
                      std::to_string(c.num_heads) + " heads, " + std::to_string(c.num_kv_heads) +
                      " KV heads and intermediate size " + std::to_string(c.intermediate));
}

std::unique_ptr<PassEngine> make_tp_engine(Backend& backend, const ModelWeights& weights,
                                           const std::vector<int32_t>& capacity,
                                           const DecodeOptions& options, PassTrace& trace,
                                           RunNotes* notes) {
  return std::make_unique<TpHostEngine>(backend, weights, capacity, options, trace, notes);
}

}  // namespace nvdet
