#include "lib/model/hf_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {
namespace {

using json = nlohmann::json;

struct Architecture {
  const char* model_type;
  const char* class_name;
  // Keys this architecture's transformers config defines beyond the shared ones below.
  std::set<std::string> own_keys;
};

const Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", {"attention_bias", "mlp_bias", "pretraining_tp"}},
    {"mistral", "MistralForCausalLM", {"sliding_window"}},
    {"qwen2",
     "Qwen2ForCausalLM",
     {"use_sliding_window", "sliding_window", "max_window_layers", "use_mrope"}},
    {"qwen3",
     "Qwen3ForCausalLM",
     {"attention_bias", "use_sliding_window", "sliding_window", "max_window_layers"}},
    {"qwen3_moe",
     "Qwen3MoeForCausalLM",
     {"attention_bias", "use_sliding_window", "sliding_window", "max_window_layers", "num_experts",
      "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
      "decoder_sparse_step", "mlp_only_layers", "output_router_logits", "router_aux_loss_coef"}},
    {"qwen2_moe",
     "Qwen2MoeForCausalLM",
     {"use_sliding_window", "sliding_window", "max_window_layers", "num_experts",
      "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
      "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers", "output_router_logits",
      "router_aux_loss_coef", "qkv_bias"}},
    {"mixtral",
     "MixtralForCausalLM",
     {"sliding_window", "num_local_experts", "num_experts_per_tok", "output_router_logits",
      "router_aux_loss_coef", "router_jitter_noise"}},
};

// Mixture-of-experts variants that change the routing or the experts' math and are not
// computed: named in their own sentence rather than as an unknown key.
const std::pair<const char*, const char*> kRefusedMoeKeys[] = {
    {"n_group", "grouped routing (experts chosen within the best groups)"},
    {"topk_group", "grouped routing (experts chosen within the best groups)"},
    {"routed_scaling_factor", "scaling of the routed experts' output"},
    {"scoring_func", "a router scoring function other than softmax"},
    {"topk_method", "a top-k method other than plain top-k of the softmax"},
    {"n_shared_experts", "shared experts"},
    {"shared_expert_intermediate_size", "a shared expert (computed for qwen2_moe only)"},
    {"first_k_dense_replace", "DeepSeek's dense-first layer schedule"},
    {"moe_layer_freq", "DeepSeek's MoE layer frequency"},
    {"ep_size", "expert-parallel layouts"},
};

// Keys every supported architecture shares: the ones read below, and metadata that does not
// change the logits of a greedy forward pass (token ids, dtype names, dropout, the cache switch,
// the position limit - RoPE as implemented has none).
const std::set<std::string> kSharedKeys = {"architectures",
                                           "model_type",
                                           "transformers_version",
                                           "torch_dtype",
                                           "dtype",
                                           "_name_or_path",
                                           "bos_token_id",
                                           "eos_token_id",
                                           "pad_token_id",
                                           "max_position_embeddings",
                                           "initializer_range",
                                           "use_cache",
                                           "attention_dropout",
                                           "output_attentions",
                                           "output_hidden_states",
                                           "return_dict",
                                           "tokenizer_class",
                                           "tie_word_embeddings",
                                           "vocab_size",
                                           "hidden_size",
                                           "intermediate_size",
                                           "num_hidden_layers",
                                           "num_attention_heads",
                                           "num_key_value_heads",
                                           "head_dim",
                                           "hidden_act",
                                           "rms_norm_eps",
                                           "rope_theta",
                                           "rope_scaling",
                                           "rope_parameters",
                                           "partial_rotary_factor",
                                           "layer_types",
                                           "quantization_config"};

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw_input_error(path + ": " + what);
}

bool has(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

int64_t int_field(const json& j, const std::string& path, const char* key,
                  std::optional<int64_t> fallback, int64_t lo, int64_t hi) {
  if (!has(j, key)) {
    if (fallback) return *fallback;
    refuse(path, std::string("'") + key + "' is missing");
  }
  if (!j[key].is_number_integer()) {
    refuse(path, std::string("'") + key + "' must be an integer, got " + excerpt(j[key].dump()));
  }
  const int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) {
    refuse(path, std::string("'") + key + "' is " + std::to_string(v) + ", outside " +
                     std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

double positive_number(const json& j, const std::string& path, const std::string& where,
                       const char* key, std::optional<double> fallback) {
  if (!has(j, key)) {
    if (fallback) return *fallback;
    refuse(path, "'" + where + key + "' is missing");
  }
  const json& v = j[key];
  if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>())) {
    refuse(path, "'" + where + key + "' must be a positive number, got " + excerpt(j[key].dump()));
  }
  // The model computes in fp32: a value that is infinite or zero as a float (rope_theta 1e39,
  // rms_norm_eps 1e-50) would silently compute another model.
  const double d = v.get<double>();
  if (d > std::numeric_limits<float>::max() || static_cast<float>(d) == 0.0f) {
    refuse(path, "'" + where + key + "' is " + excerpt(j[key].dump()) +
                     ", outside the range of a 32-bit float that the model computes in");
  }
  return d;
}

bool bool_field(const json& j, const std::string& path, const char* key, bool fallback) {
  if (!has(j, key)) return fallback;
  if (!j[key].is_boolean()) refuse(path, std::string("'") + key + "' must be true or false");
  return j[key].get<bool>();
}

// model_type and architectures, checked against each other and the supported set.
const Architecture& architecture_of(const json& j, const std::string& path) {
  std::string type;
  if (has(j, "model_type")) {
    if (!j["model_type"].is_string()) refuse(path, "'model_type' must be a string");
    type = j["model_type"].get<std::string>();
  }
  std::string cls;
  if (has(j, "architectures")) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.size() != 1 || !a[0].is_string()) {
      refuse(path, "'architectures' must list exactly one class name, got " + excerpt(a.dump()));
    }
    cls = a[0].get<std::string>();
  }
  if (type.empty() && cls.empty()) {
    refuse(path, "names neither 'model_type' nor 'architectures', so the architecture is unknown");
  }
  for (const Architecture& arch : kArchitectures) {
    if (!type.empty() && type != arch.model_type) continue;
    if (!cls.empty() && cls != arch.class_name) {
      if (type.empty()) continue;
      refuse(path, "'architectures' is " + excerpt(cls) + " but 'model_type' " + excerpt(type) +
                       " is computed as " + arch.class_name +
                       "; nvdet computes only the causal-LM classes");
    }
    return arch;
  }
  refuse(path,
         (type.empty() ? "'architectures' " + excerpt(cls) : "'model_type' " + excerpt(type)) +
             " is not supported (nvdet computes llama, mistral, qwen2, qwen3, qwen2_moe, "
             "qwen3_moe and mixtral)");
}

// RoPE: transformers 5's rope_parameters, or transformers 4's rope_theta and rope_scaling.
void parse_rope(const json& j, const std::string& path, ModelConfig& c) {
  const bool params = has(j, "rope_parameters"), scaling = has(j, "rope_scaling");
  if (params && scaling) {
    refuse(path,
           "gives both 'rope_parameters' and 'rope_scaling'; which one transformers "
           "reads depends on its version");
  }
  const std::string key = params ? "rope_parameters" : "rope_scaling";
  const json rope = params ? j["rope_parameters"] : scaling ? j["rope_scaling"] : json::object();
  if (!rope.is_object())
    refuse(path, "'" + key + "' must be an object, got " + excerpt(rope.dump()));
  const std::string where = key + ".";

  std::optional<double> theta;
  if (has(j, "rope_theta")) theta = positive_number(j, path, "", "rope_theta", std::nullopt);
  if (has(rope, "rope_theta")) {
    const double t = positive_number(rope, path, where, "rope_theta", std::nullopt);
    if (theta && *theta != t) {
      refuse(path, "'rope_theta' (" + excerpt(j["rope_theta"].dump()) + ") and '" + where +
                       "rope_theta' (" + excerpt(rope["rope_theta"].dump()) + ") disagree");
    }
    theta = t;
  }
  c.rope_theta = static_cast<float>(theta.value_or(10000.0));

  std::string type = "default";
  for (const char* k : {"rope_type", "type"}) {
    if (!has(rope, k)) continue;
    if (!rope[k].is_string()) refuse(path, "'" + where + k + "' must be a string");
    const std::string t = rope[k].get<std::string>();
    if (has(rope, "rope_type") && has(rope, "type") && t != rope["rope_type"].get<std::string>()) {
      refuse(path, "'" + where + "rope_type' and '" + where + "type' disagree");
    }
    type = t;
  }
  std::set<std::string> allowed = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
  RopeScaling& s = c.rope_scaling;
  if (type == "default") {
    s.type = RopeType::kDefault;
  } else if (type == "linear") {
    s.type = RopeType::kLinear;
    s.factor = positive_number(rope, path, where, "factor", std::nullopt);
    allowed.insert("factor");
  } else if (type == "llama3") {
    s.type = RopeType::kLlama3;
    s.factor = positive_number(rope, path, where, "factor", std::nullopt);
    s.low_freq_factor = positive_number(rope, path, where, "low_freq_factor", std::nullopt);
    s.high_freq_factor = positive_number(rope, path, where, "high_freq_factor", std::nullopt);
    s.original_max_position_embeddings =
        positive_number(rope, path, where, "original_max_position_embeddings", std::nullopt);
    if (!(s.high_freq_factor > s.low_freq_factor)) {
      refuse(path, "'" + where + "high_freq_factor' must exceed '" + where + "low_freq_factor'");
    }
    allowed.insert(
        {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else {
    refuse(path, "'" + where + "rope_type' " + excerpt(type) +
                     " is not implemented (nvdet computes RoPE types default, linear and llama3)");
  }
  for (const auto& [k, v] : rope.items()) {
    if (!allowed.count(k)) {
      refuse(path, "'" + where + excerpt(k) + "' is not implemented for rope type " + type +
                       "; refusing rather than ignoring it");
    }
  }
  for (const json* obj : {&j, &rope}) {
    if (has(*obj, "partial_rotary_factor") &&
        !((*obj)["partial_rotary_factor"].is_number() &&
          (*obj)["partial_rotary_factor"].get<double>() == 1.0)) {
      refuse(path, "'partial_rotary_factor' is " + excerpt((*obj)["partial_rotary_factor"].dump()) +
                       "; only full rotary embeddings (1.0) are implemented");
    }
  }
}

// Sliding-window attention: the window (0: none) that some layer would use.
int64_t sliding_window_of(const json& j, const std::string& path, const Architecture& arch,
                          int32_t layers) {
  bool slides = false;
  if (has(j, "layer_types")) {
    const json& t = j["layer_types"];
    if (!t.is_array() || t.size() != static_cast<size_t>(layers)) {
      refuse(path, "'layer_types' must list one type per layer (" + std::to_string(layers) + ")");
    }
    for (const json& e : t) {
      const std::string s = e.is_string() ? e.get<std::string>() : e.dump();
      if (s == "sliding_attention") {
        slides = true;
      } else if (s != "full_attention") {
        refuse(path, "'layer_types' holds " + excerpt(s) +
                         "; only full_attention and sliding_attention are implemented");
      }
    }
  }
  const std::string type = arch.model_type;
  if (type == "mistral" || type == "mixtral") slides = slides || has(j, "sliding_window");
  if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe" || type == "qwen2_moe") {
    slides = slides || bool_field(j, path, "use_sliding_window", false);
  }
  if (!slides) return 0;
  if (!has(j, "sliding_window")) {
    refuse(path, "asks for sliding-window attention but gives no 'sliding_window'");
  }
  return int_field(j, path, "sliding_window", std::nullopt, 1, int64_t{1} << 40);
}

// Qwen3-MoE and Mixtral: the experts, top-k, renormalisation and which layers are sparse.
void parse_moe(const json& j, const std::string& path, ModelConfig& c) {
  const bool mixtral = c.architecture == "mixtral";
  if (has(j, "num_experts") && has(j, "num_local_experts") &&
      j["num_experts"] != j["num_local_experts"]) {
    refuse(path, "'num_experts' and 'num_local_experts' disagree");
  }
  const char* count_key =
      has(j, "num_local_experts") || mixtral ? "num_local_experts" : "num_experts";
  // transformers' defaults: Qwen3-MoE 128 experts, top-8, 768 wide; Qwen2-MoE 60, top-4, 1408
  // wide; Mixtral 8 experts, top-2, intermediate_size wide, always renormalised.
  const bool qwen2 = c.architecture == "qwen2_moe";
  c.num_experts = static_cast<int32_t>(int_field(j, path, count_key,
                                                 mixtral ? 8
                                                 : qwen2 ? 60
                                                         : 128,
                                                 1, 1 << 14));
  c.experts_per_token = static_cast<int32_t>(int_field(j, path, "num_experts_per_tok",
                                                       mixtral ? 2
                                                       : qwen2 ? 4
                                                               : 8,
                                                       1, c.num_experts));
  c.expert_intermediate = mixtral ? c.intermediate
                                  : static_cast<int32_t>(int_field(j, path, "moe_intermediate_size",
                                                                   qwen2 ? 1408 : 768, 1, 1 << 30));
  c.norm_topk_prob = mixtral || bool_field(j, path, "norm_topk_prob", false);
  if (c.architecture == "qwen2_moe") {
    c.shared_expert_intermediate = static_cast<int32_t>(
        int_field(j, path, "shared_expert_intermediate_size", 5632, 0, 1 << 30));
  }
  c.moe_layers.assign(static_cast<size_t>(c.layers), true);
  if (mixtral) return;
  // transformers: layer l is sparse unless listed in mlp_only_layers, and when
  // (l + 1) % decoder_sparse_step == 0.
  const int64_t step = int_field(j, path, "decoder_sparse_step", 1, 1, c.layers + int64_t{1});
  for (int32_t l = 0; l < c.layers; ++l) c.moe_layers[l] = (l + 1) % step == 0;
  if (has(j, "mlp_only_layers")) {
    const json& m = j["mlp_only_layers"];
    if (!m.is_array() || m.size() > static_cast<size_t>(c.layers)) {
      refuse(path, "'mlp_only_layers' must list layer indices (at most one per layer)");
    }
    for (const json& e : m) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= c.layers) {
        refuse(path, "'mlp_only_layers' holds " + e.dump() + ", not a layer index 0.." +
                         std::to_string(c.layers - 1));
      }
      c.moe_layers[static_cast<size_t>(e.get<int64_t>())] = false;
    }
  }
  if (std::find(c.moe_layers.begin(), c.moe_layers.end(), true) == c.moe_layers.end()) {
    // No sparse layer at all: still a valid transformers model, computed as a dense one.
    c.num_experts = c.experts_per_token = c.expert_intermediate = 0;
    c.norm_topk_prob = false;
    c.shared_expert_intermediate = 0;
    c.moe_layers.clear();
  }
}

}  // namespace

HfConfig parse_hf_config(const json& j, const std::string& path) {
  if (!j.is_object()) refuse(path, "must hold a JSON object");
  const Architecture& arch = architecture_of(j, path);
  const std::string type = arch.model_type;
  for (const auto& [key, what] : kRefusedMoeKeys) {
    if (has(j, key) && !arch.own_keys.count(key)) {
      refuse(path, std::string("'") + key + "' asks for " + what +
                       ", which is not implemented; refusing rather than ignoring it");
    }
  }
  for (const auto& [k, v] : j.items()) {
    if (!kSharedKeys.count(k) && !arch.own_keys.count(k)) {
      refuse(path, "key '" + excerpt(k) + "' is not understood for model_type " + type +
                       " and may change the model's math; refusing rather than ignoring it");
    }
  }

  HfConfig out;
  ModelConfig& c = out.model;
  c.architecture = type;
  constexpr int64_t kBig = int64_t{1} << 30;
  c.hidden = static_cast<int32_t>(int_field(j, path, "hidden_size", std::nullopt, 1, 1 << 20));
  c.layers = static_cast<int32_t>(int_field(j, path, "num_hidden_layers", std::nullopt, 1, 4096));
  c.num_heads =
      static_cast<int32_t>(int_field(j, path, "num_attention_heads", std::nullopt, 1, 4096));
  c.num_kv_heads =
      static_cast<int32_t>(int_field(j, path, "num_key_value_heads", c.num_heads, 1, 4096));
  c.intermediate =
      static_cast<int32_t>(int_field(j, path, "intermediate_size", std::nullopt, 1, kBig));
  c.vocab = static_cast<int32_t>(int_field(j, path, "vocab_size", std::nullopt, 2, kBig));
  // transformers' Qwen3 defaults head_dim to 128; the others (Qwen3-MoE too) to hidden / heads.
  std::optional<int64_t> head_dim;
  if (type == "qwen3") {
    head_dim = 128;
  } else if (c.hidden % c.num_heads == 0) {
    head_dim = c.hidden / c.num_heads;
  } else if (!has(j, "head_dim")) {
    refuse(path, "'hidden_size' (" + std::to_string(c.hidden) +
                     ") is not a multiple of 'num_attention_heads' (" +
                     std::to_string(c.num_heads) + ") and 'head_dim' is not given");
  }
  c.head_dim = static_cast<int32_t>(int_field(j, path, "head_dim", head_dim, 1, 4096));
  c.rms_eps = static_cast<float>(positive_number(j, path, "", "rms_norm_eps", 1e-6));

  if (has(j, "hidden_act")) {
    const std::string act =
        j["hidden_act"].is_string() ? j["hidden_act"].get<std::string>() : j["hidden_act"].dump();
    if (act != "silu" && act != "swish") {
      refuse(path, "'hidden_act' is " + excerpt(act) + "; only silu (SwiGLU) is implemented");
    }
  }
  if (has(j, "pretraining_tp") &&
      !(j["pretraining_tp"].is_number_integer() && j["pretraining_tp"].get<int64_t>() == 1)) {
    refuse(path, "'pretraining_tp' is " + excerpt(j["pretraining_tp"].dump()) +
                     "; only 1 is implemented");
  }
  if (bool_field(j, path, "use_mrope", false)) {
    refuse(path, "'use_mrope' is true; multimodal RoPE is not implemented");
  }
  parse_rope(j, path, c);

  const bool attention_bias = bool_field(j, path, "attention_bias", false);
  // Qwen2-MoE: q/k/v biases unless its qkv_bias says otherwise (transformers 4 had no key).
  c.qkv_bias = type == "qwen2" || attention_bias ||
               (type == "qwen2_moe" && bool_field(j, path, "qkv_bias", true));
  c.o_bias = attention_bias;
  c.mlp_bias = bool_field(j, path, "mlp_bias", false);
  c.qk_norm = type == "qwen3" || type == "qwen3_moe";
  if (type == "qwen3_moe" || type == "qwen2_moe" || type == "mixtral") parse_moe(j, path, c);
  c.sliding_window = sliding_window_of(j, path, arch, c.layers);
  out.tie_word_embeddings = bool_field(j, path, "tie_word_embeddings", false);
  if (has(j, "quantization_config"))
    out.fp8 = parse_quantization_config(j["quantization_config"], path);
  if (has(j, "eos_token_id")) {
    const json& e = j["eos_token_id"];
    for (const json& id : e.is_array() ? e : json::array({e})) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= c.vocab)
        refuse(path, "'eos_token_id' must be token ids of the vocabulary (0.." +
                         std::to_string(c.vocab - 1) + "), got " + excerpt(e.dump()));
      out.eos_token_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  validate_config(c, path);
  return out;
}

}  // namespace nvdet
