#include "lib/model/checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/parallel.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

json read_json(const fs::path& path) {
  // Bounded: a config.json that is a FIFO or a link to /dev/zero is refused, never read forever.
  const std::string text = read_bounded_file(path, kMaxJsonFileBytes, "checkpoint file");
  return parse_json_input(text, path.string());
}

// An integer field of config.json; `fallback` when absent (nullopt: required).
int64_t int_field(const json& j, const fs::path& path, const char* key,
                  std::optional<int64_t> fallback, int64_t lo, int64_t hi) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    throw_input_error(path.string() + ": '" + key + "' is missing");
  }
  if (!j[key].is_number_integer()) {
    throw_input_error(path.string() + ": '" + key + "' must be an integer, got " + j[key].dump());
  }
  const int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) {
    throw_input_error(path.string() + ": '" + key + "' is " + std::to_string(v) +
                      ", outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

double real_field(const json& j, const fs::path& path, const char* key, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number() || j[key].get<double>() <= 0.0) {
    throw_input_error(path.string() + ": '" + key + "' must be a positive number, got " +
                      j[key].dump());
  }
  return j[key].get<double>();
}

// Which file holds each tensor: model.safetensors.index.json's weight_map, or the union of the
// folder's *.safetensors headers.
class TensorSource {
 public:
  explicit TensorSource(const fs::path& folder) : folder_(folder) {
    const fs::path index = folder / "model.safetensors.index.json";
    if (fs::exists(index)) {
      const json j = read_json(index);
      if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
        throw_input_error(index.string() + ": 'weight_map' is missing or not an object");
      }
      for (const auto& [name, file] : j["weight_map"].items()) {
        if (!file.is_string()) {
          throw_input_error(index.string() + ": the file of tensor '" + name + "' is not a string");
        }
        where_[name] = (folder / file.get<std::string>()).string();
      }
      return;
    }
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      if (e.path().extension() == ".safetensors") files.push_back(e.path());
    }
    if (ec) throw_input_error(folder.string() + ": cannot list the folder (" + ec.message() + ")");
    if (files.empty()) throw_input_error(folder.string() + ": holds no *.safetensors file");
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const SafetensorsFile& st = file(f.string());
      for (const std::string& name : st.names()) {
        if (where_.count(name)) {
          throw_input_error(f.string() + ": tensor '" + name + "' is also in " + where_[name]);
        }
        where_[name] = f.string();
      }
    }
  }

  bool contains(const std::string& name) const { return where_.count(name) > 0; }

  // The tensor, checked against `shape` and converted to `dtype`.
  HostTensor read(const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
    auto it = where_.find(name);
    if (it == where_.end()) {
      throw_input_error(folder_.string() + ": tensor '" + name + "' is missing from the checkpoint");
    }
    const SafetensorsFile& st = file(it->second);
    if (!st.contains(name)) {
      throw_input_error(it->second + ": tensor '" + name +
                        "' is missing (model.safetensors.index.json says it is here)");
    }
    if (st.shape(name) != shape) {
      throw_input_error(it->second + ": tensor '" + name + "' has shape " +
                        shape_text(st.shape(name)) + " but config.json implies " + shape_text(shape));
    }
    const std::string type = st.dtype(name);
    if (type != "BF16" && type != "F16" && type != "F32") {
      throw_input_error(it->second + ": tensor '" + name + "' is " + type +
                        "; only BF16, F16 and F32 checkpoints are read");
    }
    HostTensor t = st.read(name);
    if (t.dtype() == dtype) return t;
    HostTensor out(dtype, t.shape());
    const int64_t n = t.numel();
    constexpr int64_t kBlock = 1 << 16;
    parallel_for((n + kBlock - 1) / kBlock, [&](int64_t b) {
      for (int64_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) out.set(i, t.get(i));
    });
    return out;
  }

 private:
  const SafetensorsFile& file(const std::string& path) {
    auto it = open_.find(path);
    if (it == open_.end()) {
      if (!fs::exists(path)) throw_input_error(path + ": file not found");
      it = open_.emplace(path, SafetensorsFile::open(path)).first;
    }
    return it->second;
  }

  fs::path folder_;
  std::map<std::string, std::string> where_;
  std::map<std::string, SafetensorsFile> open_;
};

// Several tensors stacked along their first dimension (rows of matrices, elements of biases):
// row-major, so the result is their bytes one after another.
HostTensor stack_rows(const std::vector<HostTensor>& parts) {
  std::vector<int64_t> shape = parts.front().shape();
  shape[0] = 0;
  for (const HostTensor& p : parts) shape[0] += p.dim(0);
  HostTensor out(parts.front().dtype(), shape);
  std::byte* dst = out.mutable_data();
  for (const HostTensor& p : parts) {
    std::memcpy(dst, p.data(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

}  // namespace

ModelConfig read_hf_config(const std::string& folder) {
  const fs::path path = fs::path(folder) / "config.json";
  if (!fs::is_directory(folder)) throw_input_error(folder + ": checkpoint folder not found");
  const json j = read_json(path);
  if (!j.is_object()) throw_input_error(path.string() + ": must hold a JSON object");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    throw_input_error(path.string() + ": 'rope_scaling' is not supported (plain RoPE only)");
  }
  ModelConfig c;
  constexpr int64_t kBig = int64_t{1} << 30;
  c.hidden = static_cast<int32_t>(int_field(j, path, "hidden_size", std::nullopt, 1, 1 << 20));
  c.layers = static_cast<int32_t>(int_field(j, path, "num_hidden_layers", std::nullopt, 1, 4096));
  c.num_heads = static_cast<int32_t>(int_field(j, path, "num_attention_heads", std::nullopt, 1, 4096));
  c.num_kv_heads =
      static_cast<int32_t>(int_field(j, path, "num_key_value_heads", c.num_heads, 1, 4096));
  c.intermediate = static_cast<int32_t>(int_field(j, path, "intermediate_size", std::nullopt, 1, kBig));
  c.vocab = static_cast<int32_t>(int_field(j, path, "vocab_size", std::nullopt, 2, kBig));
  if (!j.contains("head_dim") && c.hidden % c.num_heads != 0) {
    throw_input_error(path.string() + ": 'hidden_size' (" + std::to_string(c.hidden) +
                      ") is not a multiple of 'num_attention_heads' (" +
                      std::to_string(c.num_heads) + ") and 'head_dim' is not given");
  }
  c.head_dim = static_cast<int32_t>(int_field(j, path, "head_dim", c.hidden / c.num_heads, 1, 4096));
  c.rms_eps = static_cast<float>(real_field(j, path, "rms_norm_eps", 1e-6));
  c.rope_theta = static_cast<float>(real_field(j, path, "rope_theta", 10000.0));
  validate_config(c, path.string());
  return c;
}

ModelWeights load_hf_checkpoint(const std::string& folder, DType dtype) {
  ModelConfig c = read_hf_config(folder);
  const fs::path cfg_path = fs::path(folder) / "config.json";
  const json j = read_json(cfg_path);
  TensorSource src{fs::path(folder)};

  const std::string first_bias = "model.layers.0.self_attn.q_proj.bias";
  c.qkv_bias = src.contains(first_bias);
  const int64_t h = c.hidden, q = c.q_dim(), kv = c.kv_dim(), inter = c.intermediate;

  ModelWeights w;
  w.config = c;
  w.dtype = dtype;
  w.embed = src.read("model.embed_tokens.weight", {c.vocab, h}, dtype);
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights L;
    L.attn_norm = src.read(p + "input_layernorm.weight", {h}, dtype);
    L.qkv = stack_rows({src.read(p + "self_attn.q_proj.weight", {q, h}, dtype),
                        src.read(p + "self_attn.k_proj.weight", {kv, h}, dtype),
                        src.read(p + "self_attn.v_proj.weight", {kv, h}, dtype)});
    if (c.qkv_bias) {
      L.qkv_bias = stack_rows({src.read(p + "self_attn.q_proj.bias", {q}, dtype),
                               src.read(p + "self_attn.k_proj.bias", {kv}, dtype),
                               src.read(p + "self_attn.v_proj.bias", {kv}, dtype)});
    }
    L.o_proj = src.read(p + "self_attn.o_proj.weight", {h, q}, dtype);
    L.mlp_norm = src.read(p + "post_attention_layernorm.weight", {h}, dtype);
    L.gate_up = stack_rows({src.read(p + "mlp.gate_proj.weight", {inter, h}, dtype),
                            src.read(p + "mlp.up_proj.weight", {inter, h}, dtype)});
    L.down = src.read(p + "mlp.down_proj.weight", {h, inter}, dtype);
    w.layers.push_back(std::move(L));
  }
  w.final_norm = src.read("model.norm.weight", {h}, dtype);
  bool tied = false;
  if (j.contains("tie_word_embeddings") && !j["tie_word_embeddings"].is_null()) {
    if (!j["tie_word_embeddings"].is_boolean()) {
      throw_input_error(cfg_path.string() + ": 'tie_word_embeddings' must be true or false");
    }
    tied = j["tie_word_embeddings"].get<bool>();
  }
  if (src.contains("lm_head.weight") || !tied) {
    w.lm_head = src.read("lm_head.weight", {c.vocab, h}, dtype);
  } else {
    w.lm_head = w.embed;  // tied: the same values (a separate tensor, uploaded on its own)
  }
  return w;
}

}  // namespace nvdet
