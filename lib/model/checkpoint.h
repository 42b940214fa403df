#pragma once
// Reads a Hugging Face style Llama/Qwen2 checkpoint folder: config.json and its *.safetensors
// (sharded through model.safetensors.index.json, or every *.safetensors file in the folder).
// Tensors in BF16, F16 or F32 are converted to the scenario's dtype (round to nearest even).
// Every problem - missing or malformed config.json, a missing tensor, a wrong shape, a truncated
// file or a bad header - throws Error(kBadInput) with one sentence naming the file and tensor.
#include <string>

#include "lib/model/model_weights.h"

namespace nvdet {

// The architecture config.json describes (hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, intermediate_size, vocab_size, rms_norm_eps, rope_theta, head_dim).
ModelConfig read_hf_config(const std::string& folder);

ModelWeights load_hf_checkpoint(const std::string& folder, DType dtype);

}  // namespace nvdet
