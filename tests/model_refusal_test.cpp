// Everything nvdet does not compute exactly is refused: each config.json key or checkpoint tensor
// that would change the math without being implemented is a kBadInput whose one sentence names
// it, and `nvdet audit` turns it into exit 2. The fixtures of tests/fixtures/checkpoints are
// copied and edited one change at a time, so each refusal is caused by that change alone (the
// unedited copies load: ModelOracle.*).
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/model/checkpoint.h"
#include "lib/tensorio/safetensors.h"
#include "tests/model_oracle.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A copy of fixture `name` whose config.json went through `edit`.
fs::path edited(const std::string& name, const std::string& tag,
                const std::function<void(json&)>& edit) {
  const fs::path dir = make_temp_dir("refuse-" + tag);
  fs::copy_file(fixture_dir(name) / "model.safetensors", dir / "model.safetensors");
  json j = json::parse(read_file(fixture_dir(name) / "config.json"));
  edit(j);
  write_file(dir / "config.json", j.dump(2));
  return dir;
}

// Expects loading `dir` to be kBadInput whose message holds every one of `words`, on one line.
void expect_refused(const fs::path& dir, const std::vector<std::string>& words) {
  try {
    load_hf_checkpoint(dir.string(), DType::kBF16);
    ADD_FAILURE() << dir << ": loaded, expected a refusal naming " << words.front();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << m;
    for (const std::string& w : words)
      EXPECT_NE(m.find(w), std::string::npos) << "'" << w << "' not in: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(ModelRefusal, UnsupportedArchitectures) {
  expect_refused(edited("llama-t5", "gemma2",
                        [](json& j) {
                          j["model_type"] = "gemma2";
                          j["architectures"] = {"Gemma2ForCausalLM"};
                        }),
                 {"model_type", "gemma2"});
  expect_refused(edited("qwen3-t5", "moe-class",
                        [](json& j) { j["architectures"] = {"Qwen3MoeForCausalLM"}; }),
                 {"architectures", "Qwen3MoeForCausalLM"});
  expect_refused(edited("qwen2-t5", "unnamed",
                        [](json& j) {
                          j.erase("model_type");
                          j.erase("architectures");
                        }),
                 {"model_type", "architectures"});
  // architectures alone is enough when it names a supported class, and must then be one.
  expect_refused(edited("qwen2-t5", "class-only",
                        [](json& j) {
                          j.erase("model_type");
                          j["architectures"] = {"Phi3ForCausalLM"};
                        }),
                 {"architectures", "Phi3ForCausalLM"});
}

TEST(ModelRefusal, ConfigValuesThatChangeTheMath) {
  expect_refused(edited("llama-t5", "act", [](json& j) { j["hidden_act"] = "gelu_pytorch_tanh"; }),
                 {"hidden_act", "gelu_pytorch_tanh"});
  for (const char* type : {"yarn", "longrope", "dynamic"}) {
    expect_refused(
        edited("llama31-t5", type, [&](json& j) { j["rope_parameters"]["rope_type"] = type; }),
        {"rope_type", type});
    expect_refused(edited("llama-t4", std::string(type) + "-t4",
                          [&](json& j) {
                            j["rope_scaling"] = {{"rope_type", type}, {"factor", 2.0}};
                          }),
                   {"rope_scaling.rope_type", type});
  }
  // Values that fp32, which the model computes in, cannot hold.
  expect_refused(edited("llama-t4", "theta-huge", [](json& j) { j["rope_theta"] = 1e39; }),
                 {"rope_theta", "32-bit float"});
  expect_refused(edited("llama-t5", "theta-huge-t5",
                        [](json& j) { j["rope_parameters"]["rope_theta"] = 1e300; }),
                 {"rope_theta", "32-bit float"});
  expect_refused(edited("llama-t5", "eps-tiny", [](json& j) { j["rms_norm_eps"] = 1e-50; }),
                 {"rms_norm_eps", "32-bit float"});
  expect_refused(edited("llama-t5", "partial", [](json& j) { j["partial_rotary_factor"] = 0.5; }),
                 {"partial_rotary_factor"});
  expect_refused(edited("llama-t5", "partial-in-rope",
                        [](json& j) { j["rope_parameters"]["partial_rotary_factor"] = 0.5; }),
                 {"partial_rotary_factor"});
  // A key of the rope dict that the rope type does not use (attention scaling of yarn, say).
  expect_refused(edited("llama31-t5", "attn-factor",
                        [](json& j) { j["rope_parameters"]["attention_factor"] = 0.9; }),
                 {"rope_parameters.attention_factor"});
  expect_refused(edited("llama31-t5", "llama3-incomplete",
                        [](json& j) { j["rope_parameters"].erase("low_freq_factor"); }),
                 {"low_freq_factor"});
  expect_refused(
      edited("llama-linear-t4", "both-formats",
             [](json& j) {
               j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
             }),
      {"rope_parameters", "rope_scaling"});
  expect_refused(edited("llama-t5", "theta-disagrees", [](json& j) { j["rope_theta"] = 10000.0; }),
                 {"rope_theta", "disagree"});
  expect_refused(edited("llama-t5", "tp", [](json& j) { j["pretraining_tp"] = 2; }),
                 {"pretraining_tp"});
  expect_refused(edited("qwen2-t5", "mrope", [](json& j) { j["use_mrope"] = true; }),
                 {"use_mrope"});
  // MoE and quantization keys: not implemented, so not ignored either.
  expect_refused(edited("qwen3-t5", "moe",
                        [](json& j) {
                          j["num_experts"] = 8;
                          j["num_experts_per_tok"] = 2;
                        }),
                 {"num_experts"});
  expect_refused(edited("llama-t4", "quant",
                        [](json& j) {
                          j["quantization_config"] = {{"quant_method", "fp8"}};
                        }),
                 {"quantization_config"});
  expect_refused(edited("mistral-t5", "layer-type",
                        [](json& j) {
                          j["layer_types"] = {"full_attention", "chunked_attention"};
                        }),
                 {"layer_types", "chunked_attention"});
}

TEST(ModelRefusal, MoeVariantsNotComputed) {
  // Each routing or expert variant that nvdet does not compute, added to a Qwen3-MoE or Mixtral
  // fixture that loads unedited, is refused naming its key.
  const std::vector<std::pair<std::string, json>> keys = {
      {"n_group", 4},
      {"topk_group", 2},
      {"routed_scaling_factor", 2.5},
      {"scoring_func", "sigmoid"},
      {"topk_method", "noaux_tc"},
      {"n_shared_experts", 1},
      {"shared_expert_intermediate_size", 64},
      {"first_k_dense_replace", 1},
      {"ep_size", 2},
      {"quantization_config", {{"quant_method", "fp8"}}}};
  for (const auto& [key, value] : keys) {
    for (const char* fixture : {"qwen3moe-t5", "mixtral-t4"}) {
      expect_refused(
          edited(fixture, "moe-" + key, [&key = key, &value = value](json& j) { j[key] = value; }),
          {"'" + key + "'", "not implemented"});
    }
  }
  // Qwen2-MoE without q/k/v biases in its config but with them in the checkpoint.
  expect_refused(edited("qwen2moe-t5", "no-qkv-bias", [](json& j) { j["qkv_bias"] = false; }),
                 {"q_proj.bias"});
  // Inconsistent or out-of-range MoE fields.
  expect_refused(
      edited("qwen3moe-t5", "topk-too-big", [](json& j) { j["num_experts_per_tok"] = 9; }),
      {"num_experts_per_tok"});
  expect_refused(
      edited("qwen3moe-t4", "experts-disagree", [](json& j) { j["num_local_experts"] = 4; }),
      {"num_experts", "num_local_experts", "disagree"});
  expect_refused(edited("qwen3moe-t5", "mlp-only-bad", [](json& j) { j["mlp_only_layers"] = {2}; }),
                 {"mlp_only_layers"});
  expect_refused(
      edited("qwen3moe-t5", "sparse-step-bad", [](json& j) { j["decoder_sparse_step"] = 0; }),
      {"decoder_sparse_step"});
  // A config that says 4 experts per layer of a checkpoint holding 8: the extra experts are
  // tensors the loader does not read.
  expect_refused(
      edited("qwen3moe-t5", "fewer-experts", [](json& j) { j["num_local_experts"] = 4; }),
      {"gate.weight", "shape"});
}

// A copy of fixture `name` with `extra` tensors added to its safetensors file (and, when
// `replace` is set, with that tensor's values replaced by `extra`'s same-named one).
fs::path with_tensors(const std::string& name, const std::string& tag,
                      const std::vector<std::pair<std::string, HostTensor>>& extra) {
  const fs::path dir = make_temp_dir("refuse-" + tag);
  fs::copy_file(fixture_dir(name) / "config.json", dir / "config.json");
  const SafetensorsFile st = SafetensorsFile::open(fixture_dir(name) / "model.safetensors");
  std::vector<std::pair<std::string, HostTensor>> all;
  for (const std::string& n : st.names()) all.emplace_back(n, st.read(n));
  for (const auto& e : extra) all.push_back(e);
  std::vector<std::pair<std::string, const HostTensor*>> refs;
  for (const auto& [n, t] : all) refs.emplace_back(n, &t);
  write_safetensors(dir / "model.safetensors", refs);
  return dir;
}

HostTensor seeded(std::vector<int64_t> shape, uint64_t seed) {
  HostTensor t(DType::kBF16, std::move(shape));
  fill_normal(t, seed, 0);
  return t;
}

TEST(ModelRefusal, TensorsTheLoaderDoesNotRead) {
  // An MoE expert beside the dense MLP.
  expect_refused(
      with_tensors("qwen3-t5", "expert",
                   {{"model.layers.0.mlp.experts.0.gate_proj.weight", seeded({96, 64}, 1)},
                    {"model.layers.0.mlp.experts.0.up_proj.weight", seeded({96, 64}, 2)}}),
      {"2 tensor(s)", "model.layers.0.mlp.experts.0.gate_proj.weight"});
  // A bias the config does not announce (attention_bias is false in llama-t4).
  expect_refused(
      with_tensors("llama-t4", "bias", {{"model.layers.1.self_attn.o_proj.bias", seeded({64}, 3)}}),
      {"model.layers.1.self_attn.o_proj.bias"});
  // Qwen3's norms in a Llama checkpoint.
  expect_refused(with_tensors("llama-t4", "qnorm",
                              {{"model.layers.0.self_attn.q_norm.weight", seeded({16}, 4)}}),
                 {"q_norm"});
  // A tied checkpoint that also stores a different LM head.
  expect_refused(with_tensors("qwen3-t4", "tied-head", {{"lm_head.weight", seeded({256, 64}, 5)}}),
                 {"tie_word_embeddings", "lm_head.weight"});
  // A stacked expert tensor beside the per-expert ones: both layouts at once are refused.
  expect_refused(with_tensors("qwen3moe-t5", "both-layouts",
                              {{"model.layers.1.mlp.experts.down_proj", seeded({8, 64, 32}, 7)}}),
                 {"model.layers.1.mlp.experts"});
  // A router's score-correction bias (DeepSeek-V3 style) or a shared expert with its gate
  // (Qwen2-MoE style) beside a Qwen3-MoE layer: tensors that change the routing or the output.
  expect_refused(
      with_tensors("qwen3moe-t5", "score-bias",
                   {{"model.layers.0.mlp.gate.e_score_correction_bias", seeded({8}, 9)}}),
      {"e_score_correction_bias"});
  expect_refused(
      with_tensors("qwen3moe-t5", "shared-gate",
                   {{"model.layers.1.mlp.shared_expert_gate.weight", seeded({1, 64}, 10)}}),
      {"shared_expert_gate"});
  // The dense MLP of a sparse-step fixture's dense layer, given to its MoE layer too.
  expect_refused(with_tensors("qwen3moe-sparse-t5", "dense-in-moe",
                              {{"model.layers.1.mlp.down_proj.weight", seeded({64, 96}, 8)}}),
                 {"model.layers.1.mlp.down_proj.weight"});
  // Many extras: the first three are named, then an ellipsis.
  std::vector<std::pair<std::string, HostTensor>> many;
  for (int e = 0; e < 5; ++e)
    many.emplace_back("model.layers.0.mlp.experts." + std::to_string(e) + ".w1",
                      seeded({4}, 6 + e));
  expect_refused(with_tensors("mistral-t4", "many", many),
                 {"5 tensor(s)", "experts.0.w1", "experts.2.w1", "..."});
}

TEST(ModelRefusal, SlidingWindowShorterThanTheRun) {
  // Qwen2 with use_sliding_window: loads (the window is a property of the run's length), runs
  // while the sequences fit the window, and is refused once they outgrow it.
  const fs::path dir = edited("qwen2-t5", "window", [](json& j) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = 16;
    j["max_window_layers"] = 0;
    j["layer_types"] = {"sliding_attention", "sliding_attention"};
  });
  const ModelWeights w = load_hf_checkpoint(dir.string(), DType::kFP32);
  EXPECT_EQ(w.config.sliding_window, 16);
  auto backend = make_backend("cpu-reference");
  const Oracle o = load_oracle("qwen2-t5");  // prompt of 11 tokens
  DecodeOptions opt;
  opt.max_new_tokens = 6;  // 11 + 5 = 16 tokens: fits, and equals full attention
  const SequenceResult r = greedy_decode(*backend, w, {o.prompt}, {0}, opt, nullptr, nullptr).at(0);
  EXPECT_EQ(r.completion, o.tokens);
  opt.max_new_tokens = 7;  // 17 tokens: would need the window
  try {
    greedy_decode(*backend, w, {o.prompt}, {0}, opt, nullptr, nullptr);
    ADD_FAILURE() << "a run longer than the sliding window was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'sliding_window' is 16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("17"), std::string::npos) << e.what();
  }
  // Mistral: a sliding_window key alone means every layer slides.
  const fs::path m =
      edited("mistral-t5", "mistral-window", [](json& j) { j["sliding_window"] = 8; });
  EXPECT_EQ(load_hf_checkpoint(m.string(), DType::kFP32).config.sliding_window, 8);
}

// `nvdet audit` of a one-prompt scenario on `ckpt`: its exit code and stderr.
CommandResult audit_checkpoint(const fs::path& ckpt, int max_new_tokens) {
  const fs::path dir = make_temp_dir("refuse-cli-scenario");
  write_file(dir / "s.yaml", "name: refused\nop: model\ndtype: bf16\nmodel:\n  checkpoint: " +
                                 ckpt.string() + "\n  prompt_len: 6\n  num_prompts: 1\n" +
                                 "  max_new_tokens: " + std::to_string(max_new_tokens) +
                                 "\nseed: 1\nrequests: [0]\nsweep:\n  batch: [1, 2]\n"
                                 "backends:\n  cpu-invariant: invariant\n");
  return run_nvdet("audit " + (dir / "s.yaml").string() + " --report-dir " + (dir / "r").string());
}

TEST(ModelRefusal, AuditExitsTwoNamingTheKey) {
  CommandResult r = audit_checkpoint(
      edited("llama-t5", "cli", [](json& j) { j["hidden_act"] = "gelu_pytorch_tanh"; }), 2);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("hidden_act"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gelu_pytorch_tanh"), std::string::npos) << r.err;
  // A sliding window of 8: 6 prompt tokens + 3 generated fit (exit 0), + 4 do not (exit 2).
  const fs::path window =
      edited("mistral-t5", "cli-window", [](json& j) { j["sliding_window"] = 8; });
  r = audit_checkpoint(window, 3);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = audit_checkpoint(window, 4);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("'sliding_window' is 8"), std::string::npos) << r.err;
  // An MoE variant not computed: exit 2 naming the key; the unedited MoE fixture audits (exit 0).
  r = audit_checkpoint(
      edited("qwen3moe-t5", "cli-scaling", [](json& j) { j["routed_scaling_factor"] = 2.5; }), 2);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("routed_scaling_factor"), std::string::npos) << r.err;
  r = audit_checkpoint(fixture_dir("qwen3moe-t5"), 2);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace nvdet::testing
