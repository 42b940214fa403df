// The scenario keys of the scoring pass and of seeded sampling: what is read, and what is refused
// (exit 2, one sentence naming the key).
#include <gtest/gtest.h>

#include "lib/loader/scenario_loader.h"

namespace nvdet {
namespace {

std::string with_model(const std::string& model_extra, const std::string& rest = "") {
  return "name: m\nop: model\ndtype: bf16\nmodel: {hidden: 64, layers: 1, heads: 2, kv_heads: 1, "
         "intermediate: 128, vocab: 256, prompt_len: 8, num_prompts: 2, max_new_tokens: 4" +
         model_extra + "}\nseed: 1\n" + rest + "backends: {cpu-invariant: invariant}\n";
}

std::string refusal(const std::string& text) {
  try {
    (void)parse_scenario(text, "m.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return "";
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << (text) << "\nlacks: " << (part)

TEST(ScoringSamplingKeys, ReadsSamplingAndScoring) {
  const Scenario s = parse_scenario(
      with_model(", score_batch: 3, score_chunk: 5, sampling: {temperature: 0.7, top_k: 20, "
                 "top_p: 0.9, seed: 42, sampler: batch_stream}"),
      "m.yaml");
  EXPECT_TRUE(s.model.score);
  EXPECT_EQ(s.model.score_batch, 3);
  EXPECT_EQ(s.model.score_chunk, 5);
  EXPECT_TRUE(s.model.sampling.enabled);
  EXPECT_DOUBLE_EQ(s.model.sampling.temperature, 0.7);
  EXPECT_EQ(s.model.sampling.top_k, 20);
  EXPECT_DOUBLE_EQ(s.model.sampling.top_p, 0.9);
  EXPECT_EQ(s.model.sampling.seed, 42u);
  EXPECT_EQ(s.model.sampling.sampler, SamplerKind::kBatchStream);
  const Scenario greedy = parse_scenario(with_model(""), "m.yaml");
  EXPECT_FALSE(greedy.model.score);
  EXPECT_FALSE(greedy.model.sampling.enabled);
  const Scenario zero = parse_scenario(with_model(", sampling: {temperature: 0}"), "m.yaml");
  EXPECT_EQ(zero.model.sampling.temperature, 0.0);
  // A swept score axis turns the scoring pass on, and the samplers sweep by name.
  const Scenario swept = parse_scenario(
      with_model(", sampling: {seed: 3}",
                 "sweep: {score_chunk: [whole, 4, 1], sampler: [per_request, batch_stream]}\n"),
      "m.yaml");
  EXPECT_TRUE(swept.model.score);
}

TEST(ScoringSamplingKeys, RefusesWhatItCannotCompute) {
  EXPECT_CONTAINS(refusal(with_model(", sampling: {sampler: per_row}")),
                  "unknown sampler 'per_row'");
  EXPECT_CONTAINS(refusal(with_model(", sampling: {top_p: 1.5}")), "'top_p' must be in (0, 1]");
  EXPECT_CONTAINS(refusal(with_model(", sampling: {temperature: -1}")), "'temperature'");
  EXPECT_CONTAINS(refusal(with_model(", sampling: {min_p: 0.1}")), "min_p");
  EXPECT_CONTAINS(refusal(with_model(", score_chunk: half")),
                  "'score_chunk' must be an integer or 'whole'");
  EXPECT_CONTAINS(refusal(with_model("", "sweep: {sampler: [per_request]}\n")),
                  "sweep axis 'sampler' chooses how 'model.sampling' draws tokens");
  EXPECT_CONTAINS(refusal(with_model(", sampling: {seed: 1}", "sweep: {sampler: [1]}\n")),
                  "'sampler' values must be");
  EXPECT_CONTAINS(refusal("name: g\nop: gemm\ndtype: bf16\nshape: {n: 8, k: 8}\nseed: 1\n"
                          "backends: {cpu-invariant: {expect: invariant, parity: bitwise}}\n"),
                  "'parity' (sampler against trainer) applies to op 'model' only");
  EXPECT_CONTAINS(
      refusal(with_model(", score_batch: 2")
                  .replace(with_model(", score_batch: 2").find("cpu-invariant: invariant"), 24,
                           "cpu-invariant: {expect: invariant, parity: exact}")),
      "unknown parity expectation 'exact'");
}

}  // namespace
}  // namespace nvdet
