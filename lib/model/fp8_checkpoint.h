#pragma once
// config.json's quantization_config for FP8 checkpoints (README "FP8"), in the layout the hub's
// FP8 models use (DeepSeek-V3, Qwen3-*-FP8) and transformers' FineGrainedFP8Config writes:
// quant_method fp8, activation_scheme dynamic, weight_block_size [128, 128], e4m3 weights
// (safetensors F8_E4M3) each with a float32 weight_scale_inv of one scale per 128 x 128 block. Read
// strictly: another quant_method (awq, gptq, bitsandbytes, compressed-tensors, ...) is refused by
// its name, and so is every setting of fp8 that changes the math and is not computed (static
// activation scales, other block sizes or scale formats, per-tensor FP8 weights).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nvdet {

struct Fp8CheckpointConfig {
  bool enabled = false;  // quantization_config with quant_method fp8
  // modules_to_not_convert (or ignored_layers): module names the checkpoint keeps unquantised.
  std::vector<std::string> not_converted;
  bool keeps(const std::string& module) const;  // `module` is listed there
};

// `q` is config.json's quantization_config; `path` names config.json in messages.
Fp8CheckpointConfig parse_quantization_config(const nlohmann::json& q, const std::string& path);

}  // namespace nvdet
