#include "lib/model/fp8_checkpoint.h"

#include <algorithm>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {
namespace {

using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw_input_error(path + ": 'quantization_config' " + what);
}

std::vector<std::string> module_list(const json& q, const char* key, const std::string& path) {
  std::vector<std::string> out;
  if (!q.contains(key) || q[key].is_null()) return out;
  if (!q[key].is_array()) refuse(path, std::string("'") + key + "' must be a list of module names");
  for (const json& m : q[key]) {
    if (!m.is_string())
      refuse(path, std::string("'") + key + "' must list module names, got " + excerpt(m.dump()));
    out.push_back(m.get<std::string>());
  }
  return out;
}

}  // namespace

bool Fp8CheckpointConfig::keeps(const std::string& module) const {
  return std::find(not_converted.begin(), not_converted.end(), module) != not_converted.end();
}

Fp8CheckpointConfig parse_quantization_config(const json& q, const std::string& path) {
  if (!q.is_object()) refuse(path, "must be an object, got " + excerpt(q.dump()));
  if (!q.contains("quant_method") || !q["quant_method"].is_string())
    refuse(path, "names no 'quant_method', so the quantisation is unknown");
  const std::string method = q["quant_method"].get<std::string>();
  if (method != "fp8")
    refuse(path, "has quant_method '" + excerpt(method) +
                     "', which is not implemented (nvdet reads FP8 checkpoints, quant_method "
                     "fp8, only); refusing rather than computing another model");
  static const std::vector<std::string> known = {"quant_method",
                                                 "activation_scheme",
                                                 "weight_block_size",
                                                 "fmt",
                                                 "modules_to_not_convert",
                                                 "ignored_layers",
                                                 "modules_to_convert",
                                                 "dequantize",
                                                 "scale_fmt"};
  for (const auto& [k, v] : q.items()) {
    if (std::find(known.begin(), known.end(), k) == known.end())
      refuse(path, "key '" + excerpt(k) +
                       "' is not understood for quant_method fp8 and may change the math; "
                       "refusing rather than ignoring it");
  }
  const auto is = [&](const char* key, const json& value) {
    return !q.contains(key) || q[key].is_null() || q[key] == value;
  };
  if (!q.contains("weight_block_size") || q["weight_block_size"].is_null())
    refuse(path,
           "without 'weight_block_size' asks for per-tensor FP8 weights, which are not "
           "implemented (nvdet reads block-scaled FP8 checkpoints, weight_block_size [128, "
           "128])");
  if (q["weight_block_size"] != json::array({128, 128}))
    refuse(path, "has weight_block_size " + excerpt(q["weight_block_size"].dump()) +
                     ", which is not implemented (only [128, 128])");
  if (!q.contains("activation_scheme") || q["activation_scheme"] != "dynamic")
    refuse(path, "has activation_scheme " +
                     (q.contains("activation_scheme") ? excerpt(q["activation_scheme"].dump())
                                                      : std::string("(none)")) +
                     ", which is not implemented (only dynamic: static scales need per-layer "
                     "input_scale tensors, which nvdet does not read)");
  if (!is("fmt", "e4m3"))
    refuse(path, "has fmt " + excerpt(q["fmt"].dump()) + "; only e4m3 weights are read");
  if (!is("scale_fmt", "float"))
    refuse(path, "has scale_fmt " + excerpt(q["scale_fmt"].dump()) +
                     ", which is not implemented (only float32 block scales)");
  if (!is("dequantize", false))
    refuse(path, "has dequantize " + excerpt(q["dequantize"].dump()) +
                     ": dequantising on load computes another model than the FP8 one");
  if (!module_list(q, "modules_to_convert", path).empty())
    refuse(path, "lists 'modules_to_convert', which is not implemented");
  Fp8CheckpointConfig c;
  c.enabled = true;
  c.not_converted = module_list(q, "modules_to_not_convert", path);
  for (std::string& m : module_list(q, "ignored_layers", path))
    c.not_converted.push_back(std::move(m));
  return c;
}

}  // namespace nvdet
