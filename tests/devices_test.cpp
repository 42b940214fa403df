// `nvdet audit --devices 0,1,...`: devices this machine does not have are refused before any
// shard starts; every option reaches the shards (-x and --maxfail stop where the unsharded run
// stops, --last-failed reruns what failed); a failing shard is reported with its own error
// sentence; SIGINT/SIGTERM to nvdet stops its shards and removes their folder. The shards are run
// on the CPU here: builds with the test hooks take NVDET_TEST_DEVICE_COUNT for the GPU count.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "lib/core/temporary_files.h"
#include "tests/spawn_nvdet.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const auto scenario = shipped_scenario;
const std::string kTwoGpus = "NVDET_TEST_DEVICE_COUNT=2";

TEST(Devices, DevicesThisMachineDoesNotHaveAreRefused) {
  const fs::path dir = make_temp_dir("devices-missing");
  if (!gpu_available()) {
    const CommandResult none = run_nvdet("audit " + scenario("quickstart.yaml") +
                                         " --devices 0,1,2,3,4,5,6,7 --report-dir " + dir.string());
    EXPECT_EQ(none.exit_code, 3) << none.out << none.err;
    EXPECT_NE(none.err.find("--devices names GPU 0, but this machine has no GPU"),
              std::string::npos)
        << none.err;
    EXPECT_EQ(none.out, "");
  }
  if (test_hooks_built()) {
    const CommandResult two =
        run_nvdet_env(kTwoGpus, "audit " + scenario("quickstart.yaml") +
                                    " --devices 0,2 --report-dir " + dir.string());
    EXPECT_EQ(two.exit_code, 3);
    EXPECT_NE(two.err.find("--devices names GPU 2, but this machine has 2 (0 to 1)"),
              std::string::npos)
        << two.err;
  }
  // No shard ran: nothing was written, no shards' folder is left.
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST(Devices, ExitFirstAndMaxfailStopWhereTheUnshardedRunStops) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  const std::string two =
      scenario("fail-expect-invariant.yaml") + " " + scenario("quickstart.yaml");
  for (const std::string stop : {"-x", "--maxfail 1"}) {
    SCOPED_TRACE(stop);
    const CommandResult r = run_nvdet_env(kTwoGpus, "audit " + two + " -q --devices 0,1 " + stop);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out.find("quickstart:"), std::string::npos) << r.out;  // never ran
    EXPECT_NE(r.out.find("0 of 2 scenarios passed, 1 failed, 1 not run"), std::string::npos)
        << r.out;
  }
}

TEST(Devices, LastFailedReachesTheShards) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  const fs::path dir = make_temp_dir("devices-lf");
  const std::string failing = scenario("fail-expect-invariant.yaml");
  ASSERT_EQ(run_nvdet("audit " + failing + " -q --report-dir " + (dir / "first").string() +
                      " --format json")
                .exit_code,
            1);
  const std::string last =
      " --last-failed " + (dir / "first" / "fail-expect-invariant.json").string();
  ASSERT_EQ(run_nvdet("audit " + failing + " -q --report-dir " + (dir / "whole").string() +
                      " --format json" + last)
                .exit_code,
            1);
  const CommandResult dev =
      run_nvdet_env(kTwoGpus, "audit " + failing + " -q --devices 0,1 --report-dir " +
                                  (dir / "dev").string() + " --format json" + last);
  ASSERT_EQ(dev.exit_code, 1) << dev.err;
  const json whole = json::parse(read_file(dir / "whole" / "fail-expect-invariant.json"));
  const json merged = json::parse(read_file(dir / "dev" / "fail-expect-invariant.json"));
  EXPECT_LT(whole.at("contexts").size(), 20u);  // only the failed contexts and their baselines
  EXPECT_EQ(without_timings(merged), without_timings(whole));
  fs::remove_all(dir);
}

// A shard that fails is quoted from its own error log, not from its stdout's verdict line.
TEST(Devices, AFailingShardIsReportedWithItsOwnError) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  const fs::path dir = make_temp_dir("devices-fail");
  // The shards write a synthetic checkpoint into TMPDIR, which does not exist; nvdet itself
  // writes into --report-dir and checks the scenario without it.
  const CommandResult r =
      run_nvdet_env(kTwoGpus + " TMPDIR=" + (dir / "missing").string(),
                    "audit " + scenario("model-qwen3-moe-wide-cpu.yaml") +
                        " -q --devices 0,1 -k 'batch=2,' --report-dir " + (dir / "r").string());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("shard 1 of 'model-qwen3-moe-wide-cpu' on device 0 exited with code 3: "
                       "nvdet: TMPDIR '"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("audit PASSED"), std::string::npos) << r.err;
  // The shards' folder is removed whatever happened.
  for (const auto& e : fs::directory_iterator(dir / "r")) {
    EXPECT_EQ(e.path().filename().string().rfind(".nvdet-shards-", 0), std::string::npos);
  }
  fs::remove_all(dir);
}

// Whether any process still runs with `marker` in its command line.
bool any_process_with(const std::string& marker) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(e.path() / "cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(marker) != std::string::npos) return true;
  }
  return false;
}

TEST(Devices, SigtermStopsTheShardsAndRemovesTheirFolder) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  const fs::path dir = make_temp_dir("devices-signal");
  const std::string err = (dir / "err.txt").string();
  const std::string reports = (dir / "reports").string();
  // Each shard holds its report's temporary file for 20 s: the signal finds them running.
  const pid_t pid = spawn_nvdet(
      {"audit", scenario("quickstart.yaml"), "-q", "--devices", "0,1", "--report-dir", reports},
      {"NVDET_TEST_HOLD_WRITE_MS=20000", kTwoGpus}, err);
  ASSERT_GT(pid, 0);
  // Wait until both shards are writing their reports (their temporary files exist).
  int writing = 0;
  for (int i = 0; i < 600 && writing < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    writing = 0;
    if (!fs::exists(reports)) continue;
    for (const auto& shards : fs::directory_iterator(reports)) {
      if (!shards.is_directory()) continue;
      for (const auto& e : fs::directory_iterator(shards.path())) {
        writing += e.path().filename().string().find(".json.tmp-") != std::string::npos;
      }
    }
  }
  ASSERT_EQ(writing, 2);
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_NE(read_file(err).find("nvdet: interrupted by SIGTERM: stopped 2 child processes"),
            std::string::npos)
      << read_file(err);
  // The shards stopped with it (they were waited for), and their folder is gone.
  EXPECT_FALSE(any_process_with(reports));
  EXPECT_TRUE(fs::is_empty(reports));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvdet::testing
