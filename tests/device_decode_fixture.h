#pragma once
// Shared by the device-resident decoder's tests (CPU: model_device_engine_test.cpp, GPU:
// gpu_device_decoder_test.cpp): small seeded models that exercise every branch of the decoder
// (GQA, biases, Qwen3's q/k norms, llama3 RoPE scaling), a batch of prompts of unequal lengths
// cut into several prefill chunks, and a recorder of the bisect trace.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/model/decoder.h"
#include "lib/model/model_weights.h"

namespace nvdet::testing {

struct DecodeCase {
  std::string name;
  ModelConfig config;
  DType dtype = DType::kBF16;
};

// head_dim 64 (the GPU attention kernels take 64, 128 or 256), 2 query heads per KV head.
inline std::vector<DecodeCase> decode_cases() {
  ModelConfig llama;
  llama.hidden = 256;
  llama.layers = 2;
  llama.num_heads = 4;
  llama.num_kv_heads = 2;
  llama.head_dim = 64;
  llama.intermediate = 384;
  llama.vocab = 1000;
  llama.rope_theta = 500000.0f;
  llama.rope_scaling.type = RopeType::kLlama3;
  llama.rope_scaling.factor = 8.0;
  llama.rope_scaling.low_freq_factor = 1.0;
  llama.rope_scaling.high_freq_factor = 4.0;
  llama.rope_scaling.original_max_position_embeddings = 64;
  ModelConfig qwen = llama;
  qwen.rope_scaling = RopeScaling{};
  qwen.rope_theta = 10000.0f;
  qwen.qkv_bias = true;
  qwen.o_bias = true;
  qwen.mlp_bias = true;
  qwen.qk_norm = true;
  qwen.architecture = "qwen3";
  return {{"llama-bf16", llama, DType::kBF16}, {"qwen-biases-qknorm-fp16", qwen, DType::kFP16}};
}

// A Qwen3-MoE layout of the first case: 8 experts of 128, top-2, layer 1 keeping the dense MLP;
// with `shared`, Qwen2-MoE's shared expert of 192 as well.
inline ModelConfig moe_decode_config(bool shared = false) {
  ModelConfig c = decode_cases().front().config;
  c.architecture = shared ? "qwen2_moe" : "qwen3_moe";
  c.num_experts = 8;
  c.experts_per_token = 2;
  c.expert_intermediate = 128;
  c.norm_topk_prob = !shared;
  c.moe_layers = {true, false};
  if (shared) c.shared_expert_intermediate = 192;
  return c;
}

// 6 seeded prompts of 3 to 40 tokens.
inline std::vector<std::vector<int32_t>> decode_prompts(int32_t vocab) {
  std::mt19937_64 rng(1601);
  const int lengths[] = {17, 3, 40, 9, 26, 33};
  std::vector<std::vector<int32_t>> prompts;
  for (int len : lengths) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(static_cast<int32_t>(rng() % vocab));
    prompts.push_back(p);
  }
  return prompts;
}

inline DecodeOptions decode_options(bool host_path) {
  DecodeOptions o;
  o.prefill_chunk = 16;  // three prefill passes for the 40-token prompt
  o.page_size = 16;
  o.max_new_tokens = 10;
  o.path = host_path ? DecodePath::kHost : DecodePath::kDevice;
  return o;
}

// Every (watched, step, layer, op, dtype, shape, bytes) the observer receives, in order.
class TraceRecorder final : public TensorObserver {
 public:
  void observe(size_t watched, int32_t step, int32_t layer, std::string_view op,
               const HostTensor& rows) override {
    std::string key = std::to_string(watched) + "/" + std::to_string(step) + "/" +
                      std::to_string(layer) + "/" + std::string(op) + "/" +
                      std::to_string(static_cast<int>(rows.dtype()));
    for (int64_t d : rows.shape()) key += "x" + std::to_string(d);
    keys.push_back(key);
    bytes.emplace_back(reinterpret_cast<const char*>(rows.data()), rows.nbytes());
  }
  std::vector<std::string> keys;
  std::vector<std::string> bytes;
};

inline bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

}  // namespace nvdet::testing
