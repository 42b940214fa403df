#pragma once
// Reads a Hugging Face checkpoint folder of a supported architecture (hf_config.h: Llama,
// Mistral, Qwen2, Qwen3, Qwen3-MoE, Qwen2-MoE, Mixtral; MoE experts one tensor each or stacked):
// config.json and its *.safetensors (sharded through model.safetensors.index.json, or every
// *.safetensors file in the folder). Every tensor the
// config implies is read, and a checkpoint holding any other tensor is refused, naming the first
// few: nothing in it is silently left out of the computation.
// Tensors in BF16, F16 or F32 are converted to the scenario's dtype (round to nearest even).
// Every problem - missing or malformed config.json, a missing tensor, a wrong shape, a truncated
// file or a bad header - throws Error(kBadInput) with one sentence naming the file and tensor.
#include <string>

#include "lib/model/hf_config.h"
#include "lib/model/model_weights.h"

namespace nvdet {

// The architecture config.json describes, checked as parse_hf_config checks it.
ModelConfig read_hf_config(const std::string& folder);
// The same with what config.json says beyond the architecture (tie_word_embeddings).
HfConfig read_hf_config_json(const std::string& folder);

ModelWeights load_hf_checkpoint(const std::string& folder, DType dtype);

}  // namespace nvdet
