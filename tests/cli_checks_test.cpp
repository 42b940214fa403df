// The command line checks before it runs and never clobbers what is not its own: every scenario
// is validated and every output target checked before the first context runs; device nodes,
// FIFOs and folders are never replaced; interrupted runs leave no temporary file; a failed
// manifest verification fails every report format; CI conveniences (step summary, annotations,
// progress lines, --list-contexts, CSV bench tables) do what they say.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "lib/core/atomic_file.h"
#include "lib/core/error.h"
#include "lib/core/temporary_files.h"
#include "tests/spawn_nvdet.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

std::string scenario(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

bool node_is_fifo(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

std::vector<std::string> hidden_temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) out.push_back(name);
  }
  return out;
}

// A copy of the quickstart under another file name, optionally renamed.
fs::path quickstart_copy(const fs::path& dir, const std::string& file, const std::string& name) {
  std::string text = read_file(scenario("quickstart.yaml"));
  const size_t at = text.find("name: quickstart");
  if (at != std::string::npos) text.replace(at, 16, "name: " + name);
  write_file(dir / file, text);
  return dir / file;
}

TEST(CliChecks, EveryScenarioIsValidatedBeforeTheFirstRuns) {
  const auto dir = make_temp_dir("preflight");
  write_file(dir / "bad.yaml",
             "name: bad\nop: gemm\ndtype: bf16\nshape: {n: 8, k: 8}\nseed: 1\n"
             "backends:\n  cpu-invarient: invariant\n");
  const CommandResult r =
      run_nvdet("audit " + scenario("quickstart.yaml") + " " + (dir / "bad.yaml").string() +
                " --report-dir " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("bad.yaml:7:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'cpu-invariant'?"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // the first scenario did not run
  EXPECT_FALSE(fs::exists(dir / "out" / "quickstart.md"));
}

TEST(CliChecks, DuplicateScenarioNamesAreRefused) {
  const auto dir = make_temp_dir("dupnames");
  const fs::path copy = quickstart_copy(dir, "copy.yaml", "quickstart");
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " " + copy.string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("two scenarios are named 'quickstart'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(CliChecks, FormatWithoutReportDirIsRefused) {
  CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " --format html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format needs --report-dir"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = run_nvdet("bench " + scenario("quickstart.yaml") + " --format csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format needs --report-dir"), std::string::npos) << r.err;
}

TEST(CliChecks, DidYouMeanForBackendsAndCommands) {
  CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " --backends cpu-variantt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown backend 'cpu-variantt' (did you mean 'cpu-variant'?)"),
            std::string::npos)
      << r.err;
  r = run_nvdet("audti " + scenario("quickstart.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'audti' (did you mean 'audit'?)"), std::string::npos)
      << r.err;
  r = run_nvdet("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate' (commands: "), std::string::npos) << r.err;
}

// Output targets of the wrong kind are refused with exit 2 before anything runs, and left as
// they were.
TEST(CliChecks, OutputTargetsOfTheWrongKindAreRefusedEarly) {
  const auto dir = make_temp_dir("targets");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  write_file(dir / "plain-file", "keep me\n");
  fs::create_directories(dir / "reports" / "quickstart.md");  // a folder where a report goes

  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--record " + (dir / "fifo").string(), "it is a FIFO, not a regular file"},
      {"--record " + dir.string(), "it is a folder, not a regular file"},
      {"--report-dir " + (dir / "plain-file").string(),
       "cannot write report '" + (dir / "plain-file").string() + "'"},
      {"--report-dir " + (dir / "reports").string(), "it is a folder, not a regular file"},
      {"--report-dir " + (dir / "plain-file" / "sub").string(), "cannot write report"},
      {"--dump " + (dir / "plain-file").string(), "cannot write dump"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;  // nothing ran
  }
  EXPECT_TRUE(node_is_fifo(dir / "fifo"));
  EXPECT_EQ(read_file(dir / "plain-file"), "keep me\n");
  EXPECT_TRUE(fs::is_directory(dir / "reports" / "quickstart.md"));
}

TEST(CliChecks, ReadOnlyReportFolderIsRefusedEarly) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write into a read-only folder";
  const auto dir = make_temp_dir("readonly");
  fs::create_directories(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  const CommandResult r =
      run_nvdet("audit " + scenario("quickstart.yaml") + " --report-dir " + (dir / "ro").string());
  fs::permissions(dir / "ro", fs::perms::owner_all);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(AtomicFileTargets, NeverReplacesANodeOnlyALink) {
  const auto dir = make_temp_dir("atomic-kinds");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  try {
    write_file_atomic(dir / "fifo", "x", "report");
    ADD_FAILURE() << "a FIFO was replaced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(node_is_fifo(dir / "fifo"));
  EXPECT_TRUE(hidden_temp_files(dir).empty());
  EXPECT_THROW(check_output_file(dir / "fifo", "report"), Error);
  EXPECT_THROW(check_output_file(dir, "report"), Error);
  // A link is replaced as a link; its target keeps its content.
  write_file(dir / "target", "target\n");
  fs::create_symlink(dir / "target", dir / "link");
  check_output_file(dir / "link", "report");
  write_file_atomic(dir / "link", "new\n", "report");
  EXPECT_FALSE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(read_file(dir / "link"), "new\n");
  EXPECT_EQ(read_file(dir / "target"), "target\n");
  // Reading /dev/null's kind is all a test may do with a real device node.
  EXPECT_THROW(check_output_file("/dev/null", "report"), Error);
}

// A signal that arrives while a report is being written removes its temporary file, and nvdet
// exits with 128 + the signal's number.
TEST(CliSignals, InterruptRemovesTemporaryFiles) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  for (const int sig : {SIGTERM, SIGINT}) {
    const auto dir = make_temp_dir("signal");
    const pid_t pid =
        spawn_nvdet({"audit", scenario("quickstart.yaml"), "--report-dir", dir.string()},
                    {"NVDET_TEST_HOLD_WRITE_MS=20000"});
    ASSERT_GT(pid, 0);
    // Wait for the first report's temporary file to appear (the audit itself takes < 1 s).
    bool seen = false;
    for (int i = 0; i < 600 && !seen; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen = !hidden_temp_files(dir).empty();
    }
    EXPECT_TRUE(seen) << "no temporary file appeared";
    ::kill(pid, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << sig;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_TRUE(hidden_temp_files(dir).empty()) << hidden_temp_files(dir).front();
    EXPECT_FALSE(fs::exists(dir / "quickstart.md"));  // never a partial report
  }
}

// The test hook that holds writes is not honoured by a build without test hooks (a release
// build): the same audit with the variable set finishes at once.
TEST(CliSignals, ReleaseBuildsIgnoreTheWriteHoldHook) {
  if (test_hooks_built()) GTEST_SKIP() << "this build has the test hooks";
  const auto dir = make_temp_dir("no-hook");
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r =
      run_nvdet_env("NVDET_TEST_HOLD_WRITE_MS=20000", "audit " + scenario("quickstart.yaml") +
                                                          " --quiet --report-dir " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
}

// SIGTERM or SIGINT while a synthetic_weights checkpoint is being written (GBs for the 8B-shaped
// scenarios) removes the temporary checkpoint folder with everything in it, not only the
// temporary file of the write in progress.
TEST(CliSignals, InterruptRemovesTheSyntheticCheckpointFolder) {
  if (!test_hooks_built()) GTEST_SKIP() << "needs a build with -DNVDET_TEST_HOOKS=ON";
  for (const int sig : {SIGTERM, SIGINT}) {
    const auto dir = make_temp_dir("signal-synthetic");
    const auto tmp = dir / "tmp";
    fs::create_directories(tmp);
    write_file(dir / "s.yaml",
               "name: synthetic-signal\nop: model\ndtype: bf16\nseed: 3\n"
               "model: {checkpoint: " +
                   (source_dir() / "tests/fixtures/checkpoints/llama-t5").string() +
                   ", synthetic_weights: true, prompt_len: 4, max_new_tokens: 2}\n"
                   "backends: {cpu-invariant: invariant}\n");
    const pid_t pid = spawn_nvdet({"audit", (dir / "s.yaml").string(), "--quiet"},
                                  {"NVDET_TEST_HOLD_WRITE_MS=20000", "TMPDIR=" + tmp.string()});
    ASSERT_GT(pid, 0);
    // Wait until the folder holds its config and the safetensors file's temporary.
    bool seen = false;
    for (int i = 0; i < 600 && !seen; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (const auto& d : fs::directory_iterator(tmp))
        seen =
            seen || (fs::exists(d.path() / "config.json") && !hidden_temp_files(d.path()).empty());
    }
    EXPECT_TRUE(seen) << "no synthetic checkpoint appeared";
    ::kill(pid, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << sig;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_TRUE(fs::is_empty(tmp)) << fs::directory_iterator(tmp)->path();
  }
}

// Nothing blocks on a FIFO: nvdet diff sniffs a file without an extension through the
// non-blocking regular-file check (exit 2 at once), and a GITHUB_STEP_SUMMARY that is a FIFO is
// skipped with a warning (no reader: the non-blocking open fails; a reader: it is not a regular
// file) while the audit goes on (`timeout` turns a hang into exit 124).
TEST(CliFifos, DiffAndStepSummaryNeverWaitOnAFifo) {
  const auto dir = make_temp_dir("fifo-hang");
  ASSERT_EQ(::mkfifo((dir / "tensor").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((dir / "summary").c_str(), 0644), 0);
  const CommandResult diff = run_nvdet_env(
      "timeout -k 5 30", "diff " + (dir / "tensor").string() + " " + (dir / "tensor").string());
  EXPECT_EQ(diff.exit_code, 2) << diff.err;
  EXPECT_NE(diff.err.find("is not a regular file (it is a FIFO)"), std::string::npos) << diff.err;
  const CommandResult audit =
      run_nvdet_env("GITHUB_STEP_SUMMARY=" + (dir / "summary").string() + " timeout -k 5 30",
                    "audit " + scenario("quickstart.yaml") + " --quiet");
  EXPECT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_NE(audit.err.find("cannot append to GITHUB_STEP_SUMMARY"), std::string::npos) << audit.err;
}

// --filter over several scenarios applies to the run as a whole: a scenario it matches nothing
// of is named and not run; only when it matches nothing anywhere is the run refused (exit 2),
// naming every scenario.
TEST(CliFilter, FilterOverSeveralScenariosAppliesToTheWholeRun) {
  const auto dir = make_temp_dir("filter-many");
  const CommandResult some =
      run_nvdet("audit " + scenario("quickstart.yaml") + " " + scenario("rmsnorm-cpu.yaml") +
                " --filter '^gemm.batch=17,' --quiet --report-dir " + dir.string());
  EXPECT_EQ(some.exit_code, 0) << some.err;
  EXPECT_NE(some.err.find(
                "--filter '^gemm.batch=17,' matches no context of scenario 'rmsnorm-cpu': not run"),
            std::string::npos)
      << some.err;
  EXPECT_TRUE(fs::exists(dir / "quickstart.json"));
  EXPECT_FALSE(fs::exists(dir / "rmsnorm-cpu.json"));
  const CommandResult none =
      run_nvdet("audit " + scenario("quickstart.yaml") + " " + scenario("rmsnorm-cpu.yaml") +
                " --filter nothing-at-all --quiet");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_EQ(none.err,
            "nvdet: --filter 'nothing-at-all' matches no context of any of the 2 scenarios "
            "('quickstart', 'rmsnorm-cpu')\n");
  // One scenario alone: no match is still an error, with an example id.
  const CommandResult one =
      run_nvdet("audit " + scenario("rmsnorm-cpu.yaml") + " --filter '^gemm' --quiet");
  EXPECT_EQ(one.exit_code, 2) << one.err;
  EXPECT_NE(one.err.find("--filter '^gemm' matches no context (ids look like 'rmsnorm("),
            std::string::npos)
      << one.err;
}

// --verify whose manifest no longer matches: exit 1, and every report says FAIL.
TEST(CliVerify, FailedVerifyFailsEveryReport) {
  const auto dir = make_temp_dir("verify-fail");
  CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " --record " +
                              (dir / "m.json").string() + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = nlohmann::json::parse(read_file(dir / "m.json"));
  auto& contexts = m.at("scenarios").at("quickstart").at("entries").at("cpu-invariant");
  const std::string context = contexts.begin().key();
  auto& entry = contexts.begin().value().at("0").at("0");
  const std::string real = entry.at("hash");
  entry["hash"] = std::string(32, '0');  // the recorded hash no longer matches this build
  write_file(dir / "m.json", m.dump(1));

  r = run_nvdet("audit " + scenario("quickstart.yaml") + " --verify " + (dir / "m.json").string() +
                " --report-dir " + (dir / "out").string() + " --format md,json,junit,html");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(
      r.out.find("audit FAILED: 3 of 3 backends met their expectation, manifest verify FAILED"),
      std::string::npos)
      << r.out;
  const auto j = nlohmann::json::parse(read_file(dir / "out" / "quickstart.json"));
  EXPECT_FALSE(j.at("summary").at("passed").get<bool>());
  EXPECT_FALSE(j.at("summary").at("verify_passed").get<bool>());
  EXPECT_EQ(j.at("verify").at("changes").at(0).at("hash"), real);
  EXPECT_EQ(j.at("verify").at("changes").at(0).at("context"), context);
  EXPECT_EQ(read_file(dir / "out" / "quickstart.md").rfind("# \u2717 FAIL", 0), 0u);
  EXPECT_NE(read_file(dir / "out" / "quickstart.html")
                .find("<title>nvdet audit quickstart: FAIL</title>"),
            std::string::npos);
  const std::string xml = read_file(dir / "out" / "quickstart.junit.xml");
  EXPECT_NE(xml.find("<testsuites name=\"nvdet audit quickstart\" tests=\""), std::string::npos);
  // One case per backend and context: the expectations held, so the backends' suites pass.
  EXPECT_NE(xml.find("<testsuite name=\"quickstart/cpu-reference\" tests=\"20\" failures=\"0\" "
                     "errors=\"0\" skipped=\"0\" time"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"quickstart/verify\" tests=\"3\" failures=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure type=\"manifest-mismatch\""), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "out" / "quickstart.verify.json"));
}

TEST(CliSkip, UnavailableGpuBackendIsSkippedOnlyWhenAsked) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  const auto dir = make_temp_dir("skip");
  CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") +
                              " --backends cpu-invariant,cuda-invariant");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--skip-unavailable"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // refused before anything ran

  r = run_nvdet("audit " + scenario("quickstart.yaml") +
                " --backends cpu-invariant,cuda-invariant --skip-unavailable --report-dir " +
                dir.string() + " --format md,json,junit,html");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  SKIP cuda-invariant"), std::string::npos) << r.out;
  const std::string xml = read_file(dir / "quickstart.junit.xml");
  EXPECT_NE(xml.find("<skipped message=\"needs a GPU"), std::string::npos) << xml;
  const auto j = nlohmann::json::parse(read_file(dir / "quickstart.json"));
  EXPECT_EQ(j.at("summary").at("skipped_backends"), 1);
  EXPECT_NE(read_file(dir / "quickstart.md").find("skipped: needs a GPU"), std::string::npos);
  EXPECT_NE(read_file(dir / "quickstart.html").find("<tr class=\"skipped\">"), std::string::npos);
}

TEST(CliCi, StepSummaryAnnotationsAndProgressLines) {
  const auto dir = make_temp_dir("ci");
  write_file(dir / "summary.md", "earlier step\n");
  CommandResult r =
      run_nvdet_env("GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=" + (dir / "summary.md").string() +
                        " NVDET_PROGRESS_INTERVAL=0",
                    "audit " + scenario("fail-expect-invariant.yaml"));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string summary = read_file(dir / "summary.md");
  EXPECT_EQ(summary.rfind("earlier step\n# \u2717 FAIL: nvdet audit `fail-expect-invariant`", 0),
            0u)
      << summary;
  EXPECT_NE(r.out.find("::error file=" + scenario("fail-expect-invariant.yaml") + ",line="),
            std::string::npos)
      << r.out;
  // Progress goes to stderr only (stdin/stdout are not terminals here), one line per case.
  EXPECT_NE(r.err.find("progress: context 1 of 20, 1 of 80 cases, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("progress: context 20 of 20, 79 of 80 cases, "), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("progress:"), std::string::npos);

  // Without GitHub's variables: no annotation, and the default interval prints no progress for
  // an audit this short.
  r = run_nvdet("audit " + scenario("fail-expect-invariant.yaml"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find("::error"), std::string::npos);
  EXPECT_EQ(r.err.find("progress:"), std::string::npos) << r.err;
}

TEST(CliListContexts, PrintsTheExpandedContextsAndRunsNothing) {
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") +
                                    " --list-contexts --filter 'position=last'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The filter keeps the 10 position=last contexts and the baseline they are compared with.
  EXPECT_EQ(r.out.rfind("quickstart: 11 contexts\n  gemm(batch=2,position=first)\n  "
                        "gemm(batch=2,position=last)\n",
                        0),
            0u)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 12);
}

TEST(BenchCli, CreatesItsReportFolderAndWritesCsvWithSpread) {
  const auto dir = make_temp_dir("bench-dir");
  const fs::path out = dir / "new" / "nested";
  const CommandResult r = run_nvdet("bench " + scenario("quickstart.yaml") +
                                    " --filter 'batch=64,position=first' --reps 3 --report-dir " +
                                    out.string() + " --format md,json,csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("spread us (min-max)"), std::string::npos) << r.out;
  const std::string csv = read_file(out / "bench-quickstart.csv");
  EXPECT_EQ(csv.rfind("scenario,context,batch,position,backend,median_us,min_us,max_us,", 0), 0u)
      << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);  // header + 2 contexts x 3 backends
  EXPECT_NE(csv.find("quickstart,\"gemm(batch=64,position=first)\",64,first,cpu-invariant,"),
            std::string::npos)
      << csv;
  const auto j = nlohmann::json::parse(read_file(out / "bench-quickstart.json"));
  for (const auto& row : j.at("rows")) {
    EXPECT_LE(row.at("min_us").get<double>(), row.at("median_us").get<double>());
    EXPECT_LE(row.at("median_us").get<double>(), row.at("max_us").get<double>());
  }
  const CommandResult typo =
      run_nvdet("bench " + scenario("quickstart.yaml") + " --baseline cpu-varient");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("--baseline 'cpu-varient' (did you mean 'cpu-variant'?)"),
            std::string::npos)
      << typo.err;
  // A bad second scenario is found before the first is timed.
  const CommandResult bad =
      run_nvdet("bench " + scenario("quickstart.yaml") + " " + (dir / "missing.yaml").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
}

// `nvdet report` renders the other formats again from a JSON audit report: the same bytes as the
// audit wrote, and the same exit code.
TEST(ReportCli, RerendersFromTheJsonReport) {
  const auto dir = make_temp_dir("rerender");
  CommandResult r = run_nvdet("audit " + scenario("fail-expect-invariant.yaml") + " --report-dir " +
                              (dir / "a").string() + " --format md,json,junit,html");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  r = run_nvdet("report " + (dir / "a" / "fail-expect-invariant.json").string() + " --report-dir " +
                (dir / "b").string() + " --format md,json,junit,html");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  for (const char* ext : {".md", ".json", ".junit.xml", ".html"}) {
    const std::string name = std::string("fail-expect-invariant") + ext;
    EXPECT_EQ(read_file(dir / "a" / name), read_file(dir / "b" / name)) << name;
  }
  write_file(dir / "not-a-report.json", "{\"schema_version\": 1, \"scenario\": {}}");
  r = run_nvdet("report " + (dir / "not-a-report.json").string() + " --report-dir " +
                (dir / "c").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read audit report"), std::string::npos) << r.err;
}

// `nvdet report` reads its JSON like every input file: a FIFO, a folder or /dev/zero is refused
// with exit 2 and one sentence, never waited on or read without end.
TEST(ReportCli, RefusesAReportThatIsNotARegularFile) {
  const auto dir = make_temp_dir("report-input");
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0644), 0);
  for (const std::string& input :
       {(dir / "fifo.json").string(), dir.string(), std::string("/dev/zero")}) {
    const CommandResult r =
        run_nvdet("report " + input + " --report-dir " + (dir / "out").string());
    EXPECT_EQ(r.exit_code, 2) << input << "\n" << r.err;
    EXPECT_NE(r.err.find("audit report '" + input + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  }
}

TEST(InfoAndListJson, SayTheSameAsTheText) {
  const CommandResult text = run_nvdet("list");
  const CommandResult r = run_nvdet("list --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("ops").size(), 8u);
  EXPECT_EQ(j.at("ops").at(0), "gemm");
  ASSERT_FALSE(j.at("backends").empty());
  bool saw_gpu = false, saw_request_axis = false;
  for (const auto& b : j.at("backends")) {
    EXPECT_NE(text.out.find("  " + b.at("name").get<std::string>() + " "), std::string::npos) << b;
    saw_gpu |= b.at("kind") == "gpu";
  }
  for (const auto& a : j.at("axes")) {
    EXPECT_NE(text.out.find("  " + a.at("name").get<std::string>() + " "), std::string::npos) << a;
    if (a.at("name") == "kv_len") saw_request_axis = a.at("defines_request").get<bool>();
  }
  EXPECT_TRUE(saw_gpu);
  EXPECT_TRUE(saw_request_axis);

  const CommandResult info = run_nvdet("info --format json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto ij = nlohmann::json::parse(info.out);
  EXPECT_EQ(ij.at("backends").size(), j.at("backends").size());
  EXPECT_NE(run_nvdet("info").out.find("host: " + ij.at("host").get<std::string>()),
            std::string::npos);
  EXPECT_EQ(ij.at("gpus").empty(), !gpu_available());
  EXPECT_EQ(run_nvdet("info --format yaml").exit_code, 2);
  EXPECT_EQ(run_nvdet("list --format yaml").exit_code, 2);
}

}  // namespace
}  // namespace nvdet::testing
