#pragma once
// The decoder's elementwise steps, computed on the host. Each output element is a function of
// the same-index input elements (and, for RoPE, the token's own position) only: no reduction
// crosses rows, so these steps are batch-invariant by construction; whatever else is in the
// batch, a row's bits come out the same. Math is fp32, each result rounded once to the
// activation dtype (round to nearest even). Only the backend ops (GEMM, RMSNorm, attention)
// reduce, and those are what nvdet audits.
#include <cstdint>
#include <span>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/model/model_config.h"

namespace nvdet {

// Rows of the embedding table for `tokens`: [tokens.size(), hidden] (a copy, bit for bit).
HostTensor embed_tokens(const HostTensor& table, std::span<const int32_t> tokens);

// Rotary position embedding (the "rotate half" layout Llama/Qwen checkpoints use): in each
// Q and K head, element i < head_dim/2 pairs with i + head_dim/2 and both rotate by the angle
// position * inv_freq[i], inv_freq[i] = theta^(-2i/head_dim) scaled as config.rope_scaling says
// (linear or llama3). The angles and their sine/cosine are computed in double and rounded to
// float; the rotation itself is fp32. qkv: [rows, qkv_dim]; V columns are untouched.
class Rope {
 public:
  Rope(const ModelConfig& c);
  void apply(HostTensor& qkv, std::span<const int32_t> positions) const;
  // The cos and sin of the head_dim / 2 angles of `position` (what apply() rotates by); the
  // device decoder uploads these so that both paths rotate by the same floats.
  void cos_sin(int32_t position, float* cos_out, float* sin_out) const;
  int32_t head_dim() const { return head_dim_; }

 private:
  int32_t head_dim_, q_heads_, kv_heads_;
  std::vector<double> inv_freq_;
};

// a + b elementwise (the residual stream), fp32 then rounded.
HostTensor add(const HostTensor& a, const HostTensor& b);

// SwiGLU: gate_up [rows, 2I] (gate columns first) -> silu(gate) * up [rows, I], fp32 then rounded;
// silu(g) = g / (1 + exp(-g)) with kernels/portable_math.cuh's exp (within 2 ulp of the true
// value), which the device decoder shares, so that both give the same bits.
HostTensor swiglu(const HostTensor& gate_up);

// An MoE layer's combine over the experts' output rows y [*, hidden]: row r of the result sums,
// for j = 0 .. k-1 in order, weight[r * k + j] * y[slot[r * k + j], :] in fp32 from 0, rounded
// once to y's dtype (combine_experts' arithmetic, lib/model/moe_combine.h; the device decoder's
// launch_moe_combine computes the same). With Qwen2-MoE's shared expert, shared [rows, hidden]
// gated by sigmoid(shared_gate[r]) is added after the routed sum, before the rounding.
HostTensor combine_rows(const HostTensor& y, std::span<const int32_t> slot,
                        std::span<const float> weight, int64_t k,
                        const HostTensor* shared = nullptr, const float* shared_gate = nullptr);

// A copy of `t` with a new shape of the same element count.
HostTensor reshaped(const HostTensor& t, std::vector<int64_t> shape);

// Index of the largest value of row `row` of fp32 logits (the lowest index on ties; NaNs never
// win). Greedy decoding's choice.
int32_t argmax_row(const HostTensor& logits, int64_t row);

}  // namespace nvdet
