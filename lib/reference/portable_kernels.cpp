// cpu-portable: the CPU twin of cuda-portable. Every value is computed by the functions of
// kernels/portable_ops.cuh in the order stated there, so each output is bitwise identical to
// cuda-portable's on any GPU (tests/gpu_portable_test.cpp checks it on the device). Threads and
// register blocking only decide which elements are computed together; every element still sees
// its own sequence of operations, fixed by the reduction length, hence batch-invariant too.
//
// Decode against prefill (sampler/trainer parity): both fold the splits of
// invariant_attention_split_size() tokens (512 by default) of [0, kv_len) and merge them in
// order, prefill with kv_len = position + 1; so a token's row is the same operations whether it
// is decoded or prefilled, and cpu-portable's decode logits equal its scoring pass's bit for bit
// at any length (tests/parity_cpu_test.cpp), as cuda-portable's do on the GPU.
#include <algorithm>
#include <vector>

#include "kernels/portable_ops.cuh"
#include "lib/core/parallel.h"
#include "lib/ops/split_policies.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"
#include "lib/reference/gemm_panels.h"

namespace nvdet::cpu {
namespace {

namespace pt = nvdet::kernels::portable;

// fp32 values to a tensor of `dtype` with the portable rounding (canonical NaN included).
HostTensor portable_output(DType dtype, std::vector<int64_t> shape, const std::vector<float>& v) {
  HostTensor out(dtype, std::move(shape));
  const int64_t n = out.numel();
  switch (dtype) {
    case DType::kFP32: {
      auto* o = reinterpret_cast<float*>(out.mutable_data());
      for (int64_t i = 0; i < n; ++i) o[i] = pt::from_float<float>(v[i]);
      break;
    }
    case DType::kBF16: {
      auto* o = reinterpret_cast<pt::Bf16*>(out.mutable_data());
      for (int64_t i = 0; i < n; ++i) o[i] = pt::from_float<pt::Bf16>(v[i]);
      break;
    }
    case DType::kFP16: {
      auto* o = reinterpret_cast<pt::Fp16*>(out.mutable_data());
      for (int64_t i = 0; i < n; ++i) o[i] = pt::from_float<pt::Fp16>(v[i]);
      break;
    }
  }
  return out;
}

// The portable plan's online-softmax state over some KV tokens (see portable_ops.cuh).
struct PortableState {
  float m = pt::float_of(pt::kInfBits | 0x80000000u);
  float l = 0.0f;
  std::vector<float> acc;
  explicit PortableState(int32_t d) : acc(static_cast<size_t>(d), 0.0f) {}
  bool empty() const { return l == 0.0f; }
};

// Folds KV tokens [begin, end) into `s` in tiles of 64 aligned to `origin`.
void portable_attend(const float* q, const SequenceKv& kv, int64_t begin, int64_t end,
                     int64_t origin, float scale, PortableState& s) {
  const int32_t d = kv.head_dim;
  float scores[pt::kAttentionTile], p[pt::kAttentionTile];
  for (int64_t t0 = begin; t0 < end;) {
    const int64_t offset = (t0 - origin) % pt::kAttentionTile;
    const int n = static_cast<int>(std::min(end, t0 + (pt::kAttentionTile - offset)) - t0);
    for (int t = 0; t < n; ++t) scores[t] = pt::attention_score(q, kv.k_row(t0 + t), d, scale);
    const float m_new = pt::tile_max(s.m, scores, n);
    const float c = pt::exp_diff(s.m, m_new);
    for (int t = 0; t < n; ++t) p[t] = pt::exp(pt::sub(scores[t], m_new));
    s.l = pt::rescale_add(s.l, c, pt::tile_sum(p, n));
    for (int32_t j = 0; j < d; ++j) {
      const float tile = pt::tile_weighted_sum(p, n, [&](int t) { return kv.v_row(t0 + t)[j]; });
      s.acc[j] = pt::rescale_add(s.acc[j], c, tile);
    }
    s.m = m_new;
    t0 += n;
  }
}

void portable_merge(PortableState& a, const PortableState& b) {
  if (b.empty()) return;
  if (a.empty()) {
    a = b;
    return;
  }
  const pt::MergeWeights w = pt::merge_weights(a.m, b.m);
  a.l = pt::merge_value(a.l, b.l, w);
  for (size_t j = 0; j < a.acc.size(); ++j) a.acc[j] = pt::merge_value(a.acc[j], b.acc[j], w);
  a.m = w.m;
}

void portable_finish(const PortableState& s, float* out) {
  for (size_t j = 0; j < s.acc.size(); ++j) out[j] = pt::div(s.acc[j], s.l);
}

}  // namespace

HostTensor portable_gemm(const GemmArgs& args, RunNotes* notes) {
  // Four rows x eight columns at a time (independent accumulators, so the compiler can
  // vectorise across them); each accumulator runs exactly pt::gemm_element's sequence.
  const PackedGemm g = pack_gemm(args);
  std::vector<float> out(static_cast<size_t>(g.m * g.n));
  parallel_for(g.num_panels(), g.panel_work(), [&](int64_t panel) {
    const float* w = g.panels.data() + panel * g.k * kGemmLanes;
    for (int64_t rb = 0; rb < g.num_row_blocks(); ++rb) {
      const float* rows[kGemmRows];
      for (int r = 0; r < kGemmRows; ++r) {
        rows[r] = g.a.data() + std::min(rb * kGemmRows + r, g.m - 1) * g.k;
      }
      float acc[kGemmRows][kGemmLanes] = {};
      for (int64_t kk = 0; kk < g.k; ++kk) {
        const float* wk = w + kk * kGemmLanes;
        for (int r = 0; r < kGemmRows; ++r) {
          for (int l = 0; l < kGemmLanes; ++l)
            acc[r][l] = pt::mul_add(acc[r][l], rows[r][kk], wk[l]);
        }
      }
      for (int r = 0; r < kGemmRows && rb * kGemmRows + r < g.m; ++r) {
        for (int l = 0; l < kGemmLanes && panel * kGemmLanes + l < g.n; ++l) {
          const int64_t col = panel * kGemmLanes + l;
          out[(rb * kGemmRows + r) * g.n + col] =
              g.bias.empty() ? acc[r][l] : pt::add(acc[r][l], g.bias[col]);
        }
      }
    }
  });
  if (notes) {
    (*notes)["kernel"] = "portable-sequential-k";
    (*notes)["split_k"] = "1";
    if (args.allow_tf32) (*notes)["tf32"] = "ignored (IEEE fp32)";
  }
  return portable_output(args.out_dtype, {g.m, g.n}, out);
}

HostTensor portable_rmsnorm(const RmsNormArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), d = args.x->dim(1);
  const std::vector<float> w = to_float(*args.weight);
  std::vector<float> out(static_cast<size_t>(rows * d));
  parallel_for(rows, 4 * d, [&](int64_t r) {
    float* x = out.data() + r * d;  // converted in place (exact), then overwritten by the result
    to_float(*args.x, r * d, d, x);
    float lanes[pt::kLanes];
    for (int l = 0; l < pt::kLanes; ++l) lanes[l] = pt::lane_sum(x, d, l, pt::Square{});
    const float inv = pt::rms_inverse(pt::tree32_sum(lanes), d, args.eps);
    for (int64_t j = 0; j < d; ++j) x[j] = pt::rms_output(x[j], inv, w[j]);
  });
  if (notes) {
    (*notes)["kernel"] = "portable-32-lane-tree";
    (*notes)["row_splits"] = "1";
  }
  return portable_output(args.out_dtype, {rows, d}, out);
}

HostTensor portable_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), v = args.x->dim(1);
  std::vector<float> out(static_cast<size_t>(rows * v));
  parallel_for(rows, 4 * v, [&](int64_t r) {
    float* x = out.data() + r * v;
    to_float(*args.x, r * v, v, x);
    float lanes[pt::kLanes];
    for (int l = 0; l < pt::kLanes; ++l) lanes[l] = pt::lane_max(x, v, l);
    const float mx = pt::tree32_max(lanes);
    for (int l = 0; l < pt::kLanes; ++l) lanes[l] = pt::lane_sum(x, v, l, pt::ExpShifted{mx});
    const float lse = pt::log(pt::tree32_sum(lanes));
    for (int64_t j = 0; j < v; ++j) x[j] = pt::log_softmax_output(x[j], mx, lse);
  });
  if (notes) {
    (*notes)["kernel"] = "portable-32-lane-tree";
    (*notes)["row_splits"] = "1";
  }
  return portable_output(args.out_dtype, {rows, v}, out);
}

namespace {

// The portable plan for a row over KV tokens [0, len): splits of `split` tokens, each folded from
// an empty state in tiles aligned to its start, merged in split order.
void portable_split_kv(const float* q, const SequenceKv& kv, int64_t len, int64_t split,
                       float scale, float* out) {
  PortableState total(kv.head_dim);
  for (int64_t b = 0; b < len; b += split) {
    PortableState part(kv.head_dim);
    portable_attend(q, kv, b, std::min(len, b + split), b, scale, part);
    portable_merge(total, part);
  }
  portable_finish(total, out);
}

}  // namespace

HostTensor portable_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes) {
  const int64_t seqs = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const int64_t split = invariant_attention_split_size(args.splits);
  const std::vector<float> q = to_float(*args.q);
  std::vector<float> out(static_cast<size_t>(seqs * H * D));
  for_each_decode_row(args, [&](int64_t, const SequenceKv& kv, int64_t row) {
    portable_split_kv(q.data() + row * D, kv, kv.len, split, args.scale, out.data() + row * D);
  });
  if (notes) {
    (*notes)["kernel"] = "portable-split-kv";
    (*notes)["split_size"] = std::to_string(split);
    (*notes)["tile"] = std::to_string(pt::kAttentionTile);
  }
  return portable_output(args.out_dtype, {seqs, H, D}, out);
}

HostTensor portable_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes) {
  const int64_t tokens = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const int64_t split = invariant_attention_split_size(args.splits);
  const std::vector<float> q = to_float(*args.q);
  std::vector<float> out(static_cast<size_t>(tokens * H * D));
  for_each_prefill_row(args, [&](int64_t, const SequenceKv& kv, int64_t, int64_t pos, int64_t row) {
    portable_split_kv(q.data() + row * D, kv, pos + 1, split, args.scale, out.data() + row * D);
  });
  if (notes) {
    (*notes)["kernel"] = "portable-decode-splits";
    (*notes)["split_size"] = std::to_string(split);
    (*notes)["tile"] = std::to_string(pt::kAttentionTile);
  }
  return portable_output(args.out_dtype, {tokens, H, D}, out);
}

}  // namespace nvdet::cpu
