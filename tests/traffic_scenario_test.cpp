// Serving traffic as scenarios (README "Serving traffic"): the shipped CPU scenario gives
// cpu-variant several distinct completions over its 50 replays and cpu-invariant one; the
// checkpoint scenario ends requests at the checkpoint's EOS and holds the invariant backends to one
// result; nvdet bisect names the first (step, layer, op) apart between two traffic seeds and what
// shared that step; every report format carries the traffic results; and the traffic block is
// refused with one sentence (exit 2, naming the key) wherever it cannot be computed as written.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/runner/audit.h"
#include "lib/runner/bisect.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

std::string scenario_path(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

const BackendOutcome& outcome(const AuditResult& r, const std::string& name) {
  for (const BackendOutcome& o : r.backends)
    if (o.name == name) return o;
  throw std::runtime_error("no backend " + name);
}

TEST(TrafficScenario, CpuVariantGivesSeveralCompletionsAndCpuInvariantOne) {
#ifdef NVDET_ASAN
  // 100 replays: 17 s in the release build, past ten minutes under the sanitizers. The traffic
  // code's memory is checked there by the other traffic tests (the checkpoint scenario, bisect,
  // tests/traffic_replay_test.cpp), which run the same scheduler and engine.
  GTEST_SKIP() << "the release build runs the 100 replays; the sanitizer build runs the shorter "
                  "traffic tests";
#endif
  const auto t0 = std::chrono::steady_clock::now();
  const AuditResult r = run_audit(load_scenario(scenario_path("traffic-cpu.yaml")), AuditOptions{});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const BackendOutcome& var = outcome(r, "cpu-variant");
  const BackendOutcome& inv = outcome(r, "cpu-invariant");
  EXPECT_EQ(var.contexts_run, 50);
  EXPECT_GT(var.max_distinct_completions, 1);
  EXPECT_TRUE(var.passed) << var.verdict;
  EXPECT_EQ(inv.max_distinct_completions, 1);
  EXPECT_EQ(inv.max_distinct_results, 1);
  EXPECT_EQ(inv.divergent_contexts, 0);
  EXPECT_TRUE(inv.passed) << inv.verdict;
  EXPECT_TRUE(r.summary.passed);
  EXPECT_FALSE(r.scenario.traffic.empty());
  // Every divergence says what shared the probe's step on both sides, and the step is the one
  // whose bits parted first.
  int with_flip = 0;
  for (const Divergence& d : r.divergences) {
    ASSERT_TRUE(d.traffic.has_value()) << d.context;
    ASSERT_TRUE(d.first_op.has_value()) << d.context;
    EXPECT_EQ(d.traffic->step, d.first_op->step);
    EXPECT_EQ(d.traffic->baseline.step, d.first_op->step);
    EXPECT_FALSE(d.traffic->here.engine_steps.empty());
    with_flip += d.completion.has_value();
  }
  EXPECT_GT(with_flip, 0);
  for (const CaseRecord& c : r.cases) {
    EXPECT_GT(c.generated_tokens, 3 * 40) << c.context_index;  // the probes' and the traffic's
    EXPECT_EQ(c.notes.at("decoder").rfind("host", 0), 0u);
    for (const RequestRecord& q : c.requests) EXPECT_EQ(q.completion.size(), 40u);
  }
  std::printf("traffic-cpu audit: %.2f s, cpu-variant %d distinct completions, cpu-invariant %d\n",
              seconds, var.max_distinct_completions, inv.max_distinct_completions);
}

TEST(TrafficScenario, CheckpointScenarioEndsRequestsAtEosAndHoldsInvariance) {
  const AuditResult r =
      run_audit(load_scenario(scenario_path("traffic-llama-cpu.yaml")), AuditOptions{});
  for (const char* name : {"cpu-invariant", "cpu-portable"}) {
    const BackendOutcome& o = outcome(r, name);
    EXPECT_EQ(o.max_distinct_completions, 1) << name;
    EXPECT_EQ(o.divergent_contexts, 0) << name;
    EXPECT_TRUE(o.passed) << name << ": " << o.verdict;
  }
  int64_t ended_at_eos = 0;
  for (const CaseRecord& c : r.cases)
    ended_at_eos += std::stoll(c.notes.at("traffic.ended_at_eos"));
  EXPECT_GT(ended_at_eos, 0);
  EXPECT_EQ(r.summary.contexts, 32);
}

TEST(TrafficScenario, BisectNamesWhereTwoTrafficSeedsPart) {
  const Scenario s = load_scenario(scenario_path("traffic-cpu.yaml"));
  BisectOptions o;
  o.backend = "cpu-variant";
  o.context = {{"traffic_seed", "1"}};
  o.against = {{"traffic_seed", "2"}};
  const BisectResult r = run_bisect(s, o);
  EXPECT_TRUE(r.diverged);
  ASSERT_TRUE(r.first_op.has_value());
  ASSERT_TRUE(r.step_a.has_value());
  ASSERT_TRUE(r.step_b.has_value());
  EXPECT_EQ(r.step_a->step, r.first_op->step);
  EXPECT_FALSE(r.step_a->engine_steps.empty());
  const std::string text = render_bisect_text(r);
  EXPECT_NE(text.find("the step's batch in A: engine step"), std::string::npos) << text;
  EXPECT_TRUE(bisect_to_json(r).contains("traffic"));
  o.backend = "cpu-invariant";
  const BisectResult same = run_bisect(s, o);
  EXPECT_FALSE(same.diverged);
  EXPECT_FALSE(same.step_a.has_value());
  // The command line, as README quotes it.
  const CommandResult cli =
      run_nvdet("bisect " + scenario_path("traffic-cpu.yaml") +
                " --backend cpu-variant --context traffic_seed=1 --against traffic_seed=2");
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("the step's batch in B: engine step"), std::string::npos) << cli.out;
}

// A small fp32 replay set (cpu-variant's plans show in every fp32 bit) through the command line:
// every format states the verdict and carries the replays and the first replay apart.
TEST(TrafficScenario, EveryReportFormatCarriesTheTrafficResults) {
  const auto dir = make_temp_dir("traffic-reports");
  write_file(dir / "t.yaml", R"(name: traffic-small
op: model
dtype: fp32
model: {hidden: 256, layers: 1, heads: 4, kv_heads: 2, intermediate: 256, vocab: 128,
        prompt_len: 10, num_prompts: 1, max_new_tokens: 6, page_size: 4}
traffic: {requests: 6, arrival: {rate: 2}, prompt_len: {min: 4, max: 20},
          max_new_tokens: {min: 2, max: 8}, probe_arrival: 1, max_num_batched_tokens: 40,
          max_num_seqs: 4}
seed: 5
sweep:
  traffic_seed: [1, 2, 3]
backends:
  cpu-variant: variant
  cpu-invariant: invariant
)");
  const CommandResult run = run_nvdet("audit " + (dir / "t.yaml").string() + " --report-dir " +
                                      (dir / "out").string() + " --format md,json,junit,html");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("replays: request 0: 1 distinct completion over 3 replays (3)"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("first replay apart: request 0 in traffic_seed="), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("the baseline's step, traffic_seed=1: engine step"), std::string::npos)
      << run.out;
  const std::string md = read_file(dir / "out" / "traffic-small.md");
  EXPECT_NE(md.find("## Serving traffic"), std::string::npos);
  EXPECT_NE(md.find("| `cpu-invariant` | 0 | 3 | 1 | 3 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `cpu-variant` | request 0 in traffic_seed="), std::string::npos) << md;
  const std::string html = read_file(dir / "out" / "traffic-small.html");
  EXPECT_NE(html.find("<section id=\"traffic\">"), std::string::npos);
  EXPECT_NE(html.find("First replay apart"), std::string::npos);
  const std::string junit = read_file(dir / "out" / "traffic-small.junit.xml");
  EXPECT_NE(junit.find("name=\"traffic_replays\" value=\"request 0: 1 distinct completion over 3 "
                       "replays (3)\""),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("name=\"traffic_parted_at\""), std::string::npos);
  const std::string json = read_file(dir / "out" / "traffic-small.json");
  EXPECT_NE(json.find("\"replays_per_completion\""), std::string::npos);
  EXPECT_NE(json.find("\"engine_steps\""), std::string::npos);
  // nvdet report renders the same bytes from the JSON report.
  const CommandResult again =
      run_nvdet("report " + (dir / "out" / "traffic-small.json").string() + " --report-dir " +
                (dir / "again").string() + " --format md,json,junit,html");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const char* ext : {".md", ".json", ".junit.xml", ".html"}) {
    EXPECT_EQ(read_file(dir / "again" / ("traffic-small" + std::string(ext))),
              read_file(dir / "out" / ("traffic-small" + std::string(ext))))
        << ext;
  }
}

// Scenario text around a traffic block: `model` and `sweep` as given.
std::string traffic_yaml(const std::string& traffic, const std::string& extra = "") {
  return "name: t\nop: model\ndtype: bf16\nmodel: {hidden: 64, heads: 4, kv_heads: 2, vocab: 128, "
         "prompt_len: 8, num_prompts: 1}\nseed: 1\n" +
         (traffic.empty() ? std::string() : "traffic: " + traffic + "\n") + extra +
         "backends: {cpu-invariant: invariant}\n";
}

void expect_refused(const std::string& yaml, const std::string& words, int line) {
  try {
    parse_scenario(yaml, "t.yaml");
    ADD_FAILURE() << "accepted:\n" << yaml;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find(words), std::string::npos) << what;
    EXPECT_EQ(what.rfind("t.yaml:" + std::to_string(line) + ":", 0), 0u) << what;
  }
}

TEST(TrafficScenario, RefusesWhatItCannotComputeNamingTheKey) {
  expect_refused(
      "name: t\nop: gemm\ndtype: bf16\nshape: {n: 8, k: 8}\nseed: 1\ntraffic: {requests: 2}\n"
      "backends: {cpu-invariant: invariant}\n",
      "key 'traffic' does not apply to op 'gemm' (it is for model)", 6);
  expect_refused(traffic_yaml("", "sweep: {traffic_seed: [1, 2]}\n"),
                 "sweep axis 'traffic_seed' sets the serving traffic's scheduler; it needs a "
                 "'traffic' block",
                 6);
  expect_refused(traffic_yaml("{requests: 2}", "sweep: {batch: [1, 2]}\n"),
                 "sweep axis 'batch' is not implemented with 'traffic'", 7);
  expect_refused(
      "name: t\nop: model\ndtype: bf16\nmodel: {prompt_len: 8, prefill_chunk: 4}\nseed: 1\n"
      "traffic: {requests: 2}\nbackends: {cpu-invariant: invariant}\n",
      "'model.prefill_chunk' is not implemented with 'traffic'", 4);
  expect_refused(traffic_yaml("{requests: 2, max_num_batched_tokens: 4, max_num_seqs: 8}"),
                 "max_num_batched_tokens 4 is less than max_num_seqs 8", 6);
  expect_refused(traffic_yaml("{requests: 2, prompt_len: 40, max_num_batched_tokens: 16,\n"
                              "  max_num_seqs: 4, chunked_prefill: off}"),
                 "with chunked_prefill off a prompt of 40 tokens cannot fit a step of "
                 "max_num_batched_tokens 16",
                 7);
  expect_refused(traffic_yaml("{requests: 2, eos: on}"), "'eos: on' takes the checkpoint's", 6);
  expect_refused(traffic_yaml("{requests: 2, probe_prefix: 0}"),
                 "'traffic.probe_prefix' names shared prefix 0 but 'traffic.shared_prefix' has 0 "
                 "groups",
                 6);
  expect_refused(traffic_yaml("{requests: 2, prompt_len: {min: 9, max: 4}}"),
                 "'max' (4) must not be less than 'min' (9)", 6);
  expect_refused(traffic_yaml("{requests: 2, arrival: {rate: 1, burst: 2}}"),
                 "'traffic.arrival' takes 'rate' or 'burst' with 'every', not both", 6);
  expect_refused(traffic_yaml("{requests: 2, prefix_caching: yes}"),
                 "'prefix_caching' must be on or off", 6);
  expect_refused(traffic_yaml("{request: 2}"), "unknown key 'request' in 'traffic'", 6);
  // Accepted as written: a scenario of one replay per traffic seed.
  const Scenario ok = parse_scenario(
      traffic_yaml("{requests: 3, max_num_seqs: 4}", "sweep: {traffic_seed: {from: 1, to: 4}}\n"),
      "t.yaml");
  EXPECT_TRUE(ok.traffic.enabled);
  EXPECT_EQ(expand_contexts(ok).size(), 4u);
  EXPECT_EQ(expand_contexts(ok).at(1).group, "");  // every replay is compared with the first
}

// The work of every replay is counted before anything runs: a traffic too large for any run is
// exit 2 with the numbers, before a weight is built.
TEST(TrafficScenario, BudgetCountsEveryRequestOfTheTraffic) {
  const auto dir = make_temp_dir("traffic-budget");
  write_file(dir / "big.yaml",
             traffic_yaml("{requests: 60000, prompt_len: 60000, max_new_tokens: 60000,\n"
                          "  max_num_batched_tokens: 65536, max_num_seqs: 64}"));
  const CommandResult r = run_nvdet("audit " + (dir / "big.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("token-layers"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nvdet::testing
