#pragma once
// The architecture of a Llama/Qwen-style decoder: what the forward pass needs to know about the
// shapes, independent of where the weights come from (seeded synthetic or a checkpoint).
#include <cstdint>
#include <string>

#include "lib/scenario/scenario.h"

namespace nvdet {

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
  bool qkv_bias = false;  // Qwen2: q/k/v projections carry a bias

  int64_t q_dim() const { return int64_t{num_heads} * head_dim; }
  int64_t kv_dim() const { return int64_t{num_kv_heads} * head_dim; }
  int64_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }
};

// The architecture a synthetic scenario describes (head_dim 0 = hidden / heads).
ModelConfig config_from_spec(const ModelSpec& m);

// Throws Error(kBadInput) naming `source` (a scenario or config.json) when the dimensions cannot
// make a decoder the attention kernels accept.
void validate_config(const ModelConfig& c, const std::string& source);

}  // namespace nvdet
