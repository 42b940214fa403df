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

  // The file's dtype of a tensor the checkpoint holds ("BF16", "F8_E4M3", ...).
  std::string dtype_of(const std::string& name) {
    const auto it = where_.find(name);
    if (it == where_.end()) return "";
    const SafetensorsFile& st = file(it->second);
    return st.contains(name) ? st.dtype(name) : "";
  }

  // An FP8 linear layer `module` of [rows, cols] (README "FP8"): `module`.weight in F8_E4M3 and
  // `module`.weight_scale_inv in F32, one scale per 128 x 128 block.
  Fp8Weight read_fp8_block(const std::string& module, int64_t rows, int64_t cols) {
    const std::string weight = module + ".weight", scale = module + ".weight_scale_inv";
    const auto raw = [&](const std::string& name, const char* dtype, std::vector<int64_t> shape) {
      const auto it = where_.find(name);
      if (it == where_.end()) {
        throw_input_error(folder_.string() + ": tensor '" + excerpt(name, kNameChars) +
                          "' is missing from the checkpoint (an FP8 weight needs its block "
                          "scales)");
      }
      read_.insert(name);
      const SafetensorsFile& st = file(it->second);
      const auto where = [&] {
        return it->second + ": tensor '" + excerpt(name, kNameChars) + "'";
      };
      if (!st.contains(name))
        throw_input_error(where() + " is missing (the index says it is here)");
      if (st.dtype(name) != dtype) {
        throw_input_error(where() + " is " + st.dtype(name) +
                          " but an FP8 checkpoint stores it as " + dtype);
      }
      if (st.shape(name) != shape) {
        throw_input_error(where() + " has shape " + shape_text(st.shape(name)) +
                          " but config.json implies " + shape_text(shape));
      }
      return st.read_raw(name);
    };
    const int64_t blocks_r = (rows + kFp8Group - 1) / kFp8Group;
    const int64_t blocks_c = (cols + kFp8Group - 1) / kFp8Group;
    const std::vector<std::byte> codes = raw(weight, "F8_E4M3", {rows, cols});
    const std::vector<std::byte> scales = raw(scale, "F32", {blocks_r, blocks_c});
    std::vector<uint8_t> c(codes.size());
    std::memcpy(c.data(), codes.data(), codes.size());
    std::vector<float> sc(static_cast<size_t>(blocks_r * blocks_c));
    std::memcpy(sc.data(), scales.data(), sc.size() * sizeof(float));
    return fp8_block_weight(rows, cols, std::move(c), std::move(sc), Fp8Format::kE4M3,
                            where_.at(weight) + ": tensor '" + excerpt(weight, kNameChars) + "'");
  }

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
                        "; only BF16, F16 and F32 tensors are read (and F8_E4M3 as the weight of "
                        "a linear layer of an FP8 checkpoint, README \"FP8\")");
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

// A linear layer's weight as the checkpoint stores it: in the activation dtype (`dense`), or in
// FP8 with its block scales (`fp8`, README "FP8").
struct LinearWeight {
  HostTensor dense;
  LayerFp8::Weight fp8;
};

// Reads linear layers, deciding by the stored dtype whether each is FP8, and checking that
// against config.json: FP8 weights need its quantization_config (quant_method fp8), a module it
// lists in modules_to_not_convert must not be FP8, and every other module it quantises must be
// (the LM head, the MoE router and Qwen2-MoE's shared-expert gate may stay unquantised, as the
// hub's FP8 checkpoints keep them).
class LinearReader {
 public:
  LinearReader(TensorSource& src, const Fp8CheckpointConfig& fp8, DType dtype, std::string config)
      : src_(src), fp8_(fp8), dtype_(dtype), config_(std::move(config)) {}

  LinearWeight read(const std::string& module, int64_t rows, int64_t cols,
                    bool may_stay_unquantised = false) {
    const std::string weight = module + ".weight";
    const std::string type = src_.dtype_of(weight);
    if (type.rfind("F8_", 0) == 0) {
      if (!fp8_.enabled) {
        throw_input_error(config_ + ": the checkpoint stores '" + excerpt(weight, kNameChars) +
                          "' in " + type +
                          " but config.json has no quantization_config (quant_method fp8)");
      }
      if (fp8_.keeps(module)) {
        throw_input_error(config_ + ": quantization_config lists '" + excerpt(module, kNameChars) +
                          "' in modules_to_not_convert, but the checkpoint stores it in " + type);
      }
      return {HostTensor(),
              std::make_shared<const Fp8Weight>(src_.read_fp8_block(module, rows, cols))};
    }
    if (fp8_.enabled && !may_stay_unquantised && !fp8_.keeps(module) && src_.contains(weight)) {
      throw_input_error(config_ + ": quantization_config (quant_method fp8) quantises '" +
                        excerpt(module, kNameChars) +
                        "', but the checkpoint stores its weight in " + type +
                        " (without weight_scale_inv)");
    }
    return {src_.read(weight, {rows, cols}, dtype_), nullptr};
  }

  DType dtype() const { return dtype_; }

  // Linear layers fused into one GEMM along their rows (q, k, v; gate, up): all FP8 or none.
  LinearWeight stacked(const std::vector<std::pair<std::string, int64_t>>& modules, int64_t cols) {
    std::vector<LinearWeight> parts;
    for (const auto& [module, rows] : modules) parts.push_back(read(module, rows, cols));
    const size_t fp8 = static_cast<size_t>(std::count_if(
        parts.begin(), parts.end(), [](const LinearWeight& p) { return p.fp8 != nullptr; }));
    if (fp8 == 0) {
      std::vector<HostTensor> dense;
      for (LinearWeight& p : parts) dense.push_back(std::move(p.dense));
      return {stack_rows(dense), nullptr};
    }
    if (fp8 != parts.size()) {
      throw_input_error(config_ + ": '" + excerpt(modules.front().first, kNameChars) +
                        "' and the layers computed with it in one GEMM must all be FP8 or none");
    }
    std::vector<const Fp8Weight*> w;
    for (const LinearWeight& p : parts) w.push_back(p.fp8.get());
    return {HostTensor(), std::make_shared<const Fp8Weight>(stack_fp8_rows(w))};
  }

 private:
  TensorSource& src_;
  const Fp8CheckpointConfig& fp8_;
  DType dtype_;
  std::string config_;
};

// An MoE layer's router and experts, in either layout a checkpoint holds them in: one tensor per
// expert (what transformers 4 and 5 save: Qwen3-MoE mlp.experts.{e}.gate_proj/up_proj/down_proj,
// Mixtral block_sparse_moe.experts.{e}.w1 (gate), w3 (up), w2 (down)), or the stacked tensors
// transformers 5's modules hold (mlp.experts.gate_up_proj [experts, 2 inter, hidden], gate rows
// first; mlp.experts.down_proj [experts, hidden, inter]), which from_pretrained reads as well.
void read_moe_layer(TensorSource& src, LinearReader& linear, const ModelConfig& c,
                    const std::string& layer_prefix, LayerWeights& L) {
  const int64_t h = c.hidden, inter = c.expert_intermediate, experts = c.num_experts;
  // Each linear layer into its HostTensor or its FP8 weight.
  const auto put = [](LinearWeight w, HostTensor& dense, LayerFp8::Weight& fp8) {
    dense = std::move(w.dense);
    fp8 = std::move(w.fp8);
  };
  if (const int64_t si = c.shared_expert_intermediate; si > 0) {
    const std::string s = layer_prefix + "mlp.shared_expert.";
    put(linear.stacked({{s + "gate_proj", si}, {s + "up_proj", si}}, h), L.shared_gate_up,
        L.fp8.shared_gate_up);
    put(linear.read(s + "down_proj", h, si), L.shared_down, L.fp8.shared_down);
    put(linear.read(layer_prefix + "mlp.shared_expert_gate", 1, h, true), L.shared_gate,
        L.fp8.shared_gate);
  }
  const bool mixtral = c.architecture == "mixtral";
  const std::string stacked = layer_prefix + "mlp.experts.gate_up_proj";
  L.expert_gate_up.resize(static_cast<size_t>(experts));
  L.expert_down.resize(static_cast<size_t>(experts));
  L.fp8.expert_gate_up.resize(static_cast<size_t>(experts));
  L.fp8.expert_down.resize(static_cast<size_t>(experts));
  if (src.contains(stacked)) {
    if (src.dtype_of(stacked).rfind("F8_", 0) == 0) {
      throw_input_error("tensor '" + excerpt(stacked, kNameChars) +
                        "': stacked FP8 experts are not read (FP8 checkpoints store one tensor "
                        "per expert)");
    }
    put(linear.read(layer_prefix + "mlp.gate", experts, h, true), L.router, L.fp8.router);
    const HostTensor gate_up = src.read(stacked, {experts, 2 * inter, h}, linear.dtype());
    const HostTensor down =
        src.read(layer_prefix + "mlp.experts.down_proj", {experts, h, inter}, linear.dtype());
    for (int64_t e = 0; e < experts; ++e) {
      L.expert_gate_up[e] = expert_of(gate_up, e);
      L.expert_down[e] = expert_of(down, e);
    }
    return;
  }
  const std::string m = layer_prefix + (mixtral ? "block_sparse_moe." : "mlp.");
  put(linear.read(m + "gate", experts, h, true), L.router, L.fp8.router);
  const char* gate = mixtral ? "w1" : "gate_proj";
  const char* up = mixtral ? "w3" : "up_proj";
  const char* down = mixtral ? "w2" : "down_proj";
  for (int64_t e = 0; e < experts; ++e) {
    const std::string x = m + "experts." + std::to_string(e) + ".";
    put(linear.stacked({{x + gate, inter}, {x + up, inter}}, h), L.expert_gate_up[e],
        L.fp8.expert_gate_up[e]);
    put(linear.read(x + down, h, inter), L.expert_down[e], L.fp8.expert_down[e]);
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
  const std::string cfg = (fs::path(folder) / "config.json").string();
  LinearReader linear(src, hf.fp8, dtype, cfg);
  const auto put = [](LinearWeight lw, HostTensor& dense, LayerFp8::Weight& fp8) {
    dense = std::move(lw.dense);
    fp8 = std::move(lw.fp8);
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
    put(linear.stacked({{a + "q_proj", q}, {a + "k_proj", kv}, {a + "v_proj", kv}}, h), L.qkv,
        L.fp8.qkv);
    if (c.qkv_bias) {
      L.qkv_bias = stack_rows({read(a + "q_proj.bias", {q}), read(a + "k_proj.bias", {kv}),
                               read(a + "v_proj.bias", {kv})});
    }
    if (c.qk_norm) {
      L.q_norm = read(a + "q_norm.weight", {c.head_dim});
      L.k_norm = read(a + "k_norm.weight", {c.head_dim});
    }
    put(linear.read(a + "o_proj", h, q), L.o_proj, L.fp8.o_proj);
    if (c.o_bias) L.o_bias = read(a + "o_proj.bias", {h});
    L.mlp_norm = read(p + "post_attention_layernorm.weight", {h});
    if (c.is_moe_layer(l)) {
      read_moe_layer(src, linear, c, p, L);
      w.layers.push_back(std::move(L));
      continue;
    }
    put(linear.stacked({{m + "gate_proj", inter}, {m + "up_proj", inter}}, h), L.gate_up,
        L.fp8.gate_up);
    put(linear.read(m + "down_proj", h, inter), L.down, L.fp8.down);
    if (c.mlp_bias) {
      L.gate_up_bias =
          stack_rows({read(m + "gate_proj.bias", {inter}), read(m + "up_proj.bias", {inter})});
      L.down_bias = read(m + "down_proj.bias", {h});
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm = read("model.norm.weight", {h});
  if (!hf.tie_word_embeddings) {
    put(linear.read("lm_head", c.vocab, h, true), w.lm_head, w.fp8_lm_head);
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
  w.fp8 = hf.fp8.enabled;
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
