#include "lib/model/model_config.h"

#include "lib/core/error.h"

namespace nvdet {

ModelConfig config_from_spec(const ModelSpec& m) {
  ModelConfig c;
  c.hidden = m.hidden;
  c.layers = m.layers;
  c.num_heads = m.num_heads;
  c.num_kv_heads = m.num_kv_heads;
  c.head_dim = m.head_dim ? m.head_dim : (m.num_heads ? m.hidden / m.num_heads : 0);
  c.intermediate = m.intermediate;
  c.vocab = m.vocab;
  c.rms_eps = m.rms_eps;
  c.rope_theta = m.rope_theta;
  return c;
}

void validate_config(const ModelConfig& c, const std::string& source) {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw_input_error(source + ": " + what);
  };
  need(c.hidden > 0, "hidden size must be at least 1");
  need(c.layers > 0, "the model needs at least one layer");
  need(c.num_heads > 0 && c.num_kv_heads > 0, "head counts must be at least 1");
  need(c.num_heads % c.num_kv_heads == 0, "attention heads (" + std::to_string(c.num_heads) +
                                              ") must be a multiple of KV heads (" +
                                              std::to_string(c.num_kv_heads) + ")");
  need(c.head_dim > 0 && c.head_dim % 8 == 0 && c.head_dim <= 256,
       "head dimension " + std::to_string(c.head_dim) +
           " is not supported (the attention kernels need a multiple of 8 up to 256)");
  need(c.intermediate > 0, "intermediate size must be at least 1");
  need(c.vocab >= 2, "vocabulary must hold at least 2 tokens");
  need(c.rms_eps > 0.0f, "rms_norm_eps must be positive");
  need(c.rope_theta > 0.0f, "rope_theta must be positive");
  need(c.rope_scaling.factor > 0.0, "the RoPE scaling factor must be positive");
  need(c.sliding_window >= 0, "sliding_window must not be negative");
  if (c.is_moe()) {
    need(c.experts_per_token >= 1 && c.experts_per_token <= c.num_experts,
         "'num_experts_per_tok' (" + std::to_string(c.experts_per_token) +
             ") must be from 1 to the number of experts (" + std::to_string(c.num_experts) + ")");
    need(c.expert_intermediate > 0, "the experts' intermediate size must be at least 1");
    need(c.moe_layers.size() == static_cast<size_t>(c.layers),
         "the MoE layers must be listed for every layer");
  }
}

double ModelConfig::mlp_weight_elems(int32_t layer) const {
  const double h = hidden;
  if (!is_moe_layer(layer)) return 3.0 * intermediate * h;
  // router + experts, and the shared expert with its gate
  return num_experts * h + num_experts * 3.0 * expert_intermediate * h +
         (shared_expert_intermediate > 0 ? 3.0 * shared_expert_intermediate * h + h : 0.0);
}

}  // namespace nvdet
