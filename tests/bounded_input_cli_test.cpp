// Inputs that are not regular files, through the real binary and under a time limit (a
// regression here would block or read forever, so every run is bounded by `timeout`): FIFOs,
// /dev/zero behind a symlink and /proc/self/environ as scenario, prompts file, checkpoint
// config.json, tensor file and manifest. Each is exit 2 with one sentence, at once, and nothing of
// the environment reaches stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/test_support.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;
using testing::make_temp_dir;
using testing::read_file;
using testing::write_file;

struct Bounded {
  int exit_code = -1;
  std::string err;
  double seconds = 0;
};

// `nvdet ARGS` killed after 20 s (exit 124 then): a hang fails the test instead of stalling CI.
Bounded run_bounded(const std::string& args, const std::string& env = "") {
  const fs::path dir = make_temp_dir("bounded-cmd");
  const std::string cmd = env + " timeout -k 5 20 " + testing::nvdet_binary().string() + " " +
                          args + " >/dev/null 2>" + (dir / "err").string() + " </dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  Bounded r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(dir / "err");
  fs::remove_all(dir);
  return r;
}

void expect_refused(const Bounded& r, const std::string& expected, const std::string& label) {
  EXPECT_EQ(r.exit_code, 2) << label << ": " << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << label << ": " << r.err;
  EXPECT_LT(r.seconds, 10.0) << label;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << label << ": " << r.err;
}

const char* kModelScenario = R"(name: bounded
op: model
dtype: bf16
model:
  hidden: 64
  layers: 1
  heads: 2
  kv_heads: 1
  intermediate: 128
  vocab: 64
  max_new_tokens: 2
  prompts_file: prompts.txt
seed: 1
backends:
  cpu-invariant: invariant
)";

TEST(BoundedInputCli, FifosAreRefusedNotWaitedOn) {
  const fs::path dir = make_temp_dir("bounded-fifo");
  ASSERT_EQ(mkfifo((dir / "s.yaml").c_str(), 0600), 0);
  expect_refused(run_bounded("audit " + (dir / "s.yaml").string()),
                 "is not a regular file (it is a FIFO)", "scenario");

  write_file(dir / "m/s.yaml", kModelScenario);
  ASSERT_EQ(mkfifo((dir / "m/prompts.txt").c_str(), 0600), 0);
  expect_refused(run_bounded("audit " + (dir / "m/s.yaml").string()),
                 "prompts file '" + (dir / "m/prompts.txt").string() +
                     "' is not a regular file (it is a FIFO)",
                 "prompts file");

  ASSERT_EQ(mkfifo((dir / "t.npy").c_str(), 0600), 0);
  expect_refused(run_bounded("diff " + (dir / "t.npy").string() + " " + (dir / "t.npy").string()),
                 "is not a regular file (it is a FIFO)", "npy");
  ASSERT_EQ(mkfifo((dir / "t.safetensors").c_str(), 0600), 0);
  expect_refused(run_bounded("diff " + (dir / "t.safetensors").string() + " " +
                             (dir / "t.safetensors").string()),
                 "is not a regular file (it is a FIFO)", "safetensors");

  ASSERT_EQ(mkfifo((dir / "manifest.json").c_str(), 0600), 0);
  write_file(dir / "g/s.yaml",
             "name: g\nop: gemm\ndtype: fp32\nshape: {n: 8, k: 8}\nseed: 1\n"
             "backends: {cpu-invariant: invariant}\n");
  expect_refused(run_bounded("audit " + (dir / "g/s.yaml").string() + " --verify " +
                             (dir / "manifest.json").string()),
                 "is not a regular file (it is a FIFO)", "manifest");

  fs::create_directories(dir / "ckpt");
  ASSERT_EQ(mkfifo((dir / "ckpt/config.json").c_str(), 0600), 0);
  write_file(dir / "c/s.yaml",
             "name: c\nop: model\ndtype: bf16\nmodel: {checkpoint: ../ckpt, prompts: [[1, 2]], "
             "max_new_tokens: 2}\nseed: 1\nbackends: {cpu-invariant: invariant}\n");
  expect_refused(run_bounded("audit " + (dir / "c/s.yaml").string()),
                 "is not a regular file (it is a FIFO)", "checkpoint config");
  fs::remove_all(dir);
}

TEST(BoundedInputCli, EndlessAndProcFilesAreRefused) {
  const fs::path dir = make_temp_dir("bounded-dev");
  write_file(dir / "m/s.yaml", kModelScenario);
  fs::create_symlink("/dev/zero", dir / "m/prompts.txt");
  expect_refused(run_bounded("audit " + (dir / "m/s.yaml").string()),
                 "is not a regular file (it is a character device)", "prompts file /dev/zero");

  fs::create_directories(dir / "ckpt");
  fs::create_symlink("/dev/zero", dir / "ckpt/config.json");
  write_file(dir / "c/s.yaml",
             "name: c\nop: model\ndtype: bf16\nmodel: {checkpoint: ../ckpt, prompts: [[1, 2]], "
             "max_new_tokens: 2}\nseed: 1\nbackends: {cpu-invariant: invariant}\n");
  expect_refused(run_bounded("audit " + (dir / "c/s.yaml").string()),
                 "is not a regular file (it is a character device)", "config.json /dev/zero");

  // /proc/self/environ says it is 0 bytes long and then yields the environment.
  write_file(dir / "p/s.yaml", std::string(kModelScenario)
                                   .replace(std::string(kModelScenario).find("prompts.txt"), 11,
                                            "/proc/self/environ"));
  const Bounded environ = run_bounded("audit " + (dir / "p/s.yaml").string(),
                                      "NVDET_PROBE_SECRET=hunter2-do-not-print");
  expect_refused(environ, "is a special file whose size is not known in advance", "environ");
  EXPECT_EQ(environ.err.find("hunter2"), std::string::npos) << environ.err;
  EXPECT_EQ(environ.err.find("NVDET_PROBE_SECRET"), std::string::npos) << environ.err;
  fs::remove_all(dir);
}

TEST(BoundedInputCli, HostileScenarioTextExitsTwoAtOnce) {
  for (const char* name : {"comma.yaml", "comma-word.yaml"}) {
    const fs::path path = testing::source_dir() / "tests/inputs/hostile" / name;
    expect_refused(run_bounded("audit " + path.string()), ":1:1: ',' cannot start a value", name);
  }
}

}  // namespace
}  // namespace nvdet
