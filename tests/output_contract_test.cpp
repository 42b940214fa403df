// The contract of what nvdet writes and how it reads its command line: a report set is replaced
// whole or not at all (a full disk or `ulimit -f` half-way leaves the old set and no temporary,
// exit 3), stdout that cannot be written is exit 3, --record creates its folder and refuses to be
// a report of the same run, every subcommand reads an option before its positional alike, and
// every numeric option refuses what is outside its range (exit 2).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/core/atomic_file.h"
#include "lib/core/error.h"
#include "lib/core/seeded_random.h"
#include "lib/tensorio/npy.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

// A small gemm audit (well under a second) whose JSON and HTML reports are several KiB.
const char* kScenario = R"(name: contract
op: gemm
dtype: bf16
out_dtype: fp32
shape: {n: 16, k: 64}
seed: 7
requests: [0]
sweep:
  batch: [2, 3]
backends:
  cpu-variant: report
  cpu-invariant: invariant
)";

fs::path write_scenario(const fs::path& dir) {
  write_file(dir / "s.yaml", kScenario);
  return dir / "s.yaml";
}

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) out.push_back(name);
  }
  return out;
}

TEST(OutputContract, AReportSetIsReplacedWholeOrNotAtAll) {
  const auto dir = make_temp_dir("set");
  // The first file fits, the second does not: the set must not be half replaced.
  {
    AtomicFileSet set;
    set.stage(dir / "a.md", "new a", "report");
    EXPECT_THROW(set.stage(dir / "missing" / "b.json", "new b", "report"), Error);
    EXPECT_FALSE(fs::exists(dir / "a.md"));  // nothing committed
  }
  EXPECT_TRUE(temp_files(dir).empty());
  {
    write_file(dir / "a.md", "old a");
    AtomicFileSet staged_only;
    staged_only.stage(dir / "a.md", "new a", "report");
    EXPECT_EQ(temp_files(dir).size(), 1u);
  }  // destroyed without commit: the temporary goes, the old file stays
  EXPECT_TRUE(temp_files(dir).empty());
  EXPECT_EQ(read_file(dir / "a.md"), "old a");

  AtomicFileSet both;
  both.stage(dir / "a.md", "new a", "report");
  both.stage(dir / "b.json", "new b", "report");
  EXPECT_EQ(read_file(dir / "a.md"), "old a");  // staged, not yet visible
  const auto written = both.commit();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(read_file(dir / "a.md"), "new a");
  EXPECT_EQ(read_file(dir / "b.json"), "new b");
  EXPECT_TRUE(temp_files(dir).empty());
}

// Past `ulimit -f` a write fails with EFBIG (SIGXFSZ is ignored): exit 3, the earlier reports
// intact, no temporary left behind.
TEST(OutputContract, FileSizeLimitIsARuntimeFailureThatKeepsTheOldReports) {
  const auto dir = make_temp_dir("fsize");
  const fs::path s = write_scenario(dir);
  const fs::path reports = dir / "reports";
  fs::create_directories(reports);
  for (const char* ext : {".md", ".json", ".html"})
    write_file(reports / ("contract" + std::string(ext)), "old");
  // /bin/sh's ulimit -f counts 512-byte blocks: 4 KiB admits the Markdown report, not the HTML.
  const CommandResult r =
      run_nvdet_env("ulimit -f 8 &&", "audit " + s.string() + " --quiet --report-dir " +
                                          reports.string() + " --format md,json,html");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot write report"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("too large"), std::string::npos) << r.err;  // strerror(EFBIG)
  for (const char* ext : {".md", ".json", ".html"}) {
    EXPECT_EQ(read_file(reports / ("contract" + std::string(ext))), "old") << ext;
  }
  EXPECT_TRUE(temp_files(reports).empty());

  // The same in-process, where the signal would otherwise kill the test.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    install_interrupt_cleanup();
    rlimit limit{1024, 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    int code = 0;
    try {
      write_file_atomic(dir / "big.bin", std::string(4096, 'x'), "report");
    } catch (const Error& e) {
      code = static_cast<int>(e.code());
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_FALSE(fs::exists(dir / "big.bin"));
  EXPECT_TRUE(temp_files(dir).empty());
}

TEST(OutputContract, AFullStdoutIsExitThree) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const auto dir = make_temp_dir("full");
  const fs::path s = write_scenario(dir);
  // Two seeded fp32 tensors that differ: diff has a JSON result to print.
  for (const char* name : {"a.npy", "b.npy"}) {
    AnyTensor t;
    t.type = ElemType::kF32;
    t.shape = {64};
    std::vector<float> v(64);
    const uint64_t seed = name[0] == 'a' ? 11 : 12;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<float>(splitmix64(seed * 1000 + i) >> 40) / float(1 << 24) - 0.5f;
    }
    t.bytes.resize(v.size() * sizeof(float));
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    write_npy(dir / name, t);
  }
  const std::string npy_a = (dir / "a.npy").string(), npy_b = (dir / "b.npy").string();
  for (const std::string& cmd : {"audit " + s.string(), std::string("list"),
                                 "diff " + npy_a + " " + npy_b + " --format json",
                                 "diff " + s.string() + " " + s.string() + " --format json"}) {
    // Through the shell: run_nvdet's own redirection would come after this one.
    const std::string line =
        nvdet_binary().string() + " " + cmd + " >/dev/full 2>" + (dir / "err").string();
    const int status = std::system(line.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << cmd;
    if (cmd.find(".yaml " + s.string()) != std::string::npos) {
      // A YAML file is no tensor: bad input first, and its exit code is kept.
      EXPECT_EQ(WEXITSTATUS(status), 2) << cmd << read_file(dir / "err");
      continue;
    }
    EXPECT_EQ(WEXITSTATUS(status), 3) << cmd << read_file(dir / "err");
    EXPECT_NE(read_file(dir / "err").find("standard output"), std::string::npos) << cmd;
  }
}

TEST(OutputContract, RecordCreatesItsFolderAndIsNeverAReportOfTheRun) {
  const auto dir = make_temp_dir("record");
  const fs::path s = write_scenario(dir);
  const fs::path manifest = dir / "golden" / "deep" / "m.json";
  const CommandResult ok =
      run_nvdet("audit " + s.string() + " --quiet --record " + manifest.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(fs::is_regular_file(manifest));

  const fs::path reports = dir / "reports";
  write_file(reports / "contract.json", "old report");
  for (const std::string& target : {(reports / "contract.json").string(),
                                    (reports / ".." / "reports" / "contract.json").string()}) {
    const CommandResult clash = run_nvdet("audit " + s.string() + " --quiet --report-dir " +
                                          reports.string() + " --record " + target);
    EXPECT_EQ(clash.exit_code, 2) << clash.out << clash.err;
    EXPECT_NE(clash.err.find("is also a report of this run"), std::string::npos) << clash.err;
  }
  EXPECT_EQ(read_file(reports / "contract.json"), "old report");
}

// An option with a list value before the positional: every subcommand reads it the same way.
TEST(OutputContract, AnOptionBeforeThePositionalParsesAlikeEverywhere) {
  const auto dir = make_temp_dir("order");
  const fs::path s = write_scenario(dir);
  const CommandResult audit =
      run_nvdet("audit --backends cpu-invariant " + s.string() + " --quiet");
  EXPECT_EQ(audit.exit_code, 0) << audit.out << audit.err;
  EXPECT_NE(audit.out.find("contract: audit PASSED"), std::string::npos) << audit.out;
  const CommandResult listed =
      run_nvdet("audit --backends cpu-invariant,cpu-reference --backends cpu-variant " +
                s.string() + " --list-contexts");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  const CommandResult bench = run_nvdet("bench --backends cpu-variant,cpu-invariant " + s.string() +
                                        " --baseline cpu-variant --reps 1 --warmup 0");
  EXPECT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  const CommandResult bisect = run_nvdet("bisect --context batch=2 " + s.string());
  // The scenario is read (and refused as not a model scenario), not taken for a --context value.
  EXPECT_EQ(bisect.exit_code, 2) << bisect.err;
  EXPECT_EQ(bisect.err.find("KEY=VALUE"), std::string::npos) << bisect.err;
  EXPECT_EQ(bisect.err.find("required"), std::string::npos) << bisect.err;
  const CommandResult report = run_nvdet("report --format md " + (dir / "missing.json").string() +
                                         " --report-dir " + (dir / "out").string());
  EXPECT_EQ(report.exit_code, 2) << report.err;
  EXPECT_EQ(report.err.find("required"), std::string::npos) << report.err;
}

TEST(OutputContract, NumericOptionsOutsideTheirRangeAreRefused) {
  const auto dir = make_temp_dir("numbers");
  const fs::path s = write_scenario(dir);
  const std::string audit = "audit " + s.string() + " --list-contexts --max-contexts ";
  for (const std::string& cmd :
       {audit + "-1", audit + "0", audit + "18446744073709551616", audit + "1e3", audit + "5x",
        "bisect " + s.string() + " --request -5", "bisect " + s.string() + " --request 1.5",
        "bench " + s.string() + " --reps 0", "bench " + s.string() + " --warmup -1",
        "bench " + s.string() + " --reps 99999999999",
        "diff " + s.string() + " " + s.string() + " --atol -1",
        "diff " + s.string() + " " + s.string() + " --atol nan"}) {
    const CommandResult r = run_nvdet(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("is not a"), std::string::npos) << cmd << "\n" << r.err;
  }
  const CommandResult in_range = run_nvdet(audit + "2");
  EXPECT_EQ(in_range.exit_code, 0) << in_range.err;
  const CommandResult too_few = run_nvdet(audit + "1");
  EXPECT_EQ(too_few.exit_code, 2) << too_few.err;
  EXPECT_NE(too_few.err.find("--max-contexts"), std::string::npos) << too_few.err;
}

}  // namespace
}  // namespace nvdet::testing
