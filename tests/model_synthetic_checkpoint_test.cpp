// synthetic_weights: seeded weights written as a checkpoint for a config.json and read back
// through the loader must be exactly make_synthetic_weights' for that config, for every
// architecture feature the loader reads (biases, q/k norms, tied heads: the oracle fixtures'
// configs cover them all); and the scenarios that use it name config folders the loader accepts.
#include <gtest/gtest.h>

#include <cstring>

#include "lib/loader/scenario_loader.h"
#include "lib/model/checkpoint.h"
#include "lib/model/synthetic_checkpoint.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"
#include "lib/workloads/footprint.h"
#include "tests/model_oracle.h"

namespace nvdet::testing {
namespace {

void expect_same(const HostTensor& a, const HostTensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  // Absent tensors (no bias) are empty and may have no storage: memcmp must not see null.
  if (a.nbytes() > 0) EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.nbytes())) << what;
}

TEST(ModelSyntheticCheckpoint, RoundTripsEveryArchitecture) {
  for (const std::string& name : all_oracle_fixtures()) {
    const HfConfig hf = read_hf_config_json(fixture_dir(name).string());
    const ModelWeights want = make_synthetic_weights(hf.model, DType::kBF16, 77);
    const ModelWeights got =
        load_synthetic_checkpoint(fixture_dir(name).string(), 77, DType::kBF16);
    expect_same(got.embed, want.embed, name + " embed");
    for (int32_t l = 0; l < hf.model.layers; ++l) {
      const LayerWeights &g = got.layers[l], &w = want.layers[l];
      for (const auto& [what, a, b] :
           std::vector<std::tuple<std::string, const HostTensor*, const HostTensor*>>{
               {"attn_norm", &g.attn_norm, &w.attn_norm},
               {"qkv", &g.qkv, &w.qkv},
               {"qkv_bias", &g.qkv_bias, &w.qkv_bias},
               {"q_norm", &g.q_norm, &w.q_norm},
               {"k_norm", &g.k_norm, &w.k_norm},
               {"o_proj", &g.o_proj, &w.o_proj},
               {"o_bias", &g.o_bias, &w.o_bias},
               {"mlp_norm", &g.mlp_norm, &w.mlp_norm},
               {"gate_up", &g.gate_up, &w.gate_up},
               {"gate_up_bias", &g.gate_up_bias, &w.gate_up_bias},
               {"down", &g.down, &w.down},
               {"down_bias", &g.down_bias, &w.down_bias}}) {
        expect_same(*a, *b, name + " layer " + std::to_string(l) + " " + what);
      }
      // MoE layers: the router and every expert (the dense tensors above are empty there).
      EXPECT_EQ(g.router.empty(), !hf.model.is_moe_layer(l)) << name << " layer " << l;
      expect_same(g.router, w.router, name + " layer " + std::to_string(l) + " router");
      expect_same(g.shared_gate_up, w.shared_gate_up, name + " shared_expert gate_up");
      expect_same(g.shared_down, w.shared_down, name + " shared_expert down");
      expect_same(g.shared_gate, w.shared_gate, name + " shared_expert_gate");
      EXPECT_EQ(g.shared_gate.empty(),
                !(hf.model.is_moe_layer(l) && hf.model.shared_expert_intermediate > 0));
      ASSERT_EQ(g.expert_gate_up.size(), w.expert_gate_up.size()) << name;
      ASSERT_EQ(g.expert_down.size(), w.expert_down.size()) << name;
      for (size_t e = 0; e < w.expert_gate_up.size(); ++e) {
        const std::string x = name + " layer " + std::to_string(l) + " expert " + std::to_string(e);
        expect_same(g.expert_gate_up[e], w.expert_gate_up[e], x + " gate_up");
        expect_same(g.expert_down[e], w.expert_down[e], x + " down");
      }
    }
    expect_same(got.final_norm, want.final_norm, name + " final_norm");
    expect_same(got.lm_head, hf.tie_word_embeddings ? want.embed : want.lm_head, name + " lm_head");
    EXPECT_EQ(got.layers[0].q_norm.empty(), !hf.model.qk_norm) << name;
    EXPECT_EQ(got.layers[0].o_bias.empty(), !hf.model.o_bias) << name;
  }
}

TEST(ModelSyntheticCheckpoint, GpuArchitectureScenariosNameValidConfigs) {
  struct Want {
    const char* scenario;
    const char* type;
    int32_t vocab, intermediate;
    bool qk_norm;
    RopeType rope;
  };
  for (const Want& w :
       {Want{"model-llama3-8b-gpu.yaml", "llama", 128256, 14336, false, RopeType::kLlama3},
        Want{"model-qwen3-8b-gpu.yaml", "qwen3", 151936, 12288, true, RopeType::kDefault}}) {
    const Scenario s = load_scenario((source_dir() / "scenarios" / w.scenario).string());
    EXPECT_TRUE(s.model.synthetic_weights) << w.scenario;
    EXPECT_GE(expand_contexts(s).size(), 2u) << w.scenario;
    const ModelConfig c = read_hf_config(s.model.checkpoint);
    EXPECT_EQ(c.architecture, w.type);
    EXPECT_EQ(c.hidden, 4096);
    EXPECT_EQ(c.num_heads, 32);
    EXPECT_EQ(c.num_kv_heads, 8);
    EXPECT_EQ(c.head_dim, 128);
    EXPECT_EQ(c.vocab, w.vocab);
    EXPECT_EQ(c.intermediate, w.intermediate);
    EXPECT_EQ(c.qk_norm, w.qk_norm);
    EXPECT_EQ(c.rope_scaling.type, w.rope);
  }
}

TEST(ModelSyntheticCheckpoint, MoeGpuScenarioNamesAQwen3MoeConfig) {
  const Scenario s =
      load_scenario((source_dir() / "scenarios" / "model-qwen3-30b-a3b-gpu.yaml").string());
  EXPECT_TRUE(s.model.synthetic_weights);
  const ModelConfig c = read_hf_config(s.model.checkpoint);
  EXPECT_EQ(c.architecture, "qwen3_moe");
  EXPECT_EQ(c.hidden, 2048);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.experts_per_token, 8);
  EXPECT_EQ(c.expert_intermediate, 768);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);
  for (int32_t l = 0; l < c.layers; ++l) EXPECT_TRUE(c.is_moe_layer(l)) << l;
  // Every expert counts in the estimate: the MLP weights of a layer are the router and 128
  // experts' gate, up and down.
  EXPECT_DOUBLE_EQ(c.mlp_weight_elems(0), 128.0 * 2048 + 128.0 * 3 * 768 * 2048);
  // The scenario's estimate (what --max-host-bytes is checked against) holds them all: bf16
  // experts of both layers, plus attention, embedding and LM head, within the 4 GB it makes.
  const double experts = 2 * 128.0 * 3 * 768 * 2048 * 2;
  const double embed_and_head = 2 * 151936.0 * 2048 * 2;
  const Footprint f = model_footprint(s);
  EXPECT_GT(f.weights, experts + embed_and_head);
  EXPECT_LT(f.weights, experts + embed_and_head + 0.2e9);
}

TEST(ModelSyntheticCheckpoint, NeedsACheckpointFolder) {
  try {
    parse_scenario(
        "name: x\nop: model\ndtype: bf16\nmodel: {synthetic_weights: true}\nseed: 1\n"
        "backends: {cpu-invariant: invariant}\n",
        "s.yaml");
    FAIL() << "expected kBadInput";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("synthetic_weights"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s.yaml:4:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdet::testing
