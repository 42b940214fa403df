#pragma once
// A Hugging Face config.json, read strictly: the architectures nvdet computes exactly as
// transformers does, and a refusal for everything else.
//
// Supported model_type (and architectures entry): llama (LlamaForCausalLM), mistral
// (MistralForCausalLM), qwen2 (Qwen2ForCausalLM), qwen3 (Qwen3ForCausalLM), and the mixtures of
// experts qwen3_moe (Qwen3MoeForCausalLM: num_experts or num_local_experts, num_experts_per_tok,
// moe_intermediate_size, norm_topk_prob, decoder_sparse_step, mlp_only_layers) and mixtral
// (MixtralForCausalLM: num_local_experts, num_experts_per_tok; always renormalised), and qwen2_moe
// (Qwen2MoeForCausalLM: Qwen3-MoE's keys, q/k/v biases, shared_expert_intermediate_size). Both
// formats:
// transformers 4 (top-level rope_theta, rope_scaling) and transformers 5 (rope_parameters).
// RoPE types default, linear and llama3. Llama: attention_bias (q/k/v/o), mlp_bias
// (gate/up/down). Qwen2: q/k/v biases. Qwen3: q_norm/k_norm, attention_bias, explicit head_dim.
// tie_word_embeddings everywhere.
//
// Refused (Error kBadInput, one sentence naming the key): another model_type or architectures
// entry; hidden_act other than silu; rope types other than the three; partial rotary; mrope;
// pretraining_tp other than 1; the MoE variants nvdet does not compute (grouped routing,
// routed_scaling_factor, sigmoid scoring, shared experts but Qwen2-MoE's, expert-parallel
// layouts) in their own sentence; a quantization_config other than FP8's (fp8_checkpoint.h); and
// every key not on the list of keys known to be understood or known not to change the logits.
// Sliding windows are recorded (ModelConfig::sliding_window) and refused by the decoder when a run
// outgrows them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/model/fp8_checkpoint.h"
#include "lib/model/model_config.h"

namespace nvdet {

struct HfConfig {
  ModelConfig model;
  bool tie_word_embeddings = false;
  // eos_token_id (one id or a list; empty when absent or null): the tokens that end a request
  // under serving traffic with `eos: on` (README "Serving traffic"). No effect on the logits.
  std::vector<int32_t> eos_token_ids;
  // quantization_config (README "FP8"): an FP8 checkpoint; any other quantisation is refused.
  Fp8CheckpointConfig fp8;
};

// `j` is config.json's parsed contents; `path` names it in messages.
HfConfig parse_hf_config(const nlohmann::json& j, const std::string& path);

}  // namespace nvdet
