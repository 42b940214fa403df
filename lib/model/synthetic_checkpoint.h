#pragma once
// Seeded synthetic weights written as a Hugging Face checkpoint: for scenarios that audit
// full-size layer shapes (Llama-3-8B, Qwen3-8B) without shipping gigabytes, yet still through
// the checkpoint loader. The folder's config.json describes the model (any supported
// architecture, hf_config.h); the weights are make_synthetic_weights' for that config, split into
// the checkpoint's tensors (q/k/v, gate/up separate; biases, q/k norms where the config has them;
// no lm_head when tied) in bf16.
#include <cstdint>
#include <filesystem>
#include <string>

#include "lib/model/model_weights.h"

namespace nvdet {

// Writes `out`/config.json (a copy of `config_folder`'s) and `out`/model.safetensors.
void write_synthetic_checkpoint(const std::string& config_folder, uint64_t seed,
                                const std::filesystem::path& out);

// write_synthetic_checkpoint into a fresh temporary folder, load_hf_checkpoint from it, and
// remove the folder.
ModelWeights load_synthetic_checkpoint(const std::string& config_folder, uint64_t seed,
                                       DType dtype);

}  // namespace nvdet
