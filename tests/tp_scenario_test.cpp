// The tensor-parallel scenarios through the CLI: the K-chunk plan holds on cpu-invariant across tp
// and batch (gemm and model), and a tp the shapes cannot take is refused before anything runs.
#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

std::string scenario(const char* name) { return (source_dir() / "scenarios" / name).string(); }

TEST(TpScenario, KChunkPlanHoldsAcrossTpAndBatch) {
  for (const char* name : {"tp-invariant-cpu.yaml", "model-tp-cpu.yaml"}) {
    const CommandResult r = run_nvdet("audit " + scenario(name) + " --quiet");
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.out << r.err;
  }
}

TEST(TpScenario, NotesNameThePlanOfEveryContext) {
  const auto dir = make_temp_dir("tp-notes");
  const CommandResult r = run_nvdet("audit " + scenario("tp-cpu.yaml") + " --quiet --report-dir " +
                                    dir.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string json = read_file(dir / "tp-cpu.json");
  EXPECT_NE(json.find("\"allreduce\": \"tree, LL, 1 channel (bf16 wire, requested auto)\""),
            std::string::npos);
  EXPECT_NE(json.find("\"allreduce\": \"ring, LL, 4 channels (bf16 wire, requested auto)\""),
            std::string::npos);
  EXPECT_NE(json.find("fixed, K-chunk order"), std::string::npos);
}

TEST(TpScenario, ShapesTheTpCannotShardAreRefusedBeforeRunning) {
  const auto dir = make_temp_dir("tp-refuse");
  write_file(dir / "gemm.yaml",
             "name: g\nop: gemm\ndtype: bf16\nshape: {n: 64, k: 384}\nseed: 1\n"
             "sweep:\n  tp: [1, 5]\nbackends: {cpu-invariant: report}\n");
  CommandResult r = run_nvdet("audit " + (dir / "gemm.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("tp 5 does not divide k = 384 evenly"), std::string::npos) << r.err;

  write_file(
      dir / "model.yaml",
      "name: m\nop: model\ndtype: bf16\nmodel: {hidden: 64, layers: 1, heads: 4, kv_heads: 2,"
      " intermediate: 128, vocab: 64, prompt_len: 3, num_prompts: 1, max_new_tokens: 2}\n"
      "seed: 1\nsweep:\n  tp: [4]\nbackends: {cpu-invariant: report}\n");
  r = run_nvdet("audit " + (dir / "model.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("tp 4 must divide the model's 4 heads, 2 KV heads"), std::string::npos)
      << r.err;

  // The K-chunk plan needs K / tp on cpu-invariant's 256-wide chunks: 384 / 3 = 128 is not.
  write_file(dir / "chunk.yaml",
             "name: c\nop: gemm\ndtype: bf16\nshape: {n: 64, k: 384}\nseed: 1\n"
             "sweep:\n  tp: [3]\n  allreduce: fixed\nbackends: {cpu-invariant: report}\n");
  r = run_nvdet("audit " + (dir / "chunk.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("multiple of its 256-wide K chunks"), std::string::npos) << r.err;

  // Without NCCL in the build the real path is a runtime condition (exit 3), said in one sentence.
  write_file(dir / "nccl.yaml",
             "name: n\nop: gemm\ndtype: bf16\nshape: {n: 64, k: 256}\nseed: 1\n"
             "sweep:\n  tp: [2]\n  allreduce: nccl\nbackends: {cpu-invariant: report}\n");
  r = run_nvdet("audit " + (dir / "nccl.yaml").string());
  if (!gpu_available()) {
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("the 'nccl' all-reduce"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace nvdet::testing
