// The CLI end to end on the CPU backends: the quickstart passes with a divergent canary and a
// holding invariant backend; a wrong expectation fails with the first mismatch in every report;
// bad input and missing GPUs give their documented exit codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

std::string scenario(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

TEST(AuditCli, QuickstartPassesAndReportsAreConsistent) {
  const auto dir = make_temp_dir("quickstart");
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " --report-dir " +
                                    dir.string() + " --format md,json,junit");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS cpu-variant"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first mismatch: request"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("audit PASSED"), std::string::npos) << r.out;

  const auto j = nlohmann::json::parse(read_file(dir / "quickstart.json"));
  EXPECT_EQ(j.at("schema_version"), 2);
  EXPECT_EQ(j.at("scenario").at("name"), "quickstart");
  EXPECT_TRUE(j.at("summary").at("passed").get<bool>());
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& b : j.at("backends")) by_name[b.at("name")] = b;
  ASSERT_EQ(by_name.size(), 3u);
  EXPECT_EQ(by_name["cpu-invariant"].at("divergent_contexts"), 0);
  EXPECT_EQ(by_name["cpu-invariant"].at("max_distinct_results"), 1);
  EXPECT_GT(by_name["cpu-variant"].at("divergent_contexts").get<int>(), 0);
  EXPECT_GT(by_name["cpu-variant"].at("max_distinct_results").get<int>(), 1);

  // Every divergence belongs to the variant backend and names a real first mismatch whose two
  // bit patterns differ; the cases' hashes agree with it.
  ASSERT_FALSE(j.at("divergences").empty());
  for (const auto& d : j.at("divergences")) {
    EXPECT_EQ(d.at("backend"), "cpu-variant");
    const auto& f = d.at("first_mismatch");
    EXPECT_NE(f.at("a_bits"), f.at("b_bits"));
    EXPECT_GE(d.at("mismatch_count").get<int>(), 1);
  }
  const auto& d0 = j.at("divergences")[0];
  std::string base_hash, ctx_hash;
  std::map<int, std::string> id_of;  // the context table: index -> id
  for (const auto& x : j.at("contexts")) id_of[x.at("index").get<int>()] = x.at("id");
  for (const auto& c : j.at("cases")) {
    if (c.at("backend") != "cpu-variant" || c.at("repeat") != 0) continue;
    const std::string& id = id_of.at(c.at("context_index").get<int>());
    for (const auto& req : c.at("requests")) {
      if (req.at("request") != d0.at("request")) continue;
      if (id == d0.at("baseline_context")) base_hash = req.at("hash");
      if (id == d0.at("context")) ctx_hash = req.at("hash");
    }
  }
  ASSERT_EQ(base_hash.size(), 32u);
  ASSERT_EQ(ctx_hash.size(), 32u);
  EXPECT_NE(base_hash, ctx_hash);
  EXPECT_TRUE(std::filesystem::exists(dir / "quickstart.md"));
  EXPECT_TRUE(std::filesystem::exists(dir / "quickstart.junit.xml"));
}

TEST(AuditCli, WrongExpectationFailsWithFirstMismatch) {
  const auto dir = make_temp_dir("fail");
  const CommandResult r = run_nvdet("audit " + scenario("fail-expect-invariant.yaml") +
                                    " --report-dir " + dir.string() + " --format md,json");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL cpu-variant"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("audit FAILED"), std::string::npos);
  const auto j = nlohmann::json::parse(read_file(dir / "fail-expect-invariant.json"));
  EXPECT_FALSE(j.at("summary").at("passed").get<bool>());
  const auto& d = j.at("divergences").at(0);
  EXPECT_TRUE(d.contains("token"));
  EXPECT_TRUE(d.at("first_mismatch").contains("coords"));
  const std::string md = read_file(dir / "fail-expect-invariant.md");
  EXPECT_NE(md.find(d.at("first_mismatch").at("a_bits").get<std::string>()), std::string::npos);
}

TEST(AuditCli, FilterAndBackendSelection) {
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") +
                                    " --backends cpu-invariant --filter 'batch=64,'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 contexts x 1 backends"), std::string::npos) << r.out;
}

TEST(AuditCli, BadInputExitsTwoWithOneSentence) {
  const auto dir = make_temp_dir("bad");
  write_file(dir / "s.yaml",
             "name: x\nop: gemm\ndtype: bf16\nshape: {n: 8, k: 8}\nseed: 1\n"
             "backends:\n  cpu-nonexistent: invariant\n");
  CommandResult r = run_nvdet("audit " + (dir / "s.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("s.yaml:7:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown backend 'cpu-nonexistent'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = run_nvdet("audit " + (dir / "missing.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  r = run_nvdet("audit " + scenario("quickstart.yaml") + " --filter '('");
  EXPECT_EQ(r.exit_code, 2);
  r = run_nvdet("audit " + scenario("quickstart.yaml") + " --format pdf");
  EXPECT_EQ(r.exit_code, 2);
  r = run_nvdet("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(AuditCli, GpuBackendWithoutGpuExitsThree) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  const CommandResult r = run_nvdet("audit " + scenario("quickstart.yaml") + " --backends cublas");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("GPU"), std::string::npos) << r.err;
}

TEST(InfoAndList, Work) {
  CommandResult r = run_nvdet("list");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* word :
       {"gemm", "attention_decode", "cpu-invariant", "cuda-invariant", "kv_len", "prefill_chunk"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
  r = run_nvdet("info");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("host:"), std::string::npos);
}

TEST(BenchCli, CpuBenchPrintsRatios) {
  const auto dir = make_temp_dir("bench");
  const CommandResult r =
      run_nvdet("bench " + scenario("quickstart.yaml") +
                " --filter 'batch=64,position=first' --reps 2 --report-dir " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("time vs cpu-variant"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_file(dir / "bench-quickstart.json"));
  EXPECT_EQ(j.at("baseline"), "cpu-variant");
  ASSERT_EQ(j.at("rows").size(),
            6u);  // the baseline context (always kept) and the match, x 3 backends
  for (const auto& row : j.at("rows")) EXPECT_GT(row.at("median_us").get<double>(), 0.0);
}

// FP8 GEMMs are timed like any GEMM: one row per backend and context, the bytes of the codes.
TEST(BenchCli, TimesFp8Gemms) {
  const auto dir = make_temp_dir("bench-fp8");
  const CommandResult r =
      run_nvdet("bench " + scenario("fp8-gemm-cpu.yaml") +
                " --filter 'act_scale=group_128,weight_scale=block_128x128,batch=8,position=first' "
                "--reps 2 --warmup 1 --report-dir " +
                dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(dir / "bench-fp8-gemm-cpu.json"));
  ASSERT_FALSE(j.at("rows").empty());
  for (const auto& row : j.at("rows")) EXPECT_GT(row.at("median_us").get<double>(), 0.0);
  EXPECT_NE(r.out.find("act_scale=group_128"), std::string::npos) << r.out;
}

// An MoE block's bytes count the experts its rows are routed to, not every expert: one token
// with top-4 of 16 experts reads 4 experts' weights (moe-speed-cpu: hidden 1024, width 512, bf16).
TEST(BenchCli, MoeBytesCountTheExpertsTheBatchTouches) {
  const auto dir = make_temp_dir("bench-moe");
  const CommandResult r =
      run_nvdet("bench " + scenario("moe-speed-cpu.yaml") +
                " --filter 'batch=1,filler_routing=random' --reps 1 --warmup 0 --format json "
                "--report-dir " +
                dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(dir / "bench-moe-speed-cpu.json"));
  const double h = 1024, width = 512, experts = 16, touched = 4;
  const double want = 2 * (h + experts * h + touched * 3 * width * h) + 2 * h;
  ASSERT_FALSE(j.at("rows").empty());
  for (const auto& row : j.at("rows")) {
    const double bytes =
        row.at("gbps").get<double>() * 1e9 * row.at("median_us").get<double>() * 1e-6;
    EXPECT_NEAR(bytes / want, 1.0, 1e-9) << row.dump();
  }
}

// --format of bench: names split at commas, spaces around them trimmed, duplicates and empty
// names dropped; an unknown name is exit 2, naming it.
TEST(BenchCli, FormatListIsTrimmedAndChecked) {
  const auto dir = make_temp_dir("bench-formats");
  CommandResult r = run_nvdet("bench " + scenario("quickstart.yaml") +
                              " --filter 'batch=64,position=first' --reps 1 --report-dir " +
                              dir.string() + " --format ' csv ,md,,csv'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "bench-quickstart.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "bench-quickstart.md"));
  EXPECT_FALSE(std::filesystem::exists(dir / "bench-quickstart.json"));
  r = run_nvdet("bench " + scenario("quickstart.yaml") + " --report-dir " + dir.string() +
                " --format md,pdf");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown bench format 'pdf'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nvdet::testing

namespace nvdet::testing {
namespace {

// Model scenarios: the report says where completions part and which op's bits parted first.
TEST(AuditCli, ModelAuditNamesTheTokenFlipAndTheFirstOp) {
  const auto dir = make_temp_dir("model");
  const CommandResult r = run_nvdet("audit " + scenario("model-cpu.yaml") + " --report-dir " +
                                    dir.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("first token flip: request"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_file(dir / "model-cpu.json"));
  for (const auto& b : j.at("backends")) {
    if (b.at("name") == "cpu-variant") EXPECT_GE(b.at("max_distinct_completions").get<int>(), 2);
    if (b.at("name") == "cpu-invariant") EXPECT_EQ(b.at("max_distinct_completions").get<int>(), 1);
  }
  int flips = 0;
  for (const auto& d : j.at("divergences")) {
    ASSERT_TRUE(d.contains("first_op")) << d.dump();
    EXPECT_FALSE(d.at("first_op").at("op").get<std::string>().empty());
    if (!d.contains("completion")) continue;
    ++flips;
    const auto& c = d.at("completion");
    EXPECT_NE(c.at("baseline_token"), c.at("token"));
    // At the flip the baseline preferred its own token: its logit is the larger of the two.
    EXPECT_GE(c.at("baseline_logit_of_baseline_token").get<double>(),
              c.at("baseline_logit_of_token").get<double>());
  }
  EXPECT_GE(flips, 1);
}

}  // namespace
}  // namespace nvdet::testing
