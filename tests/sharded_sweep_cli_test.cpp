// Sharded sweeps end to end: every CPU scenario, audited whole and in 3 shards whose JSON reports
// and manifests `nvdet report` merges, gives the same report (verdicts, cases, hashes,
// divergences: everything but timings) and a byte-identical manifest; the schedulers' variables
// drive `--shard auto` as the README's Slurm, Kubernetes and GitHub Actions examples do;
// `--devices` merges its own shards; shards that do not make one sweep are refused.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "lib/core/temporary_files.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string scenario(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

std::vector<std::string> cpu_scenarios() {
  // With the scenario whose invariant expectation fails: its shards fail too, and the merge.
  std::vector<std::string> names = {"quickstart.yaml", "fail-expect-invariant.yaml"};
  for (const auto& e : fs::directory_iterator(source_dir() / "scenarios")) {
    const std::string n = e.path().filename().string();
    if (n.size() > 9 && n.substr(n.size() - 9) == "-cpu.yaml") names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// One test per scenario, so that ctest runs them side by side and each has its own time limit.
class ShardedSweepOf : public ::testing::TestWithParam<std::string> {};

TEST(ShardedSweep, EveryCpuScenarioIsChecked) { ASSERT_GE(cpu_scenarios().size(), 8u); }

TEST_P(ShardedSweepOf, MergesToTheUnshardedRun) {
  const std::string& name = GetParam();
#ifdef NVDET_ASAN
  // Under the sanitizers every nvdet run is several times slower: the checking build merges every
  // third scenario (the memory checks are the point there) but the three that take minutes there
  // (700-token prompts, 100 traffic replays, the FP8 checkpoint: 2 to 9 minutes each under ASan);
  // the release build checks them all.
  const std::vector<std::string> names = cpu_scenarios();
  const auto at = std::find(names.begin(), names.end(), name) - names.begin();
  if (at % 3 != 0) GTEST_SKIP() << "the sanitizer build merges every third scenario";
  if (name == "model-parity-long-cpu.yaml" || name == "traffic-cpu.yaml" ||
      name == "fp8-model-cpu.yaml")
    GTEST_SKIP() << "minutes under the sanitizers; the release build merges it";
#endif
  const fs::path dir = make_temp_dir("shard-merge");
  const CommandResult whole =
      run_nvdet("audit " + scenario(name) + " -q --report-dir " + (dir / "whole").string() +
                " --format json --record " + (dir / "whole.manifest.json").string());
  ASSERT_TRUE(whole.exit_code == 0 || whole.exit_code == 1) << whole.out << whole.err;
  std::string shard_reports, shard_manifests;
  for (int i = 1; i <= 3; ++i) {
    const std::string m = (dir / ("shard" + std::to_string(i) + ".manifest.json")).string();
    const CommandResult s =
        run_nvdet("audit " + scenario(name) + " -q --shard " + std::to_string(i) +
                  "/3 --report-dir " + (dir / "shards").string() + " --format json --record " + m);
    // A shard fails only where the whole sweep fails (an invariant backend diverged there).
    ASSERT_TRUE(s.exit_code == 0 || (s.exit_code == 1 && whole.exit_code == 1)) << s.out << s.err;
    shard_manifests += " " + m;
  }
  for (const auto& e : fs::directory_iterator(dir / "shards")) {
    shard_reports += " " + e.path().string();
  }
  const CommandResult merged =
      run_nvdet("report" + shard_reports + " --report-dir " + (dir / "merged").string() +
                " --format json,md,junit,html --record " + (dir / "merged.manifest.json").string());
  EXPECT_EQ(merged.exit_code, whole.exit_code) << merged.out << merged.err;
  const CommandResult from_manifests =
      run_nvdet("report" + shard_manifests + " --record " + (dir / "union.manifest.json").string());
  EXPECT_EQ(from_manifests.exit_code, 0) << from_manifests.err;

  fs::path report;
  for (const auto& e : fs::directory_iterator(dir / "whole")) report = e.path().filename();
  const json a = json::parse(read_file(dir / "whole" / report));
  const json b = json::parse(read_file(dir / "merged" / report));
  EXPECT_FALSE(b.contains("shard"));
  EXPECT_GT(a.at("cases").size(), 0u);
  EXPECT_EQ(without_timings(a).dump(1), without_timings(b).dump(1));
  // Manifests have no timings: merged from the reports or from the shards' own, byte for byte.
  const std::string golden = read_file(dir / "whole.manifest.json");
  EXPECT_EQ(read_file(dir / "merged.manifest.json"), golden);
  EXPECT_EQ(read_file(dir / "union.manifest.json"), golden);
  fs::remove_all(dir);
}

// gtest names allow letters, digits and underscores: "model-cpu.yaml" -> "model_cpu".
std::string scenario_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ShardedSweepOf, ::testing::ValuesIn(cpu_scenarios()),
                         scenario_test_name);

// The README's examples: each scheduler's index variable, as its job array sets it.
TEST(ShardedSweep, SchedulersDriveShardAuto) {
  const std::vector<std::pair<std::string, std::string>> schedulers = {
      {"SLURM_ARRAY_TASK_ID=%d SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3", "slurm"},
      {"JOB_COMPLETION_INDEX=%d JOB_COMPLETIONS=3", "k8s"},
      {"GTEST_SHARD_INDEX=%d GTEST_TOTAL_SHARDS=3", "gtest"}};
  const fs::path dir = make_temp_dir("shard-auto");
  const CommandResult whole =
      run_nvdet("audit " + scenario("quickstart.yaml") + " -q --report-dir " +
                (dir / "whole").string() + " --format json");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const json golden = without_timings(json::parse(read_file(dir / "whole" / "quickstart.json")));
  for (const auto& [env, tag] : schedulers) {
    SCOPED_TRACE(tag);
    for (int i = 0; i < 3; ++i) {
      std::string e = env;
      for (size_t at; (at = e.find("%d")) != std::string::npos;)
        e.replace(at, 2, std::to_string(i));
      const CommandResult s = run_nvdet_env(e, "audit " + scenario("quickstart.yaml") +
                                                   " -q --shard auto --report-dir " +
                                                   (dir / tag).string() + " --format json");
      ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
      EXPECT_TRUE(
          fs::exists(dir / tag / ("quickstart.shard-" + std::to_string(i + 1) + "-of-3.json")));
    }
    std::string inputs;
    for (int i = 1; i <= 3; ++i) {
      inputs +=
          " " + (dir / tag / ("quickstart.shard-" + std::to_string(i) + "-of-3.json")).string();
    }
    const CommandResult m = run_nvdet("report" + inputs + " --format json --report-dir " +
                                      (dir / (tag + "-merged")).string());
    ASSERT_EQ(m.exit_code, 0) << m.err;
    EXPECT_EQ(without_timings(json::parse(read_file(dir / (tag + "-merged") / "quickstart.json"))),
              golden);
  }
  // No scheduler: one sentence, exit 2.
  const CommandResult none = run_nvdet("audit " + scenario("quickstart.yaml") + " --shard auto");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no shard index in the environment"), std::string::npos) << none.err;
  fs::remove_all(dir);
}

// On the CPU: builds with the test hooks take NVDET_TEST_DEVICE_COUNT for the number of GPUs
// (tests/devices_test.cpp has the rest of --devices).
TEST(ShardedSweep, DevicesRunOneShardPerDeviceAndMerge) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  const fs::path dir = make_temp_dir("shard-devices");
  const CommandResult whole =
      run_nvdet("audit " + scenario("quickstart.yaml") + " -q --report-dir " +
                (dir / "whole").string() + " --format json");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::string summary = (dir / "summary.md").string();
  const CommandResult dev =
      run_nvdet_env("NVDET_TEST_DEVICE_COUNT=2 GITHUB_STEP_SUMMARY=" + summary,
                    "audit " + scenario("quickstart.yaml") + " --devices 0,1 --report-dir " +
                        (dir / "dev").string() + " --format json,md");
  ASSERT_EQ(dev.exit_code, 0) << dev.out << dev.err;
  EXPECT_NE(dev.out.find("audit PASSED: 3 of 3 backends"), std::string::npos) << dev.out;
  EXPECT_EQ(without_timings(json::parse(read_file(dir / "dev" / "quickstart.json"))),
            without_timings(json::parse(read_file(dir / "whole" / "quickstart.json"))));
  // The job summary holds the merged report once, not the shards'.
  EXPECT_EQ(read_file(summary), read_file(dir / "dev" / "quickstart.md") + "\n");
  // Only the merged report set is left: the shards' folder is removed.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "dev")) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 2u);
  const CommandResult twice = run_nvdet("audit " + scenario("quickstart.yaml") + " --devices 0,0");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("lists device 0 twice"), std::string::npos) << twice.err;
  fs::remove_all(dir);
}

// A sharded sweep is verified once merged: `nvdet report SHARDS --verify MANIFEST`.
TEST(ShardedSweep, MergedShardsAreVerifiedAgainstAManifest) {
  const fs::path dir = make_temp_dir("shard-verify");
  const std::string golden = (dir / "golden.json").string();
  ASSERT_EQ(run_nvdet("audit " + scenario("quickstart.yaml") + " -q --record " + golden).exit_code,
            0);
  std::string shards;
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(
        run_nvdet("audit " + scenario("quickstart.yaml") + " -q --shard " + std::to_string(i) +
                  "/2 --report-dir " + (dir / "s").string() + " --format json")
            .exit_code,
        0);
    shards += " " + (dir / "s" / ("quickstart.shard-" + std::to_string(i) + "-of-2.json")).string();
  }
  CommandResult r = run_nvdet("report" + shards + " --verify " + golden + " --report-dir " +
                              (dir / "ok").string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      json::parse(read_file(dir / "ok" / "quickstart.json")).at("summary").at("verify_passed"));
  // A recorded hash of the invariant backend that this run does not reproduce fails the merge.
  json m = json::parse(read_file(golden));
  auto& entries = m.at("scenarios").at("quickstart").at("entries").at("cpu-invariant");
  entries.begin().value().at("0").at("0")["hash"] = std::string(32, '0');
  write_file(dir / "changed.json", m.dump(1));
  r = run_nvdet("report" + shards + " --verify " + (dir / "changed.json").string() +
                " --report-dir " + (dir / "bad").string() + " --format json,junit");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(json::parse(read_file(dir / "bad" / "quickstart.json")).at("summary").at("passed"));
  fs::remove_all(dir);
}

TEST(ShardedSweep, ShardsThatDoNotMakeOneSweepAreRefused) {
  const fs::path dir = make_temp_dir("shard-refuse");
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(run_nvdet("audit " + scenario("quickstart.yaml") + " -q --shard " +
                        std::to_string(i) + "/3 --report-dir " + dir.string() + " --format json")
                  .exit_code,
              0);
  }
  const std::string one = (dir / "quickstart.shard-1-of-3.json").string();
  const std::string two = (dir / "quickstart.shard-2-of-3.json").string();
  CommandResult r =
      run_nvdet("report " + one + " " + two + " --report-dir " + (dir / "m").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("it has 3 shards, reports were given for shards 1, 2"), std::string::npos)
      << r.err;
  r = run_nvdet("report " + one + " " + one + " " + two + " --report-dir " + (dir / "m").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("reports were given for shards 1, 1, 2 (each once)"), std::string::npos)
      << r.err;
  // --shard with --verify: the merge verifies.
  r = run_nvdet("audit " + scenario("quickstart.yaml") + " --shard 1/2 --verify " + one);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("verify the merged shards"), std::string::npos) << r.err;
  // A shard's console names its part.
  r = run_nvdet("audit " + scenario("quickstart.yaml") + " --shard 2/3");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("shard 2 of 3: 7 contexts owned, 1 run as baselines only"),
            std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvdet::testing
