#include "lib/model/device_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "lib/core/error.h"
#include "lib/model/decode_pass.h"
#include "lib/model/host_ops.h"
#include "lib/model/kv_cache.h"
#include "lib/ops/moe_routing.h"

namespace nvdet {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
// cuBLASLt's workspace (lib/cuda/gemm_ops.cpp) and room for the libraries' own allocations
// (handles, cuBLAS's internal buffers): not measured per call, so a fixed allowance.
constexpr double kLibraryBytes = 32 * kMiB + 256 * kMiB;
// Split-KV attention keeps one (head_dim + 2)-float partial per work item and head; items per
// row: at most 3 in prefill, and a decode row is cut into at most this many splits by any plan.
constexpr double kMaxDecodeSplits = 128;

// A device tensor of the pass, as the trace sees it.
struct DevTensor {
  const void* ptr = nullptr;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;  // shape[0]: rows
};

void* bytes_at(void* p, size_t offset) { return static_cast<std::byte*>(p) + offset; }

class DeviceEngine final : public PassEngine {
 public:
  // max_heads: the most head rows (LM head inputs) of any pass.
  DeviceEngine(DeviceDecodeOps& ops, const ModelWeights& w, std::shared_ptr<const KvPageMap> pages,
               int64_t max_rows, int64_t max_heads, PassTrace& trace, RunNotes* notes)
      : ops_(ops),
        w_(w),
        c_(w.config),
        trace_(trace),
        notes_(notes),
        rope_(w.config),
        pages_(std::move(pages)),
        elem_(dtype_size(w.dtype)) {
    check_memory(max_rows, max_heads);
    upload_weights();
    allocate(max_heads, max_rows);
  }

  HostTensor cached_kv(int32_t layer, size_t seq, int32_t count) override {
    const size_t row_bytes = static_cast<size_t>(c_.kv_dim()) * elem_;
    HostTensor out(w_.dtype, {count, 2 * c_.kv_dim()});
    for (int32_t t = 0; t < count; ++t) {
      const size_t at = static_cast<size_t>(pages_->slot(seq, t)) * row_bytes;
      ops_.download(out.mutable_data() + 2 * t * row_bytes, bytes_at(k_.at(layer), at), row_bytes);
      ops_.download(out.mutable_data() + (2 * t + 1) * row_bytes, bytes_at(v_.at(layer), at),
                    row_bytes);
    }
    return out;
  }

  PassOutput forward(const Pass& p, const std::vector<bool>& want_logits,
                     const char* notes_tag) override {
    const int64_t rows = static_cast<int64_t>(p.tokens.size());
    const int64_t hidden = c_.hidden, inter = c_.intermediate;
    const int64_t q_dim = c_.q_dim(), kv_dim = c_.kv_dim(), qkv_dim = c_.qkv_dim();
    upload_pass_inputs(p);
    begin_trace(p);

    ops_.gather_rows(embed_, tokens_, rows, hidden * elem_, x_);
    emit(p, -1, "embed", {x_, w_.dtype, {rows, hidden}});
    for (int32_t l = 0; l < c_.layers; ++l) {
      const Layer& L = layers_[l];
      const char* tag = l == 0 ? notes_tag : nullptr;
      rmsnorm(x_, L.attn_norm, h_, rows, hidden, tag, "attn_norm");
      emit(p, l, "attn_norm", {h_, w_.dtype, {rows, hidden}});
      gemm(h_, L.qkv, L.qkv_bias, qkv_, rows, qkv_dim, hidden, w_.dtype, tag, "qkv");
      emit(p, l, "qkv", {qkv_, w_.dtype, {rows, qkv_dim}});
      if (c_.qk_norm) {
        normalize_heads(rows, 0, c_.num_heads, L.q_norm, tag, "q_norm");
        normalize_heads(rows, q_dim, c_.num_kv_heads, L.k_norm, tag, "k_norm");
        emit(p, l, "qk_norm", {qkv_, w_.dtype, {rows, qkv_dim}});
      }
      ops_.rope(w_.dtype, qkv_, rows, qkv_dim, c_.head_dim, c_.num_heads + c_.num_kv_heads, cos_,
                sin_);
      emit(p, l, "rope", {qkv_, w_.dtype, {rows, qkv_dim}});
      ops_.kv_write(w_.dtype, qkv_, rows, qkv_dim, q_dim, kv_dim, slots_, k_[l], v_[l]);
      // The attention ops take the queries as [rows, heads, head_dim], contiguous.
      ops_.copy_rows(q_, q_dim * elem_, qkv_, qkv_dim * elem_, q_dim * elem_, rows);
      attention(p, l, tag);
      emit(p, l, "attention", {attn_, w_.dtype, {rows, c_.num_heads, c_.head_dim}});
      gemm(attn_, L.o_proj, L.o_bias, o_, rows, hidden, q_dim, w_.dtype, tag, "o_proj");
      emit(p, l, "o_proj", {o_, w_.dtype, {rows, hidden}});
      ops_.residual_add(w_.dtype, x_, o_, rows * hidden);
      emit(p, l, "attn_residual", {x_, w_.dtype, {rows, hidden}});
      rmsnorm(x_, L.mlp_norm, h_, rows, hidden, tag, "mlp_norm");
      emit(p, l, "mlp_norm", {h_, w_.dtype, {rows, hidden}});
      if (c_.is_moe_layer(l)) {
        moe_mlp(p, l, L, rows, tag);
      } else {
        gemm(h_, L.gate_up, L.gate_up_bias, gu_, rows, 2 * inter, hidden, w_.dtype, tag, "gate_up");
        emit(p, l, "gate_up", {gu_, w_.dtype, {rows, 2 * inter}});
        ops_.swiglu(w_.dtype, gu_, act_, rows, inter);
        emit(p, l, "swiglu", {act_, w_.dtype, {rows, inter}});
        gemm(act_, L.down, L.down_bias, d_, rows, hidden, inter, w_.dtype, tag, "down");
        emit(p, l, "down", {d_, w_.dtype, {rows, hidden}});
      }
      ops_.residual_add(w_.dtype, x_, d_, rows * hidden);
      emit(p, l, "mlp_residual", {x_, w_.dtype, {rows, hidden}});
    }
    PassOutput out;
    const int64_t heads = static_cast<int64_t>(p.head_seqs.size());
    if (heads == 0) {
      flush_trace(p);
      return out;
    }
    const std::vector<int32_t> head_rows(p.head_rows.begin(), p.head_rows.end());
    ops_.upload(head_rows_, head_rows.data(), head_rows.size() * sizeof(int32_t));
    ops_.gather_rows(x_, head_rows_, heads, hidden * elem_, last_);
    rmsnorm(last_, final_norm_, fn_, heads, hidden, notes_tag, "final_norm");
    emit_head(p, "final_norm", {fn_, w_.dtype, {heads, hidden}});
    gemm(fn_, lm_head_, nullptr, logits_, heads, c_.vocab, hidden, DType::kFP32, notes_tag,
         "lm_head");
    emit_head(p, "logits", {logits_, DType::kFP32, {heads, c_.vocab}});
    ops_.argmax_rows(static_cast<const float*>(logits_), heads, c_.vocab, tokens_out_);
    // The tokens and the logits rows asked for come back in one download (one wait): rows
    // 0..last wanted of the logits, into pinned memory, then copied out row by row.
    out.tokens.resize(static_cast<size_t>(heads));
    const size_t row_bytes = static_cast<size_t>(c_.vocab) * sizeof(float);
    int64_t logits_rows = 0;
    for (int64_t i = 0; i < heads; ++i) {
      if (want_logits[i]) logits_rows = i + 1;
    }
    if (logits_rows > 0) {
      ops_.download(logits_host_.get(), logits_, static_cast<size_t>(logits_rows) * row_bytes);
    }
    ops_.download(out.tokens.data(), tokens_out_, out.tokens.size() * sizeof(int32_t));
    for (int64_t i = 0; i < heads; ++i) {
      if (!want_logits[i]) {
        out.logits.emplace_back();
        continue;
      }
      HostTensor row(DType::kFP32, {1, c_.vocab});
      std::memcpy(row.mutable_data(),
                  static_cast<const std::byte*>(logits_host_.get()) + i * row_bytes, row_bytes);
      out.logits.push_back(std::move(row));
    }
    flush_trace(p);
    return out;
  }

 private:
  struct Layer {
    const void *attn_norm, *qkv, *qkv_bias, *q_norm, *k_norm, *o_proj, *o_bias, *mlp_norm, *gate_up,
        *gate_up_bias, *down, *down_bias;
    // An MoE layer: the router and each expert's fused gate/up and down (empty otherwise), the
    // experts of each kind stacked in one device buffer (resident_stack), which grouped_gemm
    // reads whole and the per-expert calls slice.
    const void* router = nullptr;
    std::vector<const void*> expert_gate_up, expert_down;
    const void *gate_up_stack = nullptr, *down_stack = nullptr;
    // Qwen2-MoE's shared expert (null otherwise).
    const void *shared_gate_up = nullptr, *shared_down = nullptr, *shared_gate = nullptr;
  };

  // The experts' tensors stacked on the device; each expert's own address inside the stack.
  const void* stack(const std::vector<HostTensor>& experts, std::vector<const void*>& each) {
    if (experts.empty()) return nullptr;
    std::vector<const HostTensor*> members;
    for (const HostTensor& t : experts) members.push_back(&t);
    const void* base = ops_.resident_stack(members);
    size_t at = 0;
    for (const HostTensor& t : experts) {
      each.push_back(static_cast<const std::byte*>(base) + at);
      at += t.nbytes();
    }
    return base;
  }

  void check_memory(int64_t max_rows, int64_t max_heads) {
    const std::vector<const HostTensor*> tensors = weight_tensors(w_);
    std::vector<uint64_t> uids;
    for (const HostTensor* t : tensors) uids.push_back(t->uid());
    ops_.keep_resident_only(uids);  // another model's weights make room first
    double upload = 0;
    for (const HostTensor* t : tensors) {
      if (!ops_.is_resident(*t)) upload += static_cast<double>(t->nbytes());
    }
    const DeviceDecodeFootprint f =
        device_decode_footprint(w_, pages_->total_pages(), pages_->page_size(), max_heads, max_rows,
                                upload, trace_.tracing());
    const double free = static_cast<double>(ops_.free_bytes());
    if (f.total() > free) {
      throw_runtime_error(fmt::format(
          "the model decode needs {:.2f} GiB of device memory (weights to upload {:.2f}, KV cache "
          "{:.2f}, activations {:.2f}, workspace {:.2f}, trace staging {:.2f}) but only {:.2f} GiB "
          "are free; lower the batch, prompt length or max_new_tokens",
          f.total() / kGiB, f.weights / kGiB, f.kv_cache / kGiB, f.activations / kGiB,
          f.workspace / kGiB, f.trace / kGiB, free / kGiB));
    }
  }

  const void* resident(const HostTensor& t) { return t.empty() ? nullptr : ops_.resident(t); }

  void upload_weights() {
    embed_ = resident(w_.embed);
    final_norm_ = resident(w_.final_norm);
    lm_head_ = resident(w_.lm_head);
    for (const LayerWeights& L : w_.layers) {
      Layer D{resident(L.attn_norm),
              resident(L.qkv),
              resident(L.qkv_bias),
              resident(L.q_norm),
              resident(L.k_norm),
              resident(L.o_proj),
              resident(L.o_bias),
              resident(L.mlp_norm),
              resident(L.gate_up),
              resident(L.gate_up_bias),
              resident(L.down),
              resident(L.down_bias),
              resident(L.router),
              {},
              {}};
      D.gate_up_stack = stack(L.expert_gate_up, D.expert_gate_up);
      D.down_stack = stack(L.expert_down, D.expert_down);
      D.shared_gate_up = resident(L.shared_gate_up);
      D.shared_down = resident(L.shared_down);
      D.shared_gate = resident(L.shared_gate);
      layers_.push_back(std::move(D));
    }
  }

  void* buffer(double bytes) {
    buffers_.push_back(ops_.allocate(static_cast<size_t>(bytes)));
    return buffers_.back().get();
  }

  void allocate(int64_t batch, int64_t rows) {
    const double e = static_cast<double>(elem_), r = static_cast<double>(rows);
    x_ = buffer(r * c_.hidden * e);
    h_ = buffer(r * c_.hidden * e);
    o_ = buffer(r * c_.hidden * e);
    d_ = buffer(r * c_.hidden * e);
    qkv_ = buffer(r * c_.qkv_dim() * e);
    q_ = buffer(r * c_.q_dim() * e);
    attn_ = buffer(r * c_.q_dim() * e);
    gu_ = buffer(r * 2.0 * c_.intermediate * e);
    act_ = buffer(r * c_.intermediate * e);
    if (c_.qk_norm) {
      qk_in_ = buffer(r * c_.q_dim() * e);  // num_heads >= num_kv_heads: room for either
      qk_out_ = buffer(r * c_.q_dim() * e);
    }
    if (c_.is_moe()) {
      // The experts' rows in the grouped layout (each expert's rows together), one row more
      // than a pass can route (rows x top-k): the zero row the trace shows for a pass row that
      // an expert did not receive.
      const double routed = r * c_.experts_per_token + 1;
      router_ = static_cast<float*>(buffer(r * c_.num_experts * sizeof(float)));
      grouped_in_ = buffer(routed * c_.hidden * e);
      grouped_gu_ = buffer(routed * 2.0 * c_.expert_intermediate * e);
      grouped_act_ = buffer(routed * c_.expert_intermediate * e);
      grouped_out_ = buffer(routed * c_.hidden * e);
      routed_rows_ = static_cast<int32_t*>(buffer(routed * sizeof(int32_t)));
      combine_slots_ = static_cast<int32_t*>(buffer(routed * sizeof(int32_t)));
      combine_weights_ = static_cast<float*>(buffer(routed * sizeof(float)));
      route_expert_ = static_cast<int32_t*>(buffer(routed * sizeof(int32_t)));
      route_offsets_ = static_cast<int32_t*>(buffer((c_.num_experts + 2.0) * sizeof(int32_t)));
      route_counts_ = static_cast<int32_t*>(buffer(c_.num_experts * sizeof(int32_t)));
      if (c_.shared_expert_intermediate > 0) {
        const double si = static_cast<double>(c_.shared_expert_intermediate);
        shared_gu_ = buffer(r * 2 * si * e);
        shared_act_ = buffer(r * si * e);
        shared_out_ = buffer(r * c_.hidden * e);
        shared_logit_ = static_cast<float*>(buffer(r * sizeof(float)));
      }
      if (trace_.tracing()) {
        expert_trace_rows_ = static_cast<int32_t*>(buffer(r * c_.num_experts * sizeof(int32_t)));
      }
    }
    last_ = buffer(static_cast<double>(batch) * c_.hidden * e);
    fn_ = buffer(static_cast<double>(batch) * c_.hidden * e);
    logits_ = buffer(static_cast<double>(batch) * c_.vocab * sizeof(float));
    logits_host_ = ops_.allocate_host(static_cast<size_t>(batch) * c_.vocab * sizeof(float));
    tokens_out_ = static_cast<int32_t*>(buffer(static_cast<double>(batch) * sizeof(int32_t)));
    head_rows_ = static_cast<int32_t*>(buffer(static_cast<double>(batch) * sizeof(int32_t)));
    tokens_ = static_cast<int32_t*>(buffer(r * sizeof(int32_t)));
    slots_ = static_cast<int64_t*>(buffer(r * sizeof(int64_t)));
    cos_ = static_cast<float*>(buffer(r * (c_.head_dim / 2) * sizeof(float)));
    sin_ = static_cast<float*>(buffer(r * (c_.head_dim / 2) * sizeof(float)));
    if (trace_.tracing()) {
      staging_bytes_ = static_cast<size_t>(trace_staging_bytes(w_, rows, batch));
      staging_ = buffer(static_cast<double>(staging_bytes_));
      staged_host_ = ops_.allocate_host(staging_bytes_);
      trace_rows_ = static_cast<int32_t*>(buffer(r * sizeof(int32_t)));
      trace_heads_ = static_cast<int32_t*>(buffer(static_cast<double>(batch) * sizeof(int32_t)));
    }
    const double cache = static_cast<double>(pages_->total_pages()) * pages_->page_size() *
                         static_cast<double>(c_.kv_dim()) * e;
    for (int32_t l = 0; l < c_.layers; ++l) {
      k_.push_back(buffer(cache));
      v_.push_back(buffer(cache));
    }
  }

  // The pass's token ids, RoPE tables (computed on the host exactly as host_ops' RoPE computes
  // them) and cache slots.
  void upload_pass_inputs(const Pass& p) {
    const size_t rows = p.tokens.size();
    const size_t half = static_cast<size_t>(c_.head_dim / 2);
    ops_.upload(tokens_, p.tokens.data(), rows * sizeof(int32_t));
    cos_host_.resize(rows * half);
    sin_host_.resize(rows * half);
    for (size_t r = 0; r < rows; ++r) {
      rope_.cos_sin(p.positions[r], cos_host_.data() + r * half, sin_host_.data() + r * half);
    }
    ops_.upload(cos_, cos_host_.data(), cos_host_.size() * sizeof(float));
    ops_.upload(sin_, sin_host_.data(), sin_host_.size() * sizeof(float));
    std::vector<int64_t> slots(rows);
    for (size_t i = 0; i < p.seqs.size(); ++i) {
      for (int32_t r = p.row_start[i]; r < p.row_start[i + 1]; ++r) {
        slots[r] = pages_->slot(p.seqs[i], p.positions[r]);
      }
    }
    ops_.upload(slots_, slots.data(), slots.size() * sizeof(int64_t));
  }

  // Qwen3's q_norm / k_norm, as the host engine: the `heads` heads from column `first` of every
  // qkv row gathered into [rows * heads, head_dim], one rmsnorm call, written back.
  void normalize_heads(int64_t rows, int64_t first, int64_t heads, const void* weight,
                       const char* tag, const char* name) {
    const size_t bytes = static_cast<size_t>(heads * c_.head_dim) * elem_;
    const size_t pitch = static_cast<size_t>(c_.qkv_dim()) * elem_;
    void* cols = bytes_at(qkv_, static_cast<size_t>(first) * elem_);
    ops_.copy_rows(qk_in_, bytes, cols, pitch, bytes, static_cast<size_t>(rows));
    rmsnorm(qk_in_, weight, qk_out_, rows * heads, c_.head_dim, tag, name);
    ops_.copy_rows(cols, pitch, qk_out_, bytes, bytes, static_cast<size_t>(rows));
  }

  void rmsnorm(const void* x, const void* weight, void* out, int64_t rows, int64_t d,
               const char* tag, const char* name) {
    DeviceRmsNormCall r;
    r.x = x;
    r.weight = weight;
    r.out = out;
    r.rows = rows;
    r.d = d;
    r.dtype = w_.dtype;
    r.out_dtype = w_.dtype;
    r.eps = c_.rms_eps;
    with_notes(tag, name, [&](RunNotes* n) { ops_.rmsnorm(r, n); });
  }

  void gemm(const void* a, const void* weight, const void* bias, void* out, int64_t m, int64_t n,
            int64_t k, DType out_dtype, const char* tag, const char* name) {
    DeviceGemmCall g;
    g.a = a;
    g.w = weight;
    g.bias = bias;
    g.out = out;
    g.m = m;
    g.n = n;
    g.k = k;
    g.dtype = w_.dtype;
    g.out_dtype = out_dtype;
    with_notes(tag, name, [&](RunNotes* nt) { ops_.gemm(g, nt); });
  }

  void attention(const Pass& p, int32_t l, const char* tag) {
    if (p.decode_seqs == 0) {
      attention_call(p, l, 0, tag, "attention");
      return;
    }
    // A serving step: its decode rows through attention_decode, then its prompt chunks through
    // attention_prefill, each reading and writing its own rows of q_ and attn_.
    const ServingParts parts = split_serving_pass(p);
    attention_call(parts.decode, l, 0, tag, "attention_decode");
    attention_call(parts.prefill, l, static_cast<int64_t>(p.decode_seqs), tag, "attention_prefill");
  }

  // One attention call over pass p's rows, which start at row `first` of q_ and attn_.
  void attention_call(const Pass& p, int32_t l, int64_t first, const char* tag, const char* name) {
    const PagedKv kv = pages_->view(p.seqs, p.kv_lens);
    const size_t offset = static_cast<size_t>(first * c_.q_dim()) * elem_;
    DeviceAttentionCall t;
    t.q = bytes_at(q_, offset);
    t.k = k_[l];
    t.v = v_[l];
    t.out = bytes_at(attn_, offset);
    t.dtype = w_.dtype;
    if (p.prefill) {
      const AttentionPrefillArgs a = prefill_attention_args(p, c_, w_.dtype, kv);
      with_notes(tag, name, [&](RunNotes* n) { ops_.attention_prefill(a, t, n); });
    } else {
      const AttentionDecodeArgs a = decode_attention_args(c_, w_.dtype, kv);
      with_notes(tag, name, [&](RunNotes* n) { ops_.attention_decode(a, t, n); });
    }
  }

  // An MoE layer's MLP on h_ into d_, as the host engine computes it (decoder.cpp's moe_mlp, the
  // same calls, bits, notes and trace): the router GEMM, the routing and the sorted layout on the
  // device (moe_route: route_tokens and group_rows_by_expert bit for bit); the layout's offsets
  // downloaded (the one wait of the layer: each expert's GEMMs are sized on the host), and the
  // route itself only where notes or the trace need it; h_'s rows gathered into the grouped
  // layout; each expert's gate/up GEMM and SwiGLU, then each expert's down GEMM, on its slice of
  // the layout; the combine in fixed rank order (launch_moe_combine).
  void moe_mlp(const Pass& p, int32_t l, const Layer& L, int64_t rows, const char* tag) {
    const int32_t experts = c_.num_experts, k = c_.experts_per_token;
    const int64_t hidden = c_.hidden, ei = c_.expert_intermediate;
    gemm(h_, L.router, nullptr, router_, rows, experts, hidden, DType::kFP32, tag, "router");
    emit(p, l, "router", {router_, DType::kFP32, {rows, experts}});
    const int64_t routed = rows * k;
    DeviceMoeRoute on_device;
    on_device.expert = route_expert_;
    on_device.weight = combine_weights_;
    on_device.offsets = route_offsets_;
    on_device.row = routed_rows_;
    on_device.position = combine_slots_;
    on_device.counts = route_counts_;
    ops_.moe_route(router_, rows, experts, k, c_.norm_topk_prob, on_device);
    MoeExpertRows by_expert;
    by_expert.offsets.resize(static_cast<size_t>(experts) + 2);
    ops_.download(by_expert.offsets.data(), route_offsets_, by_expert.offsets.size() * 4);
    if (by_expert.offsets.back() != 0) refuse_router_logits(rows);
    by_expert.offsets.pop_back();
    MoeRoute route;
    const bool noting = tag && notes_;
    if (noting || trace_.tracing()) download_route(rows, route, by_expert);
    ops_.gather_rows(h_, routed_rows_, routed, hidden * static_cast<int64_t>(elem_), grouped_in_);
    const std::vector<bool> noted =
        noting ? watched_experts(p, route, experts, trace_) : std::vector<bool>();
    const auto tag_of = [&](int e) { return !noted.empty() && noted[e] ? tag : nullptr; };
    const auto at = [&](void* base, int64_t row, int64_t width) {
      return bytes_at(base, static_cast<size_t>(row * width) * elem_);
    };
    // Each stage's experts in one grouped launch where the backend has one (its rows get the
    // bits of the per-expert calls) and no notes or trace want each expert's call; else one
    // call per expert that received rows, in ascending expert order.
    const bool may_group = !noting && !trace_.tracing();
    const auto grouped = [&](const void* a, const void* stacked, void* out, int64_t n,
                             int64_t depth) {
      DeviceGroupedGemmCall g;
      g.a = a;
      g.w = stacked;
      g.out = out;
      g.group_rows = route_offsets_;
      g.groups = experts;
      g.max_rows = routed;
      g.n = n;
      g.k = depth;
      g.dtype = g.out_dtype = w_.dtype;
      return may_group && ops_.grouped_gemm(g);
    };
    if (grouped(grouped_in_, L.gate_up_stack, grouped_gu_, 2 * ei, hidden)) {
      ops_.swiglu(w_.dtype, grouped_gu_, grouped_act_, routed, ei);
    } else {
      for (int e = 0; e < experts; ++e) {
        const int32_t begin = by_expert.offsets[e], n = by_expert.offsets[e + 1] - begin;
        if (n == 0) continue;
        const std::string name = "expert" + std::to_string(e);
        if (tag_of(e)) (*notes_)[std::string(tag) + "." + name + ".rows"] = std::to_string(n);
        gemm(at(grouped_in_, begin, hidden), L.expert_gate_up[e], nullptr,
             at(grouped_gu_, begin, 2 * ei), n, 2 * ei, hidden, w_.dtype, tag_of(e),
             (name + ".gate_up").c_str());
        ops_.swiglu(w_.dtype, at(grouped_gu_, begin, 2 * ei), at(grouped_act_, begin, ei), n, ei);
      }
    }
    if (!grouped(grouped_act_, L.down_stack, grouped_out_, hidden, ei)) {
      for (int e = 0; e < experts; ++e) {
        const int32_t begin = by_expert.offsets[e], n = by_expert.offsets[e + 1] - begin;
        if (n == 0) continue;
        gemm(at(grouped_act_, begin, ei), L.expert_down[e], nullptr,
             at(grouped_out_, begin, hidden), n, hidden, ei, w_.dtype, tag_of(e),
             ("expert" + std::to_string(e) + ".down").c_str());
      }
    }
    trace_experts(p, l, by_expert, routed);
    // Qwen2-MoE's shared expert, on every row: gate/up, SwiGLU, down, and its gate's logit.
    const bool shared = L.shared_gate_up != nullptr;
    if (shared) {
      const int64_t si = c_.shared_expert_intermediate;
      gemm(h_, L.shared_gate_up, nullptr, shared_gu_, rows, 2 * si, hidden, w_.dtype, tag,
           "shared_expert.gate_up");
      emit(p, l, "shared_expert.gate_up", {shared_gu_, w_.dtype, {rows, 2 * si}});
      ops_.swiglu(w_.dtype, shared_gu_, shared_act_, rows, si);
      gemm(shared_act_, L.shared_down, nullptr, shared_out_, rows, hidden, si, w_.dtype, tag,
           "shared_expert.down");
      emit(p, l, "shared_expert.down", {shared_out_, w_.dtype, {rows, hidden}});
      gemm(h_, L.shared_gate, nullptr, shared_logit_, rows, 1, hidden, DType::kFP32, tag,
           "shared_expert_gate");
      emit(p, l, "shared_expert_gate", {shared_logit_, DType::kFP32, {rows, 1}});
    }
    // For each (row, rank): its entry's place in the grouped layout, and its weight (moe_route
    // wrote both); the shared expert's output and gate where the model has one.
    ops_.moe_combine(w_.dtype, grouped_out_, combine_slots_, combine_weights_, rows, k, hidden, d_,
                     shared ? shared_out_ : nullptr, shared ? shared_logit_ : nullptr);
    emit(p, l, "combine", {d_, w_.dtype, {rows, hidden}});
  }

  // The route and the layout's rows on the host, for notes and the trace.
  void download_route(int64_t rows, MoeRoute& route, MoeExpertRows& by_expert) {
    const int32_t k = c_.experts_per_token;
    const size_t routed = static_cast<size_t>(rows * k);
    route.rows = static_cast<int>(rows);
    route.top_k = k;
    route.expert.resize(routed);
    route.weight.resize(routed);
    by_expert.row.resize(routed);
    by_expert.position.resize(routed);
    by_expert.rank.resize(routed);
    ops_.download(route.expert.data(), route_expert_, routed * sizeof(int32_t));
    ops_.download(route.weight.data(), combine_weights_, routed * sizeof(float));
    ops_.download(by_expert.row.data(), routed_rows_, routed * sizeof(int32_t));
    ops_.download(by_expert.position.data(), combine_slots_, routed * sizeof(int32_t));
    for (size_t i = 0; i < routed; ++i) by_expert.rank[by_expert.position[i]] = i % k;
  }

  // A router logit that is not finite: the host's routing gives the sentence (exit 3).
  [[noreturn]] void refuse_router_logits(int64_t rows) {
    std::vector<float> logits(static_cast<size_t>(rows * c_.num_experts));
    ops_.download(logits.data(), router_, logits.size() * sizeof(float));
    route_tokens(logits, static_cast<int>(rows), c_.num_experts, c_.experts_per_token,
                 c_.norm_topk_prob);
    throw_runtime_error("MoE routing on the device found a router logit that is not finite");
  }

  // The trace of each expert's gate/up and down as pass tensors (decoder.cpp's emit_expert): a
  // watched pass row shows the expert's row for it when it was routed there, else the zero row
  // kept past the routed rows of the grouped buffers.
  void trace_experts(const Pass& p, int32_t l, const MoeExpertRows& by_expert, int64_t routed) {
    if (!trace_.tracing() || traced_rows_ == 0) return;
    const int64_t hidden = c_.hidden, ei = c_.expert_intermediate;
    const std::vector<std::byte> zeros(static_cast<size_t>(std::max(hidden, 2 * ei)) * elem_);
    ops_.upload(bytes_at(grouped_gu_, static_cast<size_t>(routed * 2 * ei) * elem_), zeros.data(),
                static_cast<size_t>(2 * ei) * elem_);
    ops_.upload(bytes_at(grouped_out_, static_cast<size_t>(routed * hidden) * elem_), zeros.data(),
                static_cast<size_t>(hidden) * elem_);
    const int32_t experts = c_.num_experts;
    std::vector<int32_t> index(static_cast<size_t>(experts * traced_rows_));
    for (int e = 0; e < experts; ++e) {
      const auto first = by_expert.row.begin() + by_expert.offsets[e];
      const auto last = by_expert.row.begin() + by_expert.offsets[e + 1];
      for (int64_t i = 0; i < traced_rows_; ++i) {
        const auto it = std::lower_bound(first, last, traced_pass_rows_[i]);
        index[e * traced_rows_ + i] = it != last && *it == traced_pass_rows_[i]
                                          ? static_cast<int32_t>(it - by_expert.row.begin())
                                          : static_cast<int32_t>(routed);
      }
    }
    ops_.upload(expert_trace_rows_, index.data(), index.size() * sizeof(int32_t));
    for (int e = 0; e < experts; ++e) {
      const int32_t* rows = expert_trace_rows_ + e * traced_rows_;
      const std::string name = "expert" + std::to_string(e);
      stage(p, false, l, name + ".gate_up", {grouped_gu_, w_.dtype, {0, 2 * ei}}, rows);
      stage(p, false, l, name + ".down", {grouped_out_, w_.dtype, {0, hidden}}, rows);
    }
  }

  template <class F>
  void with_notes(const char* tag, const char* name, F&& call) {
    if (!tag || !notes_) return call(nullptr);
    RunNotes call_notes;
    call(&call_notes);
    keep_notes(notes_, tag, name, call_notes);
  }

  // ---- the trace: the watched rows of each tensor are gathered on the device into a staging
  // buffer as the pass goes, and downloaded once at its end (or when the buffer is full), then
  // handed to the scheduler in emit order; a download per tensor and sequence would cost a
  // device synchronisation each.
  struct Staged {
    bool head = false;
    int32_t layer = 0;
    std::string op;
    DType dtype = DType::kBF16;
    std::vector<int64_t> shape;  // shape[0]: the rows staged
    size_t offset = 0, row_bytes = 0;
  };

  void begin_trace(const Pass& p) {
    if (!trace_.tracing()) return;
    std::vector<int32_t> rows, heads;
    row_index_.assign(p.tokens.size(), -1);
    head_index_.assign(p.head_seqs.size(), -1);
    for (size_t i = 0; i < p.seqs.size(); ++i) {
      if (!trace_.watched(p.seqs[i])) continue;
      for (int32_t r = p.row_start[i]; r < p.row_start[i + 1]; ++r) {
        row_index_[r] = static_cast<int32_t>(rows.size());
        rows.push_back(r);
      }
    }
    for (size_t i = 0; i < p.head_seqs.size(); ++i) {
      if (!trace_.watched(p.head_seqs[i])) continue;
      head_index_[i] = static_cast<int32_t>(heads.size());
      heads.push_back(static_cast<int32_t>(i));
    }
    traced_rows_ = static_cast<int64_t>(rows.size());
    traced_heads_ = static_cast<int64_t>(heads.size());
    traced_pass_rows_ = rows;
    ops_.upload(trace_rows_, rows.data(), rows.size() * sizeof(int32_t));
    ops_.upload(trace_heads_, heads.data(), heads.size() * sizeof(int32_t));
  }

  // `index` (device, one entry per staged row): the rows of t to stage, in the order of the
  // pass rows the trace watches; null: t's own rows of those pass rows (or heads).
  void stage(const Pass& p, bool head, int32_t layer, std::string_view op, const DevTensor& t,
             const int32_t* index = nullptr) {
    const int64_t n = head ? traced_heads_ : traced_rows_;
    if (!trace_.tracing() || n == 0) return;
    size_t row_bytes = dtype_size(t.dtype);
    for (size_t d = 1; d < t.shape.size(); ++d) row_bytes *= static_cast<size_t>(t.shape[d]);
    // Each tensor's rows start 16-byte aligned, as the gather kernel's word stores need.
    const size_t bytes = (static_cast<size_t>(n) * row_bytes + 15) / 16 * 16;
    if (staged_used_ + bytes > staging_bytes_) flush_trace(p);
    const int32_t* rows = index ? index : head ? trace_heads_ : trace_rows_;
    ops_.gather_rows(t.ptr, rows, n, static_cast<int64_t>(row_bytes),
                     bytes_at(staging_, staged_used_));
    Staged s{head, layer, std::string(op), t.dtype, t.shape, staged_used_, row_bytes};
    s.shape[0] = n;
    staged_.push_back(std::move(s));
    staged_used_ += bytes;
  }

  void flush_trace(const Pass& p) {
    if (staged_.empty()) return;
    ops_.download(staged_host_.get(), staging_, staged_used_);
    const auto* staged_host = static_cast<const std::byte*>(staged_host_.get());
    for (const Staged& s : staged_) {
      const std::vector<int32_t>& index = s.head ? head_index_ : row_index_;
      const RowFetch rows = [&](int64_t first, int64_t count) {
        std::vector<int64_t> shape = s.shape;
        shape[0] = count;
        HostTensor out(s.dtype, std::move(shape));
        std::memcpy(out.mutable_data(),
                    staged_host + s.offset + static_cast<size_t>(index.at(first)) * s.row_bytes,
                    static_cast<size_t>(count) * s.row_bytes);
        return out;
      };
      if (s.head) {
        trace_.emit_head(p, s.op, rows);
      } else {
        trace_.emit(p, s.layer, s.op, rows);
      }
    }
    staged_.clear();
    staged_used_ = 0;
  }

  void emit(const Pass& p, int32_t layer, std::string_view op, const DevTensor& t) {
    stage(p, false, layer, op, t);
  }
  void emit_head(const Pass& p, std::string_view op, const DevTensor& t) {
    stage(p, true, -1, op, t);
  }

  DeviceDecodeOps& ops_;
  const ModelWeights& w_;
  const ModelConfig& c_;
  PassTrace& trace_;
  RunNotes* notes_;
  Rope rope_;
  std::shared_ptr<const KvPageMap> pages_;
  size_t elem_;

  const void* embed_ = nullptr;
  const void* final_norm_ = nullptr;
  const void* lm_head_ = nullptr;
  std::vector<Layer> layers_;

  std::vector<DeviceDecodeOps::Buffer> buffers_;
  void *x_ = nullptr, *h_ = nullptr, *o_ = nullptr, *d_ = nullptr, *qkv_ = nullptr, *q_ = nullptr,
       *attn_ = nullptr, *gu_ = nullptr, *act_ = nullptr, *qk_in_ = nullptr, *qk_out_ = nullptr,
       *last_ = nullptr, *fn_ = nullptr, *logits_ = nullptr;
  int32_t *tokens_ = nullptr, *tokens_out_ = nullptr, *head_rows_ = nullptr;
  // MoE layers (moe_mlp).
  float* router_ = nullptr;
  void *grouped_in_ = nullptr, *grouped_gu_ = nullptr, *grouped_act_ = nullptr,
       *grouped_out_ = nullptr;
  int32_t *routed_rows_ = nullptr, *combine_slots_ = nullptr, *expert_trace_rows_ = nullptr;
  float* combine_weights_ = nullptr;
  int32_t *route_expert_ = nullptr, *route_offsets_ = nullptr, *route_counts_ = nullptr;
  void *shared_gu_ = nullptr, *shared_act_ = nullptr, *shared_out_ = nullptr;
  float* shared_logit_ = nullptr;
  std::vector<int32_t> traced_pass_rows_;  // the pass rows the trace stages, in staging order
  int64_t* slots_ = nullptr;
  float *cos_ = nullptr, *sin_ = nullptr;
  std::vector<void*> k_, v_;
  std::vector<float> cos_host_, sin_host_;
  DeviceDecodeOps::Buffer logits_host_;  // where the logits rows asked for land, once per pass
  // The trace's staging (see stage()).
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0, staged_used_ = 0;
  int32_t *trace_rows_ = nullptr, *trace_heads_ = nullptr;
  int64_t traced_rows_ = 0, traced_heads_ = 0;
  std::vector<int32_t> row_index_, head_index_;  // pass row / head -> staged row, or -1
  std::vector<Staged> staged_;
  DeviceDecodeOps::Buffer staged_host_;  // pinned where the backend has it, like logits_host_
};

}  // namespace

std::vector<const HostTensor*> weight_tensors(const ModelWeights& w) {
  std::vector<const HostTensor*> out;
  auto add = [&](const HostTensor& t) {
    if (!t.empty()) out.push_back(&t);
  };
  add(w.embed);
  add(w.final_norm);
  add(w.lm_head);
  for (const LayerWeights& L : w.layers) {
    for (const HostTensor* t :
         {&L.attn_norm, &L.qkv, &L.qkv_bias, &L.q_norm, &L.k_norm, &L.o_proj, &L.o_bias,
          &L.mlp_norm, &L.gate_up, &L.gate_up_bias, &L.down, &L.down_bias, &L.router}) {
      add(*t);
    }
    for (const HostTensor& t : L.expert_gate_up) add(t);
    for (const HostTensor& t : L.expert_down) add(t);
  }
  return out;
}

DeviceDecodeFootprint device_decode_footprint(const ModelWeights& w,
                                              const std::vector<int32_t>& capacity,
                                              int64_t max_rows, int32_t page_size,
                                              double weights_to_upload, bool tracing) {
  double pages = 0;
  for (const int32_t c : capacity) pages += std::max(1, (c + page_size - 1) / page_size);
  return device_decode_footprint(w, pages, page_size, static_cast<int64_t>(capacity.size()),
                                 max_rows, weights_to_upload, tracing);
}

DeviceDecodeFootprint device_decode_footprint(const ModelWeights& w, double total_pages,
                                              int32_t page_size, int64_t max_heads,
                                              int64_t max_rows, double weights_to_upload,
                                              bool tracing) {
  const ModelConfig& c = w.config;
  const double e = static_cast<double>(dtype_size(w.dtype));
  const double r = static_cast<double>(max_rows), b = static_cast<double>(max_heads);
  DeviceDecodeFootprint f;
  f.weights = weights_to_upload;
  f.kv_cache = c.layers * PagedKvCache::bytes_for_pages(total_pages, page_size, c.num_kv_heads,
                                                        c.head_dim, w.dtype);
  const double per_row = (4.0 * c.hidden + c.qkv_dim() + 2.0 * c.q_dim() + 3.0 * c.intermediate +
                          (c.qk_norm ? 2.0 * c.q_dim() : 0.0)) *
                             e +
                         sizeof(int32_t) + sizeof(int64_t) + c.head_dim * sizeof(float);
  f.activations = r * per_row + b * (2.0 * c.hidden * e + c.vocab * sizeof(float) + 8.0);
  if (c.is_moe()) {
    // The router's logits, and rows x top-k (+ 1) rows of the grouped layout: inputs, gate/up,
    // SwiGLU, outputs, the route's experts, rows, places and weights, and the layout's offsets
    // and counts (and the trace's expert rows).
    const double routed = r * c.experts_per_token + 1;
    f.activations += r * c.num_experts * sizeof(float) +
                     routed * ((2.0 * c.hidden + 3.0 * c.expert_intermediate) * e + 16.0) +
                     (2.0 * c.num_experts + 2.0) * sizeof(int32_t) +
                     r * ((3.0 * c.shared_expert_intermediate + c.hidden) * e + sizeof(float)) *
                         (c.shared_expert_intermediate > 0 ? 1.0 : 0.0);
  }
  const double items = 3.0 * r + kMaxDecodeSplits * b;
  f.workspace = kLibraryBytes + items * c.num_heads * (c.head_dim + 2.0) * sizeof(float);
  if (tracing) f.trace = trace_staging_bytes(w, max_rows, max_heads) + (r + b) * sizeof(int32_t);
  if (tracing && c.is_moe()) f.trace += r * c.num_experts * sizeof(int32_t);
  return f;
}

double trace_staging_bytes(const ModelWeights& w, int64_t max_rows, int64_t batch) {
  const ModelConfig& c = w.config;
  const double e = static_cast<double>(dtype_size(w.dtype));
  const double widest_row =
      std::max<double>({static_cast<double>(c.hidden), static_cast<double>(c.qkv_dim()),
                        2.0 * c.intermediate, 2.0 * c.expert_intermediate,
                        c.num_experts * sizeof(float) / e}) *
      e;
  const double largest = std::max(static_cast<double>(max_rows) * widest_row,
                                  static_cast<double>(batch) * c.vocab * sizeof(float));
  return std::max(256 * kMiB, largest + 16);
}

std::unique_ptr<PassEngine> make_device_engine(DeviceDecodeOps& ops, const ModelWeights& w,
                                               const std::vector<int32_t>& capacity,
                                               int64_t max_rows, const DecodeOptions& options,
                                               PassTrace& trace, RunNotes* notes) {
  return std::make_unique<DeviceEngine>(
      ops, w, std::make_shared<KvPageLayout>(capacity, options.page_size), max_rows,
      static_cast<int64_t>(capacity.size()), trace, notes);
}

std::unique_ptr<PassEngine> make_serving_device_engine(DeviceDecodeOps& ops, const ModelWeights& w,
                                                       std::shared_ptr<const KvPageMap> pages,
                                                       int64_t max_rows, int64_t max_heads,
                                                       PassTrace& trace, RunNotes* notes) {
  return std::make_unique<DeviceEngine>(ops, w, std::move(pages), max_rows, max_heads, trace,
                                        notes);
}

}  // namespace nvdet
