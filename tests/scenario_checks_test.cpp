// Everything a scenario says is checked, for every scenario named, before anything runs: a tp
// that does not divide the model's heads, a tp or channels value past its limit, tp > 1 on a
// mixture of experts, an MoE shape past its limits (a shape error before any budget's exit 3),
// an unknown or unrunnable trainer. A temperature is read as a number, whatever its spelling
// (0.00 and 0e0 are greedy; quoted numbers are strings), and what changes nothing at temperature 0
// is refused. Non-finite logits are never sampled from. A checkpoint rounded to the scenario's
// dtype says so.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lib/loader/scenario_loader.h"
#include "lib/model/sampler.h"
#include "tests/scenario_snippets.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

const auto scenario = shipped_scenario;

TEST(ScenarioChecks, TemperatureIsANumberWhateverItsSpelling) {
  for (const std::string zero : {"0", "0.0", "0.00", "0e0", "-0", "+0.0"}) {
    SCOPED_TRACE(zero);
    const Scenario s =
        parse_scenario(tiny_model_scenario(", sampling: {temperature: " + zero + "}"), "m");
    EXPECT_EQ(s.model.sampling.temperature, 0.0);
  }
  EXPECT_EQ(parse_scenario(tiny_model_scenario(", sampling: {temperature: 1e0}"), "m")
                .model.sampling.temperature,
            1.0);
  // Quoted numbers are strings, zero or not.
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {temperature: \"0\"}")),
                  "'temperature' must be a number");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {temperature: \"1.0\"}")),
                  "'temperature' must be a number");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {temperature: 0x1}")),
                  "'temperature' must be a number");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {temperature: 1001}")),
                  "from 0 (greedy)");
}

TEST(ScenarioChecks, WhatChangesNothingAtTemperatureZeroIsRefused) {
  EXPECT_CONTAINS(
      scenario_refusal(tiny_model_scenario(", sampling: {temperature: 0.00, seed: 1}",
                                           "sweep: {sampler: [per_request, batch_stream]}\n")),
      "'model.sampling.seed' changes nothing at temperature 0");
  EXPECT_CONTAINS(
      scenario_refusal(tiny_model_scenario(", sampling: {temperature: 0e0}",
                                           "sweep: {sampler: [per_request, batch_stream]}\n")),
      "sweep axis 'sampler' compares nothing at temperature 0");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario(", sampling: {temperature: 0, top_p: 0.9}")),
                  "'model.sampling.top_p' changes nothing at temperature 0");
}

TEST(ScenarioChecks, TpAndChannelsAreBoundedAtTheirPlaceInTheFile) {
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario("", "sweep: {tp: [1, 65]}\n")),
                  "m.yaml:6:17: 'tp' value 65 is more than the limit 64");
  EXPECT_CONTAINS(scenario_refusal(tiny_model_scenario("", "sweep: {channels: [0, 70]}\n")),
                  "m.yaml:6:23: 'channels' value 70 is more than the limit 64");
  EXPECT_CONTAINS(
      scenario_refusal(tiny_model_scenario("", "sweep: {channels: {from: 60, to: 80}}\n")),
      "'channels' value 80 is more than the limit 64");
}

// The second scenario's mistake is found before the first runs: no report of the first is
// written, the exit code is the mistake's, and --list-contexts refuses it too.
TEST(ScenarioChecks, EveryScenarioIsCheckedBeforeTheFirstRuns) {
  const fs::path dir = make_temp_dir("scenario-checks");
  struct Bad {
    std::string yaml, place, message;  // place: "bad.yaml:LINE:" where the file says it
  };
  const std::vector<Bad> bad = {
      // tp 3 does not divide the tiny model's 2 heads.
      {tiny_model_scenario("", "sweep: {tp: [1, 3]}\n"),
       "bad.yaml:6:", "tp 3 must divide the model's 2 heads"},
      // tp 2 on a mixture of experts (the fixture checkpoint's config).
      {"name: m\nop: model\ndtype: bf16\nmodel: {checkpoint: " +
           (source_dir() / "tests/fixtures/checkpoints/qwen3moe-t4").string() +
           ", max_new_tokens: 2}\nseed: 1\nsweep: {tp: [2]}\nbackends: {cpu-invariant: "
           "invariant}\n",
       "bad.yaml:6:", "tp 2 is not implemented for a mixture-of-experts model"},
      // A GEMM whose k the tp does not split.
      {"name: m\nop: gemm\ndtype: bf16\nshape: {n: 64, k: 100}\nseed: 1\nsweep: {tp: [1, 3]}\n"
       "backends: {cpu-invariant: invariant}\n",
       "bad.yaml:6:", "tp 3 does not divide k = 100"},
      // An MoE shape past its limits: exit 2 before the budget's exit 3 (--max-host-bytes 1K).
      {"name: m\nop: moe\ndtype: bf16\nshape: {hidden: 64, intermediate: 64, top_k: 2, experts: "
       "16777216}\nseed: 1\nbackends: {cpu-invariant: invariant}\n",
       "bad.yaml", "moe: shape experts (16777216) may be at most 4096"},
      // A trainer the registry does not have.
      {tiny_model_scenario(", score_batch: 2, trainer: {backend: cpu-invarient}"), "bad.yaml:4:",
       "'model.trainer' names an unknown backend 'cpu-invarient' (did you mean "
       "'cpu-invariant'?)"},
      // A trainer tp the model's heads do not take.
      {tiny_model_scenario(", score_batch: 2, trainer: {tp: 4}"),
       "bad.yaml:4:", "'model.trainer' tp 4 must divide the model's 2 heads"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.message);
    write_file(dir / "bad.yaml", b.yaml);
    fs::remove_all(dir / "r");
    const CommandResult r =
        run_nvdet("audit " + scenario("quickstart.yaml") + " " + (dir / "bad.yaml").string() +
                  " -q --max-host-bytes 1K --report-dir " + (dir / "r").string());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_CONTAINS(r.err, b.message);
    EXPECT_CONTAINS(r.err, b.place);
    EXPECT_EQ(r.out, "");  // the quickstart never ran
    EXPECT_FALSE(fs::exists(dir / "r" / "quickstart.json"));
    const CommandResult list =
        run_nvdet("audit " + (dir / "bad.yaml").string() + " --list-contexts");
    EXPECT_EQ(list.exit_code, 2) << list.out;
  }
  fs::remove_all(dir);
}

// A GPU trainer on a machine without a GPU cannot score anything: exit 3 before anything runs,
// even with --skip-unavailable (it is not a backend to skip).
TEST(ScenarioChecks, AnUnrunnableTrainerIsARuntimeFailure) {
  if (gpu_available()) GTEST_SKIP() << "this machine runs the GPU trainer";
  const fs::path dir = make_temp_dir("trainer-gpu");
  write_file(dir / "t.yaml",
             tiny_model_scenario(", score_batch: 2, trainer: {backend: cuda-invariant}"));
  const CommandResult r = run_nvdet("audit " + (dir / "t.yaml").string() + " --skip-unavailable");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "backend 'cuda-invariant'");
  EXPECT_CONTAINS(r.err, "model.trainer");
  fs::remove_all(dir);
}

// One NaN logit would make every probability NaN and the draw fall to the last kept token: it is
// refused (exit 3) with the step and the request, by both samplers.
TEST(ScenarioChecks, NonFiniteLogitsAreNeverSampledFrom) {
  SamplingSpec spec;
  spec.enabled = true;
  spec.temperature = 1.0;
  std::vector<float> good(16), bad(16);
  for (size_t i = 0; i < good.size(); ++i) good[i] = bad[i] = 0.25f * static_cast<float>(i % 7);
  for (const float poison :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    bad[5] = poison;
    for (const SamplerKind kind : {SamplerKind::kPerRequest, SamplerKind::kBatchStream}) {
      SCOPED_TRACE(std::string(sampler_name(kind)));
      const auto sampler = make_token_sampler(spec, kind);
      EXPECT_EQ(sampler->choose(3, {7, 11}, {good.data(), good.data()}, 16).size(), 2u);
      try {
        (void)sampler->choose(4, {7, 11}, {good.data(), bad.data()}, 16);
        ADD_FAILURE() << "sampled from a non-finite logit";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ExitCode::kRuntime);
        EXPECT_CONTAINS(std::string(e.what()), "the logit of token 5 is not finite");
        EXPECT_CONTAINS(std::string(e.what()), "at decode step 4 of request 11");
      }
    }
  }
}

TEST(ScenarioChecks, ACheckpointRoundedToTheScenariosDtypeSaysSo) {
  const fs::path dir = make_temp_dir("rounding-note");
  const std::string checkpoint = (source_dir() / "tests/fixtures/checkpoints/llama-t4").string();
  for (const std::string dtype : {"fp16", "bf16"}) {
    write_file(dir / "s.yaml", "name: s\nop: model\ndtype: " + dtype +
                                   "\nmodel: {checkpoint: " + checkpoint +
                                   ", max_new_tokens: 2}\nseed: 1\nbackends: {cpu-invariant: "
                                   "invariant}\n");
    const CommandResult r = run_nvdet("audit " + (dir / "s.yaml").string() + " --list-contexts");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The fixture's tensors are BF16: exact in bf16, rounded in fp16.
    if (dtype == "fp16") {
      EXPECT_CONTAINS(r.err, "scenario 's': the checkpoint's BF16 tensors are rounded to fp16");
    } else {
      EXPECT_EQ(r.err, "");
    }
  }
  fs::remove_all(dir);
}

TEST(ScenarioChecks, ABadTmpdirIsNamedWithWhatNeededIt) {
  const fs::path dir = make_temp_dir("tmpdir");
  const CommandResult r = run_nvdet_env(
      "TMPDIR=" + (dir / "missing").string(),
      "audit " + scenario("model-qwen3-moe-wide-cpu.yaml") + " -q --filter 'batch=2,'");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "TMPDIR '" + (dir / "missing").string() + "' cannot hold temporary files");
  EXPECT_CONTAINS(r.err, "the synthetic checkpoint of");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvdet::testing
