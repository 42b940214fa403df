#pragma once
// The weights of a decoder, laid out for the backend's GEMM (nn.Linear layout: [out, in]).
// Q, K and V are fused into one [q_dim + 2 kv_dim, hidden] matrix (rows: Q heads, K heads, V
// heads) and gate/up into one [2 intermediate, hidden] matrix (rows: gate, then up), so each
// layer makes one GEMM call for each; a fused GEMM's rows are the same dot products as the
// separate ones, so fusing changes no bits of an invariant kernel and only the shape a vendor
// heuristic sees. Every tensor is in the activation dtype.
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/model/model_config.h"
#include "lib/ops/fp8_quant.h"

namespace nvdet {

// FP8 checkpoints (README "FP8"): the linear layers stored in FP8 with their block scales. Where
// one is set, the layer's HostTensor of the same name is empty and its GEMM is an FP8 GEMM; null
// where the layer is in the activation dtype (norms, embeddings, and what the checkpoint keeps
// unquantised, such as the LM head and the MoE router).
struct LayerFp8 {
  using Weight = std::shared_ptr<const Fp8Weight>;
  Weight qkv, o_proj, gate_up, down, router, shared_gate_up, shared_down, shared_gate;
  std::vector<Weight> expert_gate_up, expert_down;  // [num_experts] in an MoE layer
};

struct LayerWeights {
  HostTensor attn_norm;  // [hidden]
  HostTensor qkv;        // [qkv_dim, hidden]
  HostTensor qkv_bias;   // [qkv_dim] or empty
  HostTensor q_norm;     // [head_dim] or empty (config.qk_norm: Qwen3)
  HostTensor k_norm;     // [head_dim] or empty
  HostTensor o_proj;     // [hidden, q_dim]
  HostTensor o_bias;     // [hidden] or empty (config.o_bias)
  HostTensor mlp_norm;   // [hidden]
  // A dense MLP layer: gate_up and down (empty in an MoE layer, config.is_moe_layer()).
  HostTensor gate_up;       // [2 intermediate, hidden]
  HostTensor gate_up_bias;  // [2 intermediate] or empty (config.mlp_bias)
  HostTensor down;          // [hidden, intermediate]
  HostTensor down_bias;     // [hidden] or empty (config.mlp_bias)
  // An MoE layer: the router and each expert's SwiGLU MLP, fused like the dense one (rows: gate,
  // then up), one tensor per expert so that each expert's GEMM is its own backend call.
  HostTensor router;                       // [num_experts, hidden]
  std::vector<HostTensor> expert_gate_up;  // [num_experts] x [2 expert_intermediate, hidden]
  std::vector<HostTensor> expert_down;     // [num_experts] x [hidden, expert_intermediate]
  // Qwen2-MoE's shared expert (config.shared_expert_intermediate > 0), else empty.
  HostTensor shared_gate_up;  // [2 shared_expert_intermediate, hidden]
  HostTensor shared_down;     // [hidden, shared_expert_intermediate]
  HostTensor shared_gate;     // [1, hidden]: sigmoid(x · shared_gate) scales the shared expert
  LayerFp8 fp8;
};

struct ModelWeights {
  ModelConfig config;
  DType dtype = DType::kBF16;
  HostTensor embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  HostTensor final_norm;         // [hidden]
  HostTensor lm_head;            // [vocab, hidden] (a copy of embed when the checkpoint ties them)
  LayerFp8::Weight fp8_lm_head;  // an FP8 checkpoint's LM head in FP8 (lm_head then empty)
  // Whether any linear layer is FP8 (an FP8 checkpoint): its GEMMs need an activation scheme
  // (DecodeOptions::fp8) and run on the host engine only.
  bool fp8 = false;
};

// Seeded synthetic weights: projections ~ N(0, 1/sqrt(fan_in)) so that each GEMM keeps the scale
// of its input, norm weights 1 + N(0, 0.1) (near 1, never all equal), embeddings ~ N(0, 1), and
// biases ~ N(0, 0.1) where the config has them (qkv_bias, o_bias, mlp_bias), q/k norm weights
// like the other norms when config.qk_norm; MoE layers get a router and every expert's gate/up
// and down like the dense projections. Element values are a pure function of (seed,
// tensor, row, column); rows are generated in parallel.
ModelWeights make_synthetic_weights(const ModelConfig& config, DType dtype, uint64_t seed);

}  // namespace nvdet
