// The scenario keys of the scoring pass and of seeded sampling: what is read, and what is refused
// (exit 2, one sentence naming the key).
#include <gtest/gtest.h>

#include "lib/loader/scenario_loader.h"
#include "tests/scenario_snippets.h"

namespace nvdet {
namespace {

using testing::scenario_refusal;
using testing::tiny_model_scenario;

TEST(ScoringSamplingKeys, ReadsSamplingAndScoring) {
  const Scenario s = parse_scenario(
      tiny_model_scenario(
          ", score_batch: 3, score_chunk: 5, sampling: {temperature: 0.7, top_k: 20, "
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
  const Scenario greedy = parse_scenario(tiny_model_scenario(""), "m.yaml");
  EXPECT_FALSE(greedy.model.score);
  EXPECT_FALSE(greedy.model.sampling.enabled);
  const Scenario zero =
      parse_scenario(tiny_model_scenario(", sampling: {temperature: 0}"), "m.yaml");
  EXPECT_EQ(zero.model.sampling.temperature, 0.0);
  // A swept score axis turns the scoring pass on, and the samplers sweep by name.
  const Scenario swept = parse_scenario(
      tiny_model_scenario(
          ", sampling: {seed: 3}",
          "sweep: {score_chunk: [whole, 4, 1], sampler: [per_request, batch_stream]}\n"),
      "m.yaml");
  EXPECT_TRUE(swept.model.score);
}

TEST(ScoringSamplingKeys, RefusesWhatItCannotCompute) {
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {sampler: per_row}")),
                  "unknown sampler 'per_row'");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {top_p: 1.5}")),
                  "'top_p' must be in (0, 1]");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {temperature: -1}")),
                  "'temperature'");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {min_p: 0.1}")), "min_p");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", score_chunk: half")),
                  "'score_chunk' must be an integer or 'whole'");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario("", "sweep: {sampler: [per_request]}\n")),
                  "sweep axis 'sampler' chooses how 'model.sampling' draws tokens");
  EXPECT_CONTAINS(
      scenario_refusal(tiny_model_scenario(", sampling: {seed: 1}", "sweep: {sampler: [1]}\n")),
      "'sampler' values must be");
  EXPECT_CONTAINS(
      scenario_refusal("name: g\nop: gemm\ndtype: bf16\nshape: {n: 8, k: 8}\nseed: 1\n"
                       "backends: {cpu-invariant: {expect: invariant, parity: bitwise}}\n"),
      "'parity' (sampler against trainer) applies to op 'model' only");
  EXPECT_CONTAINS(
      scenario_refusal(
          tiny_model_scenario(", score_batch: 2")
              .replace(tiny_model_scenario(", score_batch: 2").find("cpu-invariant: invariant"), 24,
                       "cpu-invariant: {expect: invariant, parity: exact}")),
      "unknown parity expectation 'exact'");
}

}  // namespace
}  // namespace nvdet
