#pragma once
// The architecture of a Llama/Mistral/Qwen-style decoder: what the forward pass needs to know,
// independent of where the weights come from (seeded synthetic or a checkpoint). Every field
// changes the math; a checkpoint whose config.json asks for anything not expressible here is
// refused when it is read (hf_config.h).
#include <cstdint>
#include <string>
#include <vector>

#include "lib/scenario/scenario.h"

namespace nvdet {

// How RoPE's frequencies are derived from theta (transformers' rope_type).
enum class RopeType {
  kDefault,  // inv_freq[i] = theta^(-2i/head_dim)
  kLinear,   // inv_freq / factor (position interpolation)
  kLlama3,   // Llama 3.1: low frequencies / factor, high kept, a smooth blend between
};

struct RopeScaling {
  RopeType type = RopeType::kDefault;
  double factor = 1.0;
  double low_freq_factor = 1.0;                 // llama3
  double high_freq_factor = 4.0;                // llama3
  double original_max_position_embeddings = 0;  // llama3
};

struct ModelConfig {
  int32_t hidden = 0;
  int32_t layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t intermediate = 0;
  int32_t vocab = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  bool qkv_bias = false;  // q/k/v projections carry a bias (Qwen2; Llama/Qwen3 attention_bias)
  bool o_bias = false;    // o_proj carries a bias (Llama/Qwen3 attention_bias)
  bool mlp_bias = false;  // gate/up/down carry biases (Llama mlp_bias)
  bool qk_norm = false;   // Qwen3: per-head RMSNorm of queries and keys before RoPE
  // Sliding-window attention's window in tokens (0: none). Only full attention is implemented,
  // which equals a sliding window no shorter than the sequence: a run whose sequences grow past
  // it is refused (decoder.h).
  int64_t sliding_window = 0;
  std::string architecture = "llama";  // config.json's model_type, for messages and reports
  // Mixture of experts (Qwen3-MoE, Mixtral; moe_routing.h says how rows are routed): the MLP of
  // each layer marked in moe_layers is a router GEMM [num_experts, hidden], top experts_per_token
  // of the softmax over experts (renormalised when norm_topk_prob), and each chosen expert's
  // SwiGLU MLP of width expert_intermediate; the other layers keep the dense MLP of width
  // intermediate. num_experts 0: a dense model.
  int32_t num_experts = 0;
  int32_t experts_per_token = 0;
  int32_t expert_intermediate = 0;
  bool norm_topk_prob = false;
  // Qwen2-MoE: a shared expert (a SwiGLU MLP of this width, 0: none) that every row goes
  // through, scaled by sigmoid(x · shared_expert_gate) and added to the routed experts' combine.
  int32_t shared_expert_intermediate = 0;
  std::vector<bool> moe_layers;  // [layers] when num_experts > 0

  int64_t q_dim() const { return int64_t{num_heads} * head_dim; }
  int64_t kv_dim() const { return int64_t{num_kv_heads} * head_dim; }
  int64_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }
  bool is_moe() const { return num_experts > 0; }
  bool is_moe_layer(int32_t layer) const {
    return is_moe() && static_cast<size_t>(layer) < moe_layers.size() && moe_layers[layer];
  }
  // The MLP weights of one layer, counting every expert (budgets and memory estimates).
  double mlp_weight_elems(int32_t layer) const;
};

// The architecture a synthetic scenario describes (head_dim 0 = hidden / heads).
ModelConfig config_from_spec(const ModelSpec& m);

// Throws Error(kBadInput) naming `source` (a scenario or config.json) when the dimensions cannot
// make a decoder the attention kernels accept.
void validate_config(const ModelConfig& c, const std::string& source);

}  // namespace nvdet
