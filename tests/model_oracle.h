#pragma once
// The transformers oracle of tests/fixtures/checkpoints (made by make_fixtures.py there): for
// each tiny checkpoint, the prompt, transformers' greedy tokens and its fp32 logits
// ([steps, vocab]: row 0 after the prompt, row t after t greedy tokens). Shared by the CPU
// oracle test and the GPU one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/model/decoder.h"
#include "lib/model/synthetic_checkpoint.h"
#include "lib/tensorio/npy.h"
#include "tests/test_support.h"

namespace nvdet::testing {

// Every fixture: each architecture in both config formats (t4: top-level rope_theta and
// rope_scaling; t5: rope_parameters), RoPE default / llama3 / linear, tied and untied heads.
inline const std::vector<std::string> kOracleFixtures = {
    "llama-t4",   "llama-t5", "llama31-t4", "llama31-t5", "llama-linear-t4", "mistral-t4",
    "mistral-t5", "qwen2-t4", "qwen2-t5",   "qwen3-t4",   "qwen3-t5"};

// The mixture-of-experts fixtures (decoded on the host path by every backend): Qwen3-MoE,
// Qwen2-MoE (shared expert with its sigmoid gate, q/k/v biases) and Mixtral in both config
// formats, experts saved one by one or stacked, norm_topk_prob on and off, top-2 and top-3,
// decoder_sparse_step 2 and mlp_only_layers [0].
inline const std::vector<std::string> kMoeOracleFixtures = {
    "qwen3moe-t4",         "qwen3moe-t5",       "qwen3moe-sparse-t5", "qwen3moe-mlponly-t4",
    "qwen3moe-stacked-t5", "qwen2moe-t4",       "qwen2moe-t5",        "mixtral-t4",
    "mixtral-t5",          "mixtral-stacked-t5"};

// Every fixture the CPU tests check: the dense ones, then the MoE ones.
inline std::vector<std::string> all_oracle_fixtures() {
  std::vector<std::string> all = kOracleFixtures;
  all.insert(all.end(), kMoeOracleFixtures.begin(), kMoeOracleFixtures.end());
  return all;
}

inline std::filesystem::path fixture_dir(const std::string& name) {
  return source_dir() / "tests/fixtures/checkpoints" / name;
}

struct Oracle {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;  // transformers' greedy choice at each step
  int64_t steps = 0, vocab = 0;
  std::vector<float> logits;  // [steps, vocab]

  const float* row(int64_t t) const { return logits.data() + t * vocab; }
};

inline Oracle load_oracle(const std::string& name) {
  const nlohmann::json j = nlohmann::json::parse(read_file(fixture_dir(name) / "oracle.json"));
  Oracle o;
  o.prompt = j.at("prompt").get<std::vector<int32_t>>();
  o.tokens = j.at("tokens").get<std::vector<int32_t>>();
  const AnyTensor t = read_npy(fixture_dir(name) / "logits.npy");
  o.steps = t.shape.at(0);
  o.vocab = t.shape.at(1);
  for (int64_t i = 0; i < t.numel(); ++i) o.logits.push_back(static_cast<float>(t.value(i)));
  return o;
}

// What one decode gave against the oracle.
struct OracleMatch {
  double max_error = 0;  // largest |logit - oracle| over the compared steps, in units of scale
  int32_t compared_steps = 0;
  bool ended_at_near_tie = false;  // the tokens parted where the oracle's margin was within 2 tol
};

// The scale of step t's logits: errors of fp32 arithmetic grow with the logits' size, so the
// tolerance is relative to the step's largest |logit| (at least 1).
inline double logit_scale(const Oracle& o, int64_t t) {
  double m = 1.0;
  for (int64_t v = 0; v < o.vocab; ++v) m = std::max(m, std::abs(static_cast<double>(o.row(t)[v])));
  return m;
}

// Compares nvdet's logits and tokens with the oracle step by step: every logit within
// tol * scale; the tokens equal wherever the oracle's top-1/top-2 margin exceeds 2 tol * scale
// (logits off by at most tol each cannot swap two values further apart). Where the tokens part
// at a near tie, the sequences differ from there on and the comparison stops.
inline OracleMatch compare_with_oracle(const SequenceResult& r, const Oracle& o, double tol,
                                       const std::string& what) {
  OracleMatch m;
  EXPECT_EQ(r.logits.dim(1), o.vocab) << what;
  EXPECT_GE(r.logits.dim(0), o.steps) << what;
  if (r.logits.dim(1) != o.vocab || r.logits.dim(0) < o.steps) return m;
  for (int64_t t = 0; t < o.steps; ++t) {
    const float* got = r.logits.data_as<float>() + t * o.vocab;
    const double scale = logit_scale(o, t);
    double err = 0;
    for (int64_t v = 0; v < o.vocab; ++v)
      err = std::max(err, std::abs(double{got[v]} - o.row(t)[v]));
    m.max_error = std::max(m.max_error, err / scale);
    m.compared_steps = static_cast<int32_t>(t + 1);
    EXPECT_LE(err, tol * scale) << what << ": step " << t << " logits differ from transformers' by "
                                << err << " (scale " << scale << ")";
    std::vector<float> sorted(o.row(t), o.row(t) + o.vocab);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    const double margin = double{sorted[0]} - sorted[1];
    if (r.completion[t] != o.tokens[t]) {
      EXPECT_LE(margin, 2 * tol * scale)
          << what << ": step " << t << " chose token " << r.completion[t] << ", transformers "
          << o.tokens[t] << " with a margin of " << margin;
      m.ended_at_near_tie = true;
      break;
    }
  }
  return m;
}

}  // namespace nvdet::testing

namespace nvdet::testing {

// Small models with 128-wide heads, the width the GPU attention kernels take, for the features
// the transformers fixtures cannot bring to the GPU (their heads are 16 and 32 wide): Qwen3's
// q/k norms, Llama 3.1's RoPE scaling with attention and MLP biases and a tied head. Their
// weights are seeded (synthetic_checkpoint.h), so their reference is nvdet's cpu-reference in
// fp32, which the fixtures tie to transformers.
inline const std::vector<std::pair<std::string, std::string>> kWideHeadConfigs = {
    {"qwen3-wide",
     R"({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": 256,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 128, "intermediate_size": 512, "vocab_size": 1024, "rms_norm_eps": 1e-06,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
         "tie_word_embeddings": false, "attention_bias": false, "use_sliding_window": false,
         "hidden_act": "silu"})"},
    {"llama31-wide",
     R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
         "head_dim": 128, "intermediate_size": 768, "vocab_size": 1024, "rms_norm_eps": 1e-05,
         "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
         "rope_theta": 500000.0, "tie_word_embeddings": true, "attention_bias": true,
         "mlp_bias": true, "hidden_act": "silu"})"},
};

// A folder holding only config.json `text`.
inline std::filesystem::path wide_head_config_dir(const std::string& name,
                                                  const std::string& text) {
  const std::filesystem::path dir = make_temp_dir("wide-" + name);
  write_file(dir / "config.json", text);
  return dir;
}

// The prompts of the wide-head checks (the first is compared) and their decode length.
inline const std::vector<std::vector<int32_t>> kWidePrompts = {
    {5, 901, 17, 333, 42, 7, 650, 128, 1000, 64, 3, 77, 512, 9, 260, 31, 88, 400, 2, 19},
    {12, 13, 14},
    {700, 701},
    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}};
inline constexpr int32_t kWideSteps = 8;

// `r` (the first sequence of a decode) taken as an oracle for another decode of the same prompt.
inline Oracle oracle_from(const SequenceResult& r, const std::vector<int32_t>& prompt) {
  Oracle o;
  o.prompt = prompt;
  o.tokens = r.completion;
  o.steps = r.logits.dim(0);
  o.vocab = r.logits.dim(1);
  o.logits.assign(r.logits.data_as<float>(), r.logits.data_as<float>() + r.logits.numel());
  return o;
}

// One model of kWideHeadConfigs, ready to check: its seeded weights in bf16, and the oracle that
// cpu-reference computes from the same weights in fp32 for the first of kWidePrompts.
struct WideHeadCase {
  ModelWeights bf16_weights;
  DecodeOptions options;
  Oracle oracle;
};
inline WideHeadCase wide_head_case(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = wide_head_config_dir(name, text);
  WideHeadCase c;
  c.bf16_weights = load_synthetic_checkpoint(dir.string(), 5, DType::kBF16);
  c.options.max_new_tokens = kWideSteps;
  const ModelWeights fp32_weights = load_synthetic_checkpoint(dir.string(), 5, DType::kFP32);
  auto ref = make_backend("cpu-reference");
  c.oracle = oracle_from(
      greedy_decode(*ref, fp32_weights, kWidePrompts, {0}, c.options, nullptr, nullptr).at(0),
      kWidePrompts[0]);
  return c;
}
// `backend`'s bf16 decode of the case's prompt against its oracle.
inline OracleMatch check_wide_head(Backend& backend, const WideHeadCase& c, double bound,
                                   const std::string& what) {
  return compare_with_oracle(
      greedy_decode(backend, c.bf16_weights, kWidePrompts, {0}, c.options, nullptr, nullptr).at(0),
      c.oracle, bound, what);
}

}  // namespace nvdet::testing
