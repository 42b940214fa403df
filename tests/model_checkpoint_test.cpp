// Hugging Face checkpoint folders: a tiny Qwen2-style checkpoint (q/k/v biases) written with
// write_safetensors in the HF layout (separate q/k/v and gate/up tensors), sharded through an
// index, read back and checked against the same synthetic weights built in memory, bit for bit,
// weights and forward pass. Then every way a checkpoint can be broken must be a kBadInput with
// one sentence naming the file and tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/model/checkpoint.h"
#include "lib/model/decoder.h"
#include "lib/tensorio/safetensors.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

ModelConfig tiny_config() {
  ModelConfig c;
  c.hidden = 32;
  c.layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.intermediate = 48;
  c.vocab = 64;
  c.rms_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  c.qkv_bias = true;
  return c;
}

// Rows [begin, begin + count) of a matrix, or elements of a vector (slice_rows treats a vector
// as one row).
HostTensor rows_of(const HostTensor& t, int64_t begin, int64_t count) {
  if (t.rank() > 1) return t.slice_rows(begin, count);
  HostTensor out(t.dtype(), {count});
  const size_t size = dtype_size(t.dtype());
  std::memcpy(out.mutable_data(), t.data() + begin * size, count * size);
  return out;
}

std::string config_json(const ModelConfig& c, bool tied) {
  return "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": " +
         std::to_string(c.hidden) + ", \"num_hidden_layers\": " + std::to_string(c.layers) +
         ", \"num_attention_heads\": " + std::to_string(c.num_heads) +
         ", \"num_key_value_heads\": " + std::to_string(c.num_kv_heads) +
         ", \"intermediate_size\": " + std::to_string(c.intermediate) +
         ", \"vocab_size\": " + std::to_string(c.vocab) + ", \"rms_norm_eps\": 1e-06" +
         ", \"rope_theta\": 1000000.0, \"tie_word_embeddings\": " + (tied ? "true" : "false") + "}";
}

// The HF tensors of `w` (split back into q/k/v and gate/up), owned by the returned vector.
std::vector<std::pair<std::string, HostTensor>> hf_tensors(const ModelWeights& w, bool tied) {
  const ModelConfig& c = w.config;
  std::vector<std::pair<std::string, HostTensor>> t;
  t.emplace_back("model.embed_tokens.weight", w.embed);
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const LayerWeights& L = w.layers[l];
    t.emplace_back(p + "input_layernorm.weight", L.attn_norm);
    t.emplace_back(p + "self_attn.q_proj.weight", rows_of(L.qkv, 0, c.q_dim()));
    t.emplace_back(p + "self_attn.k_proj.weight", rows_of(L.qkv, c.q_dim(), c.kv_dim()));
    t.emplace_back(p + "self_attn.v_proj.weight",
                   rows_of(L.qkv, c.q_dim() + c.kv_dim(), c.kv_dim()));
    t.emplace_back(p + "self_attn.q_proj.bias", rows_of(L.qkv_bias, 0, c.q_dim()));
    t.emplace_back(p + "self_attn.k_proj.bias", rows_of(L.qkv_bias, c.q_dim(), c.kv_dim()));
    t.emplace_back(p + "self_attn.v_proj.bias",
                   rows_of(L.qkv_bias, c.q_dim() + c.kv_dim(), c.kv_dim()));
    t.emplace_back(p + "self_attn.o_proj.weight", L.o_proj);
    t.emplace_back(p + "post_attention_layernorm.weight", L.mlp_norm);
    t.emplace_back(p + "mlp.gate_proj.weight", rows_of(L.gate_up, 0, c.intermediate));
    t.emplace_back(p + "mlp.up_proj.weight", rows_of(L.gate_up, c.intermediate, c.intermediate));
    t.emplace_back(p + "mlp.down_proj.weight", L.down);
  }
  t.emplace_back("model.norm.weight", w.final_norm);
  if (!tied) t.emplace_back("lm_head.weight", w.lm_head);
  return t;
}

using Tensors = std::vector<std::pair<std::string, HostTensor>>;

void write_file(const fs::path& p, const Tensors& tensors) {
  std::vector<std::pair<std::string, const HostTensor*>> refs;
  for (const auto& [name, t] : tensors) refs.emplace_back(name, &t);
  write_safetensors(p, refs);
}

// Writes a checkpoint folder: two shards and an index when `sharded`, else one file.
fs::path write_checkpoint(const std::string& tag, const ModelWeights& w, bool sharded, bool tied,
                          const std::function<void(Tensors&)>& edit = {}) {
  const fs::path dir = nvdet::testing::make_temp_dir(tag);
  Tensors all = hf_tensors(w, tied);
  if (edit) edit(all);
  nvdet::testing::write_file(dir / "config.json", config_json(w.config, tied));
  if (!sharded) {
    write_file(dir / "model.safetensors", all);
    return dir;
  }
  Tensors a(all.begin(), all.begin() + all.size() / 2), b(all.begin() + all.size() / 2, all.end());
  write_file(dir / "model-00001-of-00002.safetensors", a);
  write_file(dir / "model-00002-of-00002.safetensors", b);
  std::string index = "{\"metadata\": {}, \"weight_map\": {";
  for (size_t i = 0; i < all.size(); ++i) {
    index += (i ? ", \"" : "\"") + all[i].first + "\": \"model-0000" + (i < a.size() ? "1" : "2") +
             "-of-00002.safetensors\"";
  }
  nvdet::testing::write_file(dir / "model.safetensors.index.json", index + "}}");
  return dir;
}

void expect_same(const HostTensor& a, const HostTensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(0, memcmp(a.data(), b.data(), a.nbytes())) << what;
}

HostTensor logits_of(const ModelWeights& w) {
  auto b = make_backend("cpu-invariant");
  DecodeOptions o;
  o.max_new_tokens = 4;
  o.prefill_chunk = 3;
  return greedy_decode(*b, w, {{1, 5, 9, 33, 60, 2, 7}, {4, 4}}, {0}, o, nullptr, nullptr)[0]
      .logits;
}

TEST(ModelCheckpoint, ShardedQwenStyleCheckpointLoadsBitForBit) {
  // Stored in fp32, read as bf16: the loader's rounding must equal building the bf16 weights from
  // the fp32 values directly (round to nearest even both ways).
  const ModelWeights f32 = make_synthetic_weights(tiny_config(), DType::kFP32, 21);
  const ModelWeights want = make_synthetic_weights(tiny_config(), DType::kBF16, 21);
  const fs::path dir = write_checkpoint("ckpt-sharded", f32, /*sharded=*/true, /*tied=*/false);
  const ModelWeights got = load_hf_checkpoint(dir.string(), DType::kBF16);
  EXPECT_TRUE(got.config.qkv_bias);
  EXPECT_EQ(got.config.head_dim, 8);
  EXPECT_FLOAT_EQ(got.config.rope_theta, 1000000.0f);
  expect_same(got.embed, want.embed, "embed");
  for (int32_t l = 0; l < 2; ++l) {
    expect_same(got.layers[l].qkv, want.layers[l].qkv, "qkv");
    expect_same(got.layers[l].qkv_bias, want.layers[l].qkv_bias, "qkv_bias");
    expect_same(got.layers[l].gate_up, want.layers[l].gate_up, "gate_up");
    expect_same(got.layers[l].down, want.layers[l].down, "down");
    expect_same(got.layers[l].o_proj, want.layers[l].o_proj, "o_proj");
    expect_same(got.layers[l].attn_norm, want.layers[l].attn_norm, "attn_norm");
    expect_same(got.layers[l].mlp_norm, want.layers[l].mlp_norm, "mlp_norm");
  }
  expect_same(got.final_norm, want.final_norm, "final_norm");
  expect_same(got.lm_head, want.lm_head, "lm_head");
  expect_same(logits_of(got), logits_of(want), "logits");
}

TEST(ModelCheckpoint, SingleFileWithTiedEmbeddings) {
  const ModelWeights w = make_synthetic_weights(tiny_config(), DType::kBF16, 22);
  const fs::path dir = write_checkpoint("ckpt-tied", w, /*sharded=*/false, /*tied=*/true);
  const ModelWeights got = load_hf_checkpoint(dir.string(), DType::kBF16);
  expect_same(got.lm_head, w.embed, "tied lm_head");
  expect_same(got.layers[1].qkv, w.layers[1].qkv, "qkv");
}

// Expects kBadInput whose message contains every one of `words`.
void expect_bad(const std::function<void()>& f, const std::vector<std::string>& words) {
  try {
    f();
    FAIL() << "expected kBadInput";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    for (const std::string& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(ModelCheckpoint, MalformedCheckpointsAreBadInput) {
  const ModelWeights w = make_synthetic_weights(tiny_config(), DType::kBF16, 23);
  const auto load = [](const fs::path& d) {
    return [d] { load_hf_checkpoint(d.string(), DType::kBF16); };
  };

  // A missing tensor.
  fs::path d = write_checkpoint("ckpt-missing", w, false, false, [](Tensors& t) {
    std::erase_if(t,
                  [](const auto& p) { return p.first == "model.layers.1.mlp.down_proj.weight"; });
  });
  expect_bad(load(d), {"model.layers.1.mlp.down_proj.weight", "missing"});

  // A wrong shape.
  d = write_checkpoint("ckpt-shape", w, false, false, [](Tensors& t) {
    for (auto& [name, x] : t)
      if (name == "model.layers.0.self_attn.k_proj.weight") x = x.slice_rows(0, 8);
  });
  expect_bad(load(d), {"model.safetensors", "model.layers.0.self_attn.k_proj.weight", "[8, 32]",
                       "[16, 32]"});

  // A truncated file.
  d = write_checkpoint("ckpt-truncated", w, false, false);
  fs::resize_file(d / "model.safetensors", fs::file_size(d / "model.safetensors") - 100);
  expect_bad(load(d), {"model.safetensors"});

  // A bad header (its length field points past the end of the file).
  d = write_checkpoint("ckpt-header", w, false, false);
  {
    std::fstream f(d / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    const char huge[8] = {'\xff', '\xff', '\xff', '\x7f', 0, 0, 0, 0};
    f.write(huge, 8);
  }
  expect_bad(load(d), {"model.safetensors"});

  // A sharded checkpoint whose index names a shard that is not there.
  d = write_checkpoint("ckpt-shard-gone", w, true, false);
  fs::remove(d / "model-00002-of-00002.safetensors");
  expect_bad(load(d), {"model-00002-of-00002.safetensors"});

  // config.json: not JSON, a missing field, a wrong type, heads that do not divide.
  d = write_checkpoint("ckpt-config", w, false, false);
  nvdet::testing::write_file(d / "config.json", "{\"hidden_size\": 32, ");
  expect_bad(load(d), {"config.json", "JSON"});
  nvdet::testing::write_file(d / "config.json", "{\"model_type\": \"qwen2\", \"hidden_size\": 32}");
  expect_bad(load(d), {"config.json", "num_hidden_layers"});
  std::string cfg = config_json(w.config, false);
  nvdet::testing::write_file(
      d / "config.json",
      std::string(cfg).replace(cfg.find("\"vocab_size\": 64"), 16, "\"vocab_size\": \"64\""));
  expect_bad(load(d), {"config.json", "vocab_size"});
  nvdet::testing::write_file(d / "config.json",
                             std::string(cfg).replace(cfg.find("\"num_key_value_heads\": 2"), 24,
                                                      "\"num_key_value_heads\": 3"));
  expect_bad(load(d), {"config.json", "multiple"});
  fs::remove(d / "config.json");
  expect_bad(load(d), {"config.json"});

  // Not a folder at all.
  expect_bad(load(d / "nope"), {"nope"});
}

// A checkpoint cannot make nvdet read outside its folder, nor keep one of two tensors of a name:
// shard paths that are absolute, go through "..", or are links leading out are refused with the
// shard's name; a tensor named twice in a header is refused with its name; a loop of links or a
// path longer than the system takes is bad input (exit 2), not an internal filesystem error.
TEST(ModelCheckpoint, ShardsOutsideTheFolderAndDuplicateNamesAreBadInput) {
  const ModelWeights w = make_synthetic_weights(tiny_config(), DType::kBF16, 29);
  const auto load = [](const fs::path& d) {
    return [d] { load_hf_checkpoint(d.string(), DType::kBF16); };
  };
  const fs::path d = write_checkpoint("ckpt-escape", w, true, false);
  const std::string index = nvdet::testing::read_file(d / "model.safetensors.index.json");
  const std::string shard = "model-00002-of-00002.safetensors";
  const fs::path outside = nvdet::testing::make_temp_dir("ckpt-outside");
  fs::copy_file(d / shard, outside / shard);
  fs::create_symlink(outside / shard, d / "link.safetensors");
  for (const std::string& bad :
       {std::string("/etc/passwd"), "../" + outside.filename().string() + "/" + shard, "./" + shard,
        std::string("link.safetensors")}) {
    std::string edited = index;
    for (size_t at = edited.find(shard); at != std::string::npos;
         at = edited.find(shard, at + bad.size())) {
      edited.replace(at, shard.size(), bad);
    }
    nvdet::testing::write_file(d / "model.safetensors.index.json", edited);
    expect_bad(load(d), {"model.safetensors.index.json", "the shard '" + bad + "'"});
  }
  nvdet::testing::write_file(d / "model.safetensors.index.json", index);
  load_hf_checkpoint(d.string(), DType::kBF16);  // restored: loads

  // The index as a link to itself: a loop of symbolic links.
  fs::remove(d / "model.safetensors.index.json");
  fs::create_symlink("model.safetensors.index.json", d / "model.safetensors.index.json");
  expect_bad(load(d), {"model.safetensors.index.json", "symbolic links"});
  // A folder name longer than the system takes.
  expect_bad(load(std::string(5000, 'x')), {"xxxx"});

  // The same tensor twice in one header: refused by name, never last-one-wins.
  const fs::path dup = nvdet::testing::make_temp_dir("ckpt-dup");
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  std::string file(8, '\0');
  const uint64_t len = header.size();
  std::memcpy(file.data(), &len, 8);
  file += header + std::string(8, '\x01');
  nvdet::testing::write_file(dup / "model.safetensors", file);
  expect_bad([&] { (void)SafetensorsFile::open(dup / "model.safetensors"); },
             {"model.safetensors", "'w' twice"});
}

}  // namespace
}  // namespace nvdet
