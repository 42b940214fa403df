#pragma once
// The arguments of one op call, as every backend receives them. Tensors are borrowed (the
// workload owns them). Conventions shared by all backends:
//  - row-major, contiguous; the first dimension is the token (row) dimension;
//  - reductions accumulate in fp32 (cpu-reference: in double);
//  - outputs are returned as a new HostTensor of `out_dtype`, rounded to nearest even.
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/fp8_quant.h"
#include "lib/ops/op_kind.h"

namespace nvdet {

// out[m, n] = a[m, k] · w[n, k]^T (+ bias[n]). `w` is stored as nn.Linear stores weights:
// [n, k], K contiguous (a "TN" GEMM in BLAS terms). a, w and bias share one dtype.
struct GemmArgs {
  const HostTensor* a = nullptr;     // [m, k]
  const HostTensor* w = nullptr;     // [n, k]
  const HostTensor* bias = nullptr;  // [n] or null
  DType out_dtype = DType::kFP32;
  bool allow_tf32 = false;  // fp32 inputs only: let vendor kernels use TF32
  // FP8 (lib/ops/fp8_quant.h): with `fp8_w` set, `w` is null and the GEMM multiplies `a`
  // quantised by `fp8`'s activation scheme with the quantised weight `fp8_w` (whose format and
  // scale kind `fp8` repeats); the bias is added in full precision after the scales.
  const Fp8Weight* fp8_w = nullptr;
  Fp8Scheme fp8 = {};
  bool is_fp8() const { return fp8_w != nullptr; }
};

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:]
struct RmsNormArgs {
  const HostTensor* x = nullptr;       // [rows, d]
  const HostTensor* weight = nullptr;  // [d], same dtype as x
  float eps = 1e-6f;
  DType out_dtype = DType::kFP32;
};

// out[r, :] = x[r, :] - max - log(sum(exp(x[r, :] - max)))
struct LogSoftmaxArgs {
  const HostTensor* x = nullptr;  // [rows, v]
  DType out_dtype = DType::kFP32;
};

// A paged KV cache shared by the attention ops. Sequence s's token t lives in page
// page_table[s * max_pages_per_seq + t / page_size], slot t % page_size.
struct PagedKv {
  const HostTensor* k = nullptr;    // [num_pages, page_size, num_kv_heads, head_dim]
  const HostTensor* v = nullptr;    // same shape and dtype as k
  std::vector<int32_t> page_table;  // [num_seqs * max_pages_per_seq]
  int32_t max_pages_per_seq = 0;
  int32_t page_size = 16;
  std::vector<int32_t> kv_lens;  // [num_seqs]: tokens in each sequence's cache
};

// Split settings that a sweep may fix. 0 means "the backend's own choice": invariant backends use
// a split size fixed by design (512 KV tokens), vendor-style backends their batch-dependent
// heuristic. A vendor-style backend given num_splits uses it; an invariant backend given
// split_size uses it (it is still independent of the batch).
struct AttentionSplits {
  int32_t split_size = 0;
  int32_t num_splits = 0;
};

// One query token per sequence: out[s, h, :] = softmax(q[s, h] · K_s^T * scale) · V_s over the
// sequence's kv_lens[s] cached tokens, query head h reading KV head h / (num_heads/num_kv_heads).
struct AttentionDecodeArgs {
  const HostTensor* q = nullptr;  // [num_seqs, num_heads, head_dim]
  PagedKv kv;
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 0.0f;
  AttentionSplits splits;
  DType out_dtype = DType::kFP32;
};

// A chunk of prompt tokens per sequence, already written into the cache: sequence s has
// q_len[s] = q_start[s+1] - q_start[s] new tokens, which are the last q_len[s] of its
// kv_lens[s] cached tokens. New token i of sequence s sits at absolute position
// p = kv_lens[s] - q_len[s] + i and attends causally to cached tokens [0, p].
// prefix_len[s] (informational) is how many of the cached tokens came from a prefix cache; the
// vendor-style policy splits its KV reduction at the prefix and chunk boundaries, as cascade /
// chunked-prefill kernels do, the invariant one only at fixed positions.
struct AttentionPrefillArgs {
  const HostTensor* q = nullptr;    // [total_new_tokens, num_heads, head_dim]
  std::vector<int32_t> q_start;     // [num_seqs + 1]
  std::vector<int32_t> prefix_len;  // [num_seqs]
  PagedKv kv;
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 0.0f;
  AttentionSplits splits;
  DType out_dtype = DType::kFP32;
};

// One mixture-of-experts block over a batch of token rows (op moe):
//   logits = x · router^T (fp32); route = route_tokens(logits, ...) (lib/ops/moe_routing.h);
//   for each expert e, over the rows routed to it: gu = x_e · gate_up[e]^T (in x's dtype, gate
//   rows first), h = silu(gate) * up (in x's dtype), y_e = h · down[e]^T (fp32);
//   out[r] = sum over r's top-k slots j of weight[r, j] * y_{expert[r, j]}[r], rounded to
//   out_dtype.
// The weights are those of transformers' Qwen3-MoE / Mixtral blocks, one tensor per expert.
struct MoeArgs {
  const HostTensor* x = nullptr;           // [rows, hidden]
  const HostTensor* router = nullptr;      // [experts, hidden]
  std::vector<const HostTensor*> gate_up;  // [experts] x [2 * intermediate, hidden]
  std::vector<const HostTensor*> down;     // [experts] x [hidden, intermediate]
  int32_t top_k = 1;
  bool norm_topk_prob = true;
  // Rows whose experts the run's notes describe (the probed requests' rows): each such expert's
  // row count and the plan its GEMMs got. Changes no result.
  std::vector<int64_t> noted_rows;
  DType out_dtype = DType::kFP32;
  // FP8 experts (lib/ops/fp8_quant.h): with these set (one per expert), gate_up and down are
  // empty and each expert GEMM is an FP8 GEMM of scheme `fp8`; the router stays in x's dtype.
  // dynamic_tensor takes one scale over all (token, top-k) rows of a stage, as a fused MoE
  // kernel quantises its whole input (lib/backend/moe_pipeline.h).
  std::vector<const Fp8Weight*> fp8_gate_up;  // [experts] x [2 * intermediate, hidden]
  std::vector<const Fp8Weight*> fp8_down;     // [experts] x [hidden, intermediate]
  Fp8Scheme fp8 = {};
  bool is_fp8() const { return !fp8_gate_up.empty(); }
};

using OpArgs = std::variant<GemmArgs, RmsNormArgs, LogSoftmaxArgs, AttentionDecodeArgs,
                            AttentionPrefillArgs, MoeArgs>;

OpKind op_kind(const OpArgs& args);
DType input_dtype(const OpArgs& args);

// Checks shapes and dtypes for consistency; throws Error(kBadInput) with a clear sentence. FP8
// arguments pass only where the caller computes FP8 (`computes_fp8`): a backend that does not
// refuses them here, before it reads a null `w`.
void validate_op_args(const OpArgs& args, bool computes_fp8 = false);
// Whether the call is an FP8 GEMM or an MoE block with FP8 experts.
bool is_fp8(const OpArgs& args);

}  // namespace nvdet
