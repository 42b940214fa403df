// What pytest and nvbench users expect of the CLI: -q/-k/-x short flags, --maxfail,
// --last-failed, --axis overrides checked like the scenario's own values, a did-you-mean for a
// mistyped option pointing at the subcommand's help, and exit code 5 when nothing ran, stated
// in every report format.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "lib/core/error.h"
#include "lib/core/temporary_files.h"
#include "lib/loader/scenario_loader.h"
#include "tests/spawn_nvdet.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string scenario(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

std::vector<std::string> ids_listed(const std::string& out) {
  std::vector<std::string> ids;
  size_t at = 0;
  while ((at = out.find("\n  ", at)) != std::string::npos) {
    at += 3;
    ids.push_back(out.substr(at, out.find('\n', at) - at));
  }
  return ids;
}

TEST(CliConventions, ShortFlagsAreTheLongOnes) {
  const CommandResult k =
      run_nvdet("audit " + scenario("quickstart.yaml") + " -k 'batch=(2|65),' --list-contexts");
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_EQ(
      ids_listed(k.out),
      (std::vector<std::string>{"gemm(batch=2,position=first)", "gemm(batch=2,position=last)",
                                "gemm(batch=65,position=first)", "gemm(batch=65,position=last)"}));
  const CommandResult q =
      run_nvdet("audit " + scenario("quickstart.yaml") + " -q -k 'batch=(2|17),'");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, "quickstart: audit PASSED\n");
}

TEST(CliConventions, ExitFirstAndMaxfailStopAfterFailedExpectations) {
  const std::string two =
      scenario("fail-expect-invariant.yaml") + " " + scenario("quickstart.yaml");
  const CommandResult x = run_nvdet("audit " + two + " -q -x");
  EXPECT_EQ(x.exit_code, 1);
  EXPECT_EQ(x.out.find("quickstart:"), std::string::npos) << x.out;  // never ran
  EXPECT_NE(x.out.find("nvdet audit: 0 of 2 scenarios passed, 1 failed, 1 not run (stopped after "
                       "1 failed expectation)"),
            std::string::npos)
      << x.out;
  // One failed expectation is below --maxfail 2: both scenarios run.
  const CommandResult m = run_nvdet("audit " + two + " -q --maxfail 2");
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.out.find("quickstart: audit PASSED"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("nvdet audit: 1 of 2 scenarios passed, 1 failed;"), std::string::npos)
      << m.out;
  EXPECT_EQ(run_nvdet("audit " + two + " --maxfail -1").exit_code, 2);
}

TEST(CliConventions, LastFailedRerunsTheFailedContextsWithTheirBaselines) {
  const fs::path dir = make_temp_dir("last-failed");
  const std::string both =
      scenario("fail-expect-invariant.yaml") + " " + scenario("quickstart.yaml");
  ASSERT_EQ(
      run_nvdet("audit " + both + " -q --report-dir " + dir.string() + " --format json").exit_code,
      1);
  const json last = json::parse(read_file(dir / "fail-expect-invariant.json"));
  std::set<std::string> failed;
  for (const json& d : last.at("divergences")) failed.insert(d.at("context").get<std::string>());
  ASSERT_FALSE(failed.empty());
  const std::string reports =
      (dir / "fail-expect-invariant.json").string() + " " + (dir / "quickstart.json").string();
  const CommandResult lf =
      run_nvdet("audit " + both + " --last-failed " + reports + " --list-contexts");
  ASSERT_EQ(lf.exit_code, 0) << lf.err;
  // The passed scenario is not run again; the failed one runs its failed contexts and the
  // baseline they were compared with.
  EXPECT_NE(lf.err.find("quickstart: passed in"), std::string::npos) << lf.err;
  EXPECT_EQ(lf.out.find("quickstart:"), std::string::npos) << lf.out;
  std::vector<std::string> expected = {"gemm(batch=2,position=first)"};
  for (const json& c : last.at("contexts")) {
    const std::string id = c.at("id");
    if (failed.count(id) && std::find(expected.begin(), expected.end(), id) == expected.end()) {
      expected.push_back(id);
    }
  }
  EXPECT_EQ(ids_listed(lf.out), expected);
  // Running it fails again, on exactly those contexts.
  const CommandResult again = run_nvdet("audit " + both + " -q --last-failed " + reports);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.out.find("quickstart:"), std::string::npos) << again.out;
  fs::remove_all(dir);
}

TEST(CliConventions, AxisOverrideReplacesTheSweepAndIsCheckedLikeIt) {
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") +
                                    " --axis batch=4,17 --axis 'position=[last]' --list-contexts");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ids_listed(r.out), (std::vector<std::string>{"gemm(batch=4,position=last)",
                                                         "gemm(batch=17,position=last)"}));
  // Ranges in the scenario's own syntax.
  const CommandResult range = run_nvdet("audit " + scenario("quickstart.yaml") +
                                        " --axis 'batch=[4, {from: 16, to: 64, mul: 2}]' "
                                        "--axis position=first --list-contexts");
  ASSERT_EQ(range.exit_code, 0) << range.err;
  EXPECT_EQ(ids_listed(range.out).size(), 4u) << range.out;
  struct Bad {
    std::string axis, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"batch=0", "--axis batch:1:2: 'batch' values must be at least 1, got 0"},
           {"batch=1", "batch 1 cannot hold the 2 probed requests [0, 3]"},
           {"batch=4,4", "sweep axis 'batch' lists 4 twice"},
           {"position=fist", "(did you mean 'first'?)"},
           {"bacth=4", "unknown axis 'bacth' (did you mean 'batch'?)"},
           {"kv_len=4", "axis 'kv_len' does not apply to op 'gemm'"},
           {"batch", "--axis takes NAME=VALUES"},
           {"batch=[1", "YAML syntax error"},
       }) {
    SCOPED_TRACE(b.axis);
    const CommandResult bad = run_nvdet("audit " + scenario("quickstart.yaml") + " --axis '" +
                                        b.axis + "' --list-contexts");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find(b.message), std::string::npos) << bad.err;
  }
}

TEST(CliConventions, AxisOverrideGivesTheSameScenarioAsTheFile) {
  // The same sweep from the file and from the option: identical contexts.
  const std::string yaml = read_file(scenario("quickstart.yaml"));
  std::string edited = yaml;
  const std::string from = "batch: [2, 3, 4, 8, 16, 17, 32, 64, 65, 128]";
  ASSERT_NE(edited.find(from), std::string::npos);
  edited.replace(edited.find(from), from.size(), "batch: [5, {from: 8, to: 40, step: 16}]");
  const Scenario a = parse_scenario(edited, "q.yaml");
  const Scenario b = parse_scenario(yaml, "q.yaml", {{"batch", "5, {from: 8, to: 40, step: 16}"}});
  ASSERT_EQ(a.sweep.size(), b.sweep.size());
  for (size_t i = 0; i < a.sweep.size(); ++i) {
    EXPECT_EQ(a.sweep[i].axis, b.sweep[i].axis);
    EXPECT_EQ(a.sweep[i].values, b.sweep[i].values);
  }
}

TEST(CliConventions, MistypedOptionsGetTheNearestOneAndTheSubcommandsHelp) {
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " --fliter x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nvdet audit: unknown option '--fliter' (did you mean '--filter'?) (see "
                       "nvdet audit --help)"),
            std::string::npos)
      << r.err;
  const CommandResult b = run_nvdet("bench " + scenario("quickstart.yaml") + " --rep 3");
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("(did you mean '--reps'?) (see nvdet bench --help)"), std::string::npos)
      << b.err;
}

TEST(CliConventions, NothingRanIsExitFiveInEveryFormat) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present: the GPU backends would run";
  const fs::path dir = make_temp_dir("nothing-ran");
  write_file(dir / "gpu-only.yaml",
             "name: gpu-only\nop: rmsnorm\ndtype: bf16\nout_dtype: fp32\nshape: {d: 64}\n"
             "seed: 7\nrequests: [0]\nsweep:\n  batch: [1, 2]\nbackends:\n"
             "  cuda-invariant: invariant\n  cuda-vendor-policy: variant\n");
  const CommandResult r =
      run_nvdet("audit " + (dir / "gpu-only.yaml").string() + " --skip-unavailable --report-dir " +
                (dir / "r").string() + " --format md,json,junit,html");
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("audit RAN NOTHING: no case ran (2 of 2 backends skipped, 2 contexts); "
                       "exit code 5"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(json::parse(read_file(dir / "r" / "gpu-only.json")).at("summary").at("nothing_ran"));
  EXPECT_EQ(read_file(dir / "r" / "gpu-only.md").rfind("# \u2205 NOTHING RAN: nvdet audit", 0), 0u);
  EXPECT_NE(read_file(dir / "r" / "gpu-only.html").find("<title>nvdet audit gpu-only: NOTHING RAN"),
            std::string::npos);
  const std::string junit = read_file(dir / "r" / "gpu-only.junit.xml");
  EXPECT_NE(junit.find("tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"2\""), std::string::npos)
      << junit;
  // nvdet report restates it.
  const CommandResult again = run_nvdet("report " + (dir / "r" / "gpu-only.json").string() +
                                        " --report-dir " + (dir / "again").string());
  EXPECT_EQ(again.exit_code, 5) << again.err;
  fs::remove_all(dir);
}

TEST(CliConventions, ListAndInfoAsData) {
  const CommandResult r = run_nvdet("list --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.at("op_details").size(), j.at("ops").size());
  for (const json& op : j.at("op_details")) {
    EXPECT_FALSE(op.at("description").get<std::string>().empty()) << op;
    // Every op calls backend ops but probe, which a running server answers.
    EXPECT_EQ(op.at("uses").empty(), op.at("name") == "probe") << op;
  }
  std::map<std::string, json> by_name;
  for (const json& b : j.at("backends")) by_name[b.at("name")] = b;
  // The CPU backends compute every op in every dtype and run anywhere; cudnn computes attention
  // only (what the registry says), and without a GPU no GPU backend is available, with a reason.
  for (const char* cpu : {"cpu-reference", "cpu-invariant", "cpu-variant"}) {
    const json& b = by_name.at(cpu);
    EXPECT_TRUE(b.at("available").get<bool>()) << b;
    EXPECT_EQ(b.at("supports").at("gemm"), json({"bf16", "fp16", "fp32"})) << b;
  }
  ASSERT_TRUE(by_name.count("cudnn"));
  EXPECT_FALSE(by_name.at("cudnn").at("supports").contains("gemm"));
  EXPECT_TRUE(by_name.at("cudnn").at("supports").contains("attention_decode"));
  const CommandResult info = run_nvdet("info --format json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json ij = json::parse(info.out);
  for (const auto& [name, b] : by_name) {
    EXPECT_EQ(ij.at("backend_availability").at(name).at("available"), b.at("available")) << name;
    if (!gpu_available() && b.at("kind") == "gpu") {
      EXPECT_FALSE(b.at("available").get<bool>()) << name;
      EXPECT_FALSE(b.at("unavailable_reason").get<std::string>().empty()) << name;
    }
  }
}

// An interrupted run says on stderr what it removed and how much was complete before.
TEST(CliConventions, InterruptionSaysWhatWasWrittenAndRemoved) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  const fs::path dir = make_temp_dir("interrupt-line");
  const std::string err = (dir / "err.txt").string();
  const pid_t pid = spawn_nvdet({"audit", scenario("quickstart.yaml"), "-q", "--report-dir",
                                 (dir / "r").string(), "--format", "json,md"},
                                {"NVDET_TEST_HOLD_WRITE_MS=20000"}, err);
  ASSERT_GT(pid, 0);
  // The first report (json) is held before its rename: wait for its temporary file.
  bool seen = false;
  for (int i = 0; i < 600 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(dir / "r")) continue;
    for (const auto& e : fs::directory_iterator(dir / "r")) {
      seen = seen || e.path().filename().string().rfind(".quickstart.json.tmp-", 0) == 0;
    }
  }
  ASSERT_TRUE(seen);
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string text = read_file(err);
  EXPECT_NE(text.find("nvdet: interrupted by SIGINT: removed the unfinished "), std::string::npos)
      << text;
  EXPECT_NE(text.find(".quickstart.json.tmp-"), std::string::npos) << text;
  EXPECT_NE(text.find("; 0 files written before it are complete\n"), std::string::npos) << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvdet::testing
