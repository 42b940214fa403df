#include "lib/model/synthetic_checkpoint.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "lib/core/error.h"
#include "lib/core/temporary_files.h"
#include "lib/model/checkpoint.h"
#include "lib/model/hf_config.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

// Elements [begin, begin + count) of a vector, or rows of a matrix: a copy.
HostTensor part(const HostTensor& t, int64_t begin, int64_t count) {
  if (t.rank() > 1) return t.slice_rows(begin, count);
  HostTensor out(t.dtype(), {count});
  const size_t size = dtype_size(t.dtype());
  std::memcpy(out.mutable_data(), t.data() + begin * size, count * size);
  return out;
}

}  // namespace

void write_synthetic_checkpoint(const std::string& config_folder, uint64_t seed,
                                const fs::path& out) {
  const HfConfig hf = read_hf_config_json(config_folder);
  const ModelConfig& c = hf.model;
  const ModelWeights w = make_synthetic_weights(c, DType::kBF16, seed);
  // The parts of the fused tensors are copies; the rest are written from `w` directly.
  std::vector<std::pair<std::string, HostTensor>> owned;
  owned.reserve(static_cast<size_t>(c.layers) * (10 + 2 * static_cast<size_t>(c.num_experts)));
  std::vector<std::pair<std::string, const HostTensor*>> refs;
  auto keep = [&](std::string name, HostTensor t) {
    owned.emplace_back(std::move(name), std::move(t));
  };
  refs.emplace_back("model.embed_tokens.weight", &w.embed);
  const int64_t q = c.q_dim(), kv = c.kv_dim(), inter = c.intermediate;
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const LayerWeights& L = w.layers[l];
    refs.emplace_back(p + "input_layernorm.weight", &L.attn_norm);
    keep(p + "self_attn.q_proj.weight", part(L.qkv, 0, q));
    keep(p + "self_attn.k_proj.weight", part(L.qkv, q, kv));
    keep(p + "self_attn.v_proj.weight", part(L.qkv, q + kv, kv));
    if (c.qkv_bias) {
      keep(p + "self_attn.q_proj.bias", part(L.qkv_bias, 0, q));
      keep(p + "self_attn.k_proj.bias", part(L.qkv_bias, q, kv));
      keep(p + "self_attn.v_proj.bias", part(L.qkv_bias, q + kv, kv));
    }
    if (c.qk_norm) {
      refs.emplace_back(p + "self_attn.q_norm.weight", &L.q_norm);
      refs.emplace_back(p + "self_attn.k_norm.weight", &L.k_norm);
    }
    refs.emplace_back(p + "self_attn.o_proj.weight", &L.o_proj);
    if (c.o_bias) refs.emplace_back(p + "self_attn.o_proj.bias", &L.o_bias);
    refs.emplace_back(p + "post_attention_layernorm.weight", &L.mlp_norm);
    if (c.is_moe_layer(l)) {
      // One tensor per expert, named as transformers saves them.
      const bool mixtral = c.architecture == "mixtral";
      const std::string m = p + (mixtral ? "block_sparse_moe." : "mlp.");
      const int64_t ei = c.expert_intermediate;
      refs.emplace_back(m + "gate.weight", &L.router);
      for (int32_t e = 0; e < c.num_experts; ++e) {
        const std::string x = m + "experts." + std::to_string(e) + ".";
        keep(x + (mixtral ? "w1" : "gate_proj") + ".weight", part(L.expert_gate_up[e], 0, ei));
        keep(x + (mixtral ? "w3" : "up_proj") + ".weight", part(L.expert_gate_up[e], ei, ei));
        refs.emplace_back(x + (mixtral ? "w2" : "down_proj") + ".weight", &L.expert_down[e]);
      }
      if (const int64_t si = c.shared_expert_intermediate; si > 0) {
        keep(p + "mlp.shared_expert.gate_proj.weight", part(L.shared_gate_up, 0, si));
        keep(p + "mlp.shared_expert.up_proj.weight", part(L.shared_gate_up, si, si));
        refs.emplace_back(p + "mlp.shared_expert.down_proj.weight", &L.shared_down);
        refs.emplace_back(p + "mlp.shared_expert_gate.weight", &L.shared_gate);
      }
      continue;
    }
    keep(p + "mlp.gate_proj.weight", part(L.gate_up, 0, inter));
    keep(p + "mlp.up_proj.weight", part(L.gate_up, inter, inter));
    if (c.mlp_bias) {
      keep(p + "mlp.gate_proj.bias", part(L.gate_up_bias, 0, inter));
      keep(p + "mlp.up_proj.bias", part(L.gate_up_bias, inter, inter));
      refs.emplace_back(p + "mlp.down_proj.bias", &L.down_bias);
    }
    refs.emplace_back(p + "mlp.down_proj.weight", &L.down);
  }
  refs.emplace_back("model.norm.weight", &w.final_norm);
  for (const auto& [name, t] : owned) refs.emplace_back(name, &t);
  fs::create_directories(out);
  fs::copy_file(fs::path(config_folder) / "config.json", out / "config.json",
                fs::copy_options::overwrite_existing);
  if (!hf.tie_word_embeddings) refs.emplace_back("lm_head.weight", &w.lm_head);
  write_safetensors(out / "model.safetensors", refs);
}

ModelWeights load_synthetic_checkpoint(const std::string& config_folder, uint64_t seed,
                                       DType dtype) {
  static std::atomic<int> counter{0};
  const fs::path dir =
      temporary_base("the synthetic checkpoint of '" + config_folder + "'") /
      ("nvdet-synthetic-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const TemporaryFolder remove(dir);  // also on SIGINT/SIGTERM: the checkpoint may be GBs
  write_synthetic_checkpoint(config_folder, seed, dir);
  return load_hf_checkpoint(dir.string(), dtype);
}

}  // namespace nvdet
