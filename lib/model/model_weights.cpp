#include "lib/model/model_weights.h"

#include <cmath>
#include <span>

#include "lib/core/parallel.h"

namespace nvdet {
namespace {

// Streams of synthetic weights: far from the request and filler streams (batch_layout.h), one
// block of 2^24 rows per tensor so that no two tensors share a row stream.
constexpr uint64_t kModelWeightStream = uint64_t{3} << 52;

uint64_t tensor_stream(int64_t layer, int kind) {
  return kModelWeightStream + ((static_cast<uint64_t>(layer + 1) * 16 + kind) << 24);
}

// Experts: a block of 2^24 rows each (gate_up in the first half, down in the second), above
// every tensor_stream and below the prompt streams (5 << 52): layers < 2^12, experts < 2^14.
uint64_t expert_stream(int64_t layer, int32_t expert) {
  const uint64_t block = (static_cast<uint64_t>(layer) << 14) + static_cast<uint64_t>(expert);
  return kModelWeightStream + (uint64_t{1} << 50) + block * (uint64_t{1} << 24);
}

// Fills t (rank 1 or 2) with offset + N(0, stddev), row by row, rows in parallel.
void fill_rows(HostTensor& t, uint64_t seed, uint64_t stream, float stddev, float offset = 0.0f) {
  const int64_t rows = t.rank() == 1 ? 1 : t.dim(0);
  const int64_t cols = t.rank() == 1 ? t.dim(0) : t.row_elems();
  std::byte* base = t.mutable_data();
  const DType dtype = t.dtype();
  parallel_for(rows, cols * 8, [&](int64_t r) {  // a normal draw costs several flops
    std::vector<float> row(static_cast<size_t>(cols));
    fill_normal(std::span<float>(row), seed, stream + static_cast<uint64_t>(r), stddev);
    for (int64_t c = 0; c < cols; ++c) store_element(base, dtype, r * cols + c, row[c] + offset);
  });
}

HostTensor matrix(DType dtype, int64_t rows, int64_t cols, uint64_t seed, uint64_t stream) {
  HostTensor t(dtype, {rows, cols});
  fill_rows(t, seed, stream, 1.0f / std::sqrt(static_cast<float>(cols)));
  return t;
}

HostTensor norm_weight(DType dtype, int64_t d, uint64_t seed, uint64_t stream) {
  HostTensor t(dtype, {d});
  fill_rows(t, seed, stream, 0.1f, 1.0f);
  return t;
}

HostTensor bias(DType dtype, int64_t d, uint64_t seed, uint64_t stream) {
  HostTensor t(dtype, {d});
  fill_rows(t, seed, stream, 0.1f);
  return t;
}

}  // namespace

ModelWeights make_synthetic_weights(const ModelConfig& c, DType dtype, uint64_t seed) {
  ModelWeights w;
  w.config = c;
  w.dtype = dtype;
  w.embed = HostTensor(dtype, {c.vocab, c.hidden});
  fill_rows(w.embed, seed, tensor_stream(-1, 0), 1.0f);
  for (int32_t l = 0; l < c.layers; ++l) {
    LayerWeights L;
    L.attn_norm = norm_weight(dtype, c.hidden, seed, tensor_stream(l, 0));
    L.qkv = matrix(dtype, c.qkv_dim(), c.hidden, seed, tensor_stream(l, 1));
    if (c.qkv_bias) L.qkv_bias = bias(dtype, c.qkv_dim(), seed, tensor_stream(l, 2));
    if (c.qk_norm) {
      L.q_norm = norm_weight(dtype, c.head_dim, seed, tensor_stream(l, 7));
      L.k_norm = norm_weight(dtype, c.head_dim, seed, tensor_stream(l, 8));
    }
    L.o_proj = matrix(dtype, c.hidden, c.q_dim(), seed, tensor_stream(l, 3));
    if (c.o_bias) L.o_bias = bias(dtype, c.hidden, seed, tensor_stream(l, 9));
    if (c.mlp_bias) {
      L.gate_up_bias = bias(dtype, 2 * int64_t{c.intermediate}, seed, tensor_stream(l, 10));
      L.down_bias = bias(dtype, c.hidden, seed, tensor_stream(l, 11));
    }
    L.mlp_norm = norm_weight(dtype, c.hidden, seed, tensor_stream(l, 4));
    if (c.is_moe_layer(l)) {
      // The router takes the layer's unused kind 12; the experts a block of their own.
      L.router = matrix(dtype, c.num_experts, c.hidden, seed, tensor_stream(l, 12));
      for (int32_t e = 0; e < c.num_experts; ++e) {
        const uint64_t base = expert_stream(l, e);
        L.expert_gate_up.push_back(
            matrix(dtype, 2 * int64_t{c.expert_intermediate}, c.hidden, seed, base));
        L.expert_down.push_back(
            matrix(dtype, c.hidden, c.expert_intermediate, seed, base + (uint64_t{1} << 23)));
      }
      if (c.shared_expert_intermediate > 0) {
        const int64_t si = c.shared_expert_intermediate;
        L.shared_gate_up = matrix(dtype, 2 * si, c.hidden, seed, tensor_stream(l, 13));
        L.shared_down = matrix(dtype, c.hidden, si, seed, tensor_stream(l, 14));
        L.shared_gate = matrix(dtype, 1, c.hidden, seed, tensor_stream(l, 15));
      }
    } else {
      L.gate_up = matrix(dtype, 2 * int64_t{c.intermediate}, c.hidden, seed, tensor_stream(l, 5));
      L.down = matrix(dtype, c.hidden, c.intermediate, seed, tensor_stream(l, 6));
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm = norm_weight(dtype, c.hidden, seed, tensor_stream(-1, 1));
  w.lm_head = matrix(dtype, c.vocab, c.hidden, seed, tensor_stream(-1, 2));
  return w;
}

}  // namespace nvdet
