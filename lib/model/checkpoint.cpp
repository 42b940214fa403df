#include "lib/model/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/parallel.h"
#include "lib/core/text_excerpt.h"
#include "lib/model/hf_config.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Bounded: a shape read from a file may list any number of dimensions.
std::string shape_text(const std::vector<int64_t>& shape) {
  constexpr size_t kShownDims = 8;
  std::string s = "[";
  for (size_t i = 0; i < shape.size() && i < kShownDims; ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  if (shape.size() > kShownDims) s += ", ... (" + std::to_string(shape.size()) + " dimensions)";
  return s + "]";
}

json read_json(const fs::path& path) {
  // Bounded: a config.json that is a FIFO or a link to /dev/zero is refused, never read forever.
  const std::string text = read_bounded_file(path, kMaxJsonFileBytes, "checkpoint file");
  return parse_json_input(text, path.string());
}

// Tensor names are quoted whole up to this length: real ones run to about 60 characters.
constexpr size_t kNameChars = 128;

// Whether `path` exists. A path that cannot even be looked up (a loop of symbolic links, a name
// longer than the system takes) is the input's fault: exit 2 with the reason, not an internal
// filesystem error.
bool exists_in_input(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw_input_error(excerpt(path.string(), 200) + ": cannot be read (" + ec.message() + ")");
  }
  return fs::exists(st);
}

// A shard named by the index: a relative path inside the checkpoint folder, never absolute, never
// through "..", and not a link that leads out of the folder, so that an index cannot make nvdet
// open (and quote) a file elsewhere on the machine.
fs::path shard_in_folder(const fs::path& index, const std::string& tensor,
                         const std::string& file) {
  const fs::path folder = index.parent_path();
  const fs::path rel(file);
  auto refuse = [&](const std::string& why) {
    throw_input_error(index.string() + ": the shard '" + excerpt(file, 80) + "' of tensor '" +
                      excerpt(tensor, kNameChars) + "' " + why);
  };
  if (file.empty() || rel.has_root_path())
    refuse("is not a relative path in the checkpoint folder");
  for (const fs::path& part : rel) {
    if (part == ".." || part == ".") refuse("must not contain '..' or '.'");
  }
  std::error_code ec_folder, ec_shard;
  const fs::path real_folder =
      fs::weakly_canonical(fs::absolute(folder.empty() ? "." : folder), ec_folder);
  const fs::path real_shard = fs::weakly_canonical(fs::absolute(folder / rel), ec_shard);
  if (ec_folder || ec_shard) {
    refuse("cannot be resolved (" + (ec_shard ? ec_shard : ec_folder).message() + ")");
  }
  const auto [end, _] =
      std::mismatch(real_folder.begin(), real_folder.end(), real_shard.begin(), real_shard.end());
  if (end != real_folder.end()) refuse("leads out of the checkpoint folder");
  return folder / rel;
}

// Which file holds each tensor: model.safetensors.index.json's weight_map, or the union of the
// folder's *.safetensors headers.
class TensorSource {
 public:
  explicit TensorSource(const fs::path& folder) : folder_(folder) {
    const fs::path index = folder / "model.safetensors.index.json";
    if (exists_in_input(index)) {
      const json j = read_json(index);
      if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
        throw_input_error(index.string() + ": 'weight_map' is missing or not an object");
      }
      for (const auto& [name, file] : j["weight_map"].items()) {
        if (!file.is_string()) {
          throw_input_error(index.string() + ": the file of tensor '" + excerpt(name, kNameChars) +
                            "' is not a string");
        }
        where_[name] = shard_in_folder(index, name, file.get<std::string>()).string();
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
          throw_input_error(f.string() + ": tensor '" + excerpt(name, kNameChars) +
                            "' is also in " + where_[name]);
        }
        where_[name] = f.string();
      }
    }
  }

  bool contains(const std::string& name) const { return where_.count(name) > 0; }

  // The checkpoint's tensors that no read() asked for, in name order.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto& [name, file] : where_) {
      if (!read_.count(name)) out.push_back(name);
    }
    return out;
  }

  // The tensor, checked against `shape` and converted to `dtype`.
  HostTensor read(const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
    auto it = where_.find(name);
    if (it == where_.end()) {
      throw_input_error(folder_.string() + ": tensor '" + excerpt(name, kNameChars) +
                        "' is missing from the checkpoint");
    }
    read_.insert(name);
    const SafetensorsFile& st = file(it->second);
    if (!st.contains(name)) {
      throw_input_error(it->second + ": tensor '" + excerpt(name, kNameChars) +
                        "' is missing (model.safetensors.index.json says it is here)");
    }
    if (st.shape(name) != shape) {
      throw_input_error(it->second + ": tensor '" + excerpt(name, kNameChars) + "' has shape " +
                        shape_text(st.shape(name)) + " but config.json implies " +
                        shape_text(shape));
    }
    const std::string type = st.dtype(name);
    if (type != "BF16" && type != "F16" && type != "F32") {
      throw_input_error(it->second + ": tensor '" + excerpt(name, kNameChars) + "' is " + type +
                        "; only BF16, F16 and F32 checkpoints are read");
    }
    HostTensor t = st.read(name);
    if (t.dtype() == dtype) return t;
    HostTensor out(dtype, t.shape());
    const int64_t n = t.numel();
    constexpr int64_t kBlock = 1 << 16;
    parallel_for((n + kBlock - 1) / kBlock, kBlock, [&](int64_t b) {
      for (int64_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) out.set(i, t.get(i));
    });
    return out;
  }

 private:
  const SafetensorsFile& file(const std::string& path) {
    auto it = open_.find(path);
    if (it == open_.end()) {
      if (!exists_in_input(path)) throw_input_error(excerpt(path, 200) + ": file not found");
      it = open_.emplace(path, SafetensorsFile::open(path)).first;
    }
    return it->second;
  }

  fs::path folder_;
  std::map<std::string, std::string> where_;
  std::map<std::string, SafetensorsFile> open_;
  std::set<std::string> read_;
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

// One expert of a stacked [experts, rows, cols] tensor, as a [rows, cols] matrix.
HostTensor expert_of(const HostTensor& stacked, int64_t e) {
  const HostTensor one = stacked.slice_rows(e, 1);
  HostTensor out(stacked.dtype(), {stacked.dim(1), stacked.dim(2)});
  std::memcpy(out.mutable_data(), one.data(), out.nbytes());
  return out;
}

// An MoE layer's router and experts, in either layout a checkpoint holds them in: one tensor per
// expert (what transformers 4 and 5 save: Qwen3-MoE mlp.experts.{e}.gate_proj/up_proj/down_proj,
// Mixtral block_sparse_moe.experts.{e}.w1 (gate), w3 (up), w2 (down)), or the stacked tensors
// transformers 5's modules hold (mlp.experts.gate_up_proj [experts, 2 inter, hidden], gate rows
// first; mlp.experts.down_proj [experts, hidden, inter]), which from_pretrained reads as well.
template <class Read>
void read_moe_layer(TensorSource& src, const Read& read, const ModelConfig& c,
                    const std::string& layer_prefix, LayerWeights& L) {
  const int64_t h = c.hidden, inter = c.expert_intermediate, experts = c.num_experts;
  if (const int64_t si = c.shared_expert_intermediate; si > 0) {
    const std::string s = layer_prefix + "mlp.shared_expert.";
    L.shared_gate_up =
        stack_rows({read(s + "gate_proj.weight", {si, h}), read(s + "up_proj.weight", {si, h})});
    L.shared_down = read(s + "down_proj.weight", {h, si});
    L.shared_gate = read(layer_prefix + "mlp.shared_expert_gate.weight", {1, h});
  }
  const bool mixtral = c.architecture == "mixtral";
  const std::string stacked = layer_prefix + "mlp.experts.gate_up_proj";
  if (src.contains(stacked)) {
    L.router = read(layer_prefix + "mlp.gate.weight", {experts, h});
    const HostTensor gate_up = read(stacked, {experts, 2 * inter, h});
    const HostTensor down = read(layer_prefix + "mlp.experts.down_proj", {experts, h, inter});
    for (int64_t e = 0; e < experts; ++e) {
      L.expert_gate_up.push_back(expert_of(gate_up, e));
      L.expert_down.push_back(expert_of(down, e));
    }
    return;
  }
  const std::string m = layer_prefix + (mixtral ? "block_sparse_moe." : "mlp.");
  L.router = read(m + "gate.weight", {experts, h});
  const char* gate = mixtral ? "w1" : "gate_proj";
  const char* up = mixtral ? "w3" : "up_proj";
  const char* down = mixtral ? "w2" : "down_proj";
  for (int64_t e = 0; e < experts; ++e) {
    const std::string x = m + "experts." + std::to_string(e) + ".";
    L.expert_gate_up.push_back(
        stack_rows({read(x + gate + ".weight", {inter, h}), read(x + up + ".weight", {inter, h})}));
    L.expert_down.push_back(read(x + down + ".weight", {h, inter}));
  }
}

}  // namespace

HfConfig read_hf_config_json(const std::string& folder) {
  if (!exists_in_input(folder) || !fs::is_directory(folder)) {
    throw_input_error(excerpt(folder, 200) + ": checkpoint folder not found");
  }
  const fs::path path = fs::path(folder) / "config.json";
  return parse_hf_config(read_json(path), path.string());
}

ModelConfig read_hf_config(const std::string& folder) { return read_hf_config_json(folder).model; }

ModelWeights load_hf_checkpoint(const std::string& folder, DType dtype) {
  const HfConfig hf = read_hf_config_json(folder);
  const ModelConfig& c = hf.model;
  TensorSource src{fs::path(folder)};
  const int64_t h = c.hidden, q = c.q_dim(), kv = c.kv_dim(), inter = c.intermediate;
  auto read = [&](const std::string& name, std::vector<int64_t> shape) {
    return src.read(name, shape, dtype);
  };

  ModelWeights w;
  w.config = c;
  w.dtype = dtype;
  w.embed = read("model.embed_tokens.weight", {c.vocab, h});
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string a = p + "self_attn.", m = p + "mlp.";
    LayerWeights L;
    L.attn_norm = read(p + "input_layernorm.weight", {h});
    L.qkv = stack_rows({read(a + "q_proj.weight", {q, h}), read(a + "k_proj.weight", {kv, h}),
                        read(a + "v_proj.weight", {kv, h})});
    if (c.qkv_bias) {
      L.qkv_bias = stack_rows({read(a + "q_proj.bias", {q}), read(a + "k_proj.bias", {kv}),
                               read(a + "v_proj.bias", {kv})});
    }
    if (c.qk_norm) {
      L.q_norm = read(a + "q_norm.weight", {c.head_dim});
      L.k_norm = read(a + "k_norm.weight", {c.head_dim});
    }
    L.o_proj = read(a + "o_proj.weight", {h, q});
    if (c.o_bias) L.o_bias = read(a + "o_proj.bias", {h});
    L.mlp_norm = read(p + "post_attention_layernorm.weight", {h});
    if (c.is_moe_layer(l)) {
      read_moe_layer(src, read, c, p, L);
      w.layers.push_back(std::move(L));
      continue;
    }
    L.gate_up = stack_rows(
        {read(m + "gate_proj.weight", {inter, h}), read(m + "up_proj.weight", {inter, h})});
    L.down = read(m + "down_proj.weight", {h, inter});
    if (c.mlp_bias) {
      L.gate_up_bias =
          stack_rows({read(m + "gate_proj.bias", {inter}), read(m + "up_proj.bias", {inter})});
      L.down_bias = read(m + "down_proj.bias", {h});
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm = read("model.norm.weight", {h});
  const std::string cfg = (fs::path(folder) / "config.json").string();
  if (!hf.tie_word_embeddings) {
    w.lm_head = read("lm_head.weight", {c.vocab, h});
  } else {
    w.lm_head = w.embed;  // tied: the same values (a separate tensor, uploaded on its own)
    // Some checkpoints store the tied head anyway; it must then be the embedding itself.
    if (src.contains("lm_head.weight")) {
      const HostTensor head = read("lm_head.weight", {c.vocab, h});
      if (std::memcmp(head.data(), w.embed.data(), head.nbytes()) != 0) {
        throw_input_error(cfg +
                          ": 'tie_word_embeddings' is true but the checkpoint's "
                          "lm_head.weight differs from model.embed_tokens.weight");
      }
    }
  }
  // Every tensor must have been read: one the loader skipped (an MoE expert, a bias the config
  // does not announce, a norm of another architecture) would make nvdet compute another model.
  const std::vector<std::string> extra = src.unread();
  if (!extra.empty()) {
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(extra.size(), 3); ++i)
      names += (i ? ", " : "") + excerpt(extra[i], kNameChars);
    if (extra.size() > 3) names += ", ...";
    throw_input_error(folder + ": the checkpoint holds " + std::to_string(extra.size()) +
                      " tensor(s) that a " + c.architecture +
                      " model with this config.json does not "
                      "use (" +
                      names + "); refusing rather than computing a model without them");
  }
  return w;
}

}  // namespace nvdet
