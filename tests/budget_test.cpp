// Budgets before work: the issue's oversized scenarios (a 2^32-context sweep, a 65536 x 65536
// fp32 GEMM, a 2^20-token vocabulary at hidden 4096) are refused after loading and before anything
// is expanded or allocated, with exit 2 (impossible) or 3 (does not fit here) and the numbers;
// the estimates are checked against sizes worked out by hand; the flags parse sizes strictly.
#include "lib/runner/budget.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>

#include "lib/core/error.h"
#include "lib/core/tensor.h"
#include "lib/loader/scenario_loader.h"
#include "lib/scenario/context.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

const char* kHugeSweep = R"(name: huge-sweep
op: gemm
dtype: bf16
shape: {n: 64, k: 64}
seed: 1
sweep:
  batch: {from: 1, to: 65536}
  tokens: {from: 1, to: 65536}
backends:
  cpu-invariant: invariant
)";
const char* kBigGemm = R"(name: big-gemm
op: gemm
dtype: fp32
shape: {n: 65536, k: 65536}
seed: 1
backends:
  cpu-invariant: invariant
)";
const char* kBigVocab = R"(name: big-vocab
op: model
dtype: bf16
model: {hidden: 4096, layers: 1, heads: 32, kv_heads: 8, intermediate: 4096, vocab: 1048576,
        max_new_tokens: 2, prompt_len: 4, num_prompts: 1}
seed: 1
backends:
  cpu-invariant: invariant
)";

ExitCode code_of(const Scenario& s, const Budget& b, bool gpu = false,
                 std::optional<uint64_t> device_free = std::nullopt) {
  try {
    check_budget(s, estimate_scenario(s), b, gpu, device_free);
  } catch (const Error& e) {
    return e.code();
  }
  return ExitCode::kOk;
}

TEST(Budget, EstimatesMatchHandCounts) {
  const Scenario sweep = parse_scenario(kHugeSweep, "s.yaml");
  const ScenarioEstimate e = estimate_scenario(sweep);
  EXPECT_EQ(e.contexts, 4294967296.0);
  EXPECT_EQ(e.contexts_product, "65536 batch x 65536 tokens");

  // 65536 x 65536 fp32 weights alone are 16 GiB; one row of input, output and fp32 workspace;
  // the one context's entry in the context list (about a KiB: every axis's value, swept or not).
  const Scenario gemm = parse_scenario(kBigGemm, "s.yaml");
  const ScenarioEstimate gpu_only = estimate_scenario(gemm, false);
  EXPECT_EQ(gpu_only.contexts, 1.0);
  const double by_hand = 65536.0 * 65536 * 4 + 65536.0 * 4 + 65536.0 * 4 + 65536.0 * 4;
  EXPECT_GE(gpu_only.host_bytes, by_hand);
  EXPECT_LT(gpu_only.host_bytes, by_hand + 2048);
  EXPECT_EQ(gpu_only.device_bytes, by_hand);
  EXPECT_NE(gpu_only.breakdown.find("weights 16.0 GiB"), std::string::npos) << gpu_only.breakdown;
  // A CPU backend adds what it allocates: fp32 copies of A (1 x 65536), of W as panels
  // (65536 x 65536) and cpu-reference's double output row; the device figure does not change.
  const ScenarioEstimate g = estimate_scenario(gemm, true);
  EXPECT_EQ(g.host_bytes - gpu_only.host_bytes,
            (65536.0 + 65536.0 * 65536 + 65536.0) * 4 + 65536.0 * 8);
  EXPECT_EQ(g.device_bytes, by_hand);
  EXPECT_NE(g.breakdown.find("CPU backends' fp32 copies 16.0 GiB"), std::string::npos)
      << g.breakdown;

  // Embedding and LM head: 2 x 2^20 x 4096 bf16 = 16 GiB of the weights, and a CPU backend's
  // fp32 copy of the LM head another 16 GiB.
  const ScenarioEstimate v = estimate_scenario(parse_scenario(kBigVocab, "s.yaml"));
  EXPECT_GT(v.host_bytes, 32.0 * (1ull << 30));
  EXPECT_LT(v.host_bytes, 33.0 * (1ull << 30));
}

TEST(Budget, ExitTwoWhenImpossibleThreeWhenItDoesNotFitHere) {
  const Scenario sweep = parse_scenario(kHugeSweep, "s.yaml");
  EXPECT_EQ(code_of(sweep, Budget{}), ExitCode::kBadInput);
  // Raising the context limit does not take 2^32 contexts past what a run can number.
  EXPECT_EQ(code_of(sweep, Budget{uint64_t{1} << 40, uint64_t{1} << 30, std::nullopt}),
            ExitCode::kBadInput);
  const Scenario gemm = parse_scenario(kBigGemm, "s.yaml");
  EXPECT_EQ(code_of(gemm, Budget{kDefaultMaxContexts, uint64_t{1} << 30, std::nullopt}),
            ExitCode::kRuntime);
  EXPECT_EQ(code_of(gemm, Budget{kDefaultMaxContexts, uint64_t{40} << 30, std::nullopt}),
            ExitCode::kOk);
  // The device budget applies only where a GPU backend runs.
  const Budget roomy{kDefaultMaxContexts, uint64_t{40} << 30, std::nullopt};
  EXPECT_EQ(code_of(gemm, roomy, true, uint64_t{8} << 30), ExitCode::kRuntime);
  EXPECT_EQ(code_of(gemm, roomy, false, uint64_t{8} << 30), ExitCode::kOk);
  EXPECT_EQ(code_of(gemm, roomy, true, uint64_t{20} << 30), ExitCode::kOk);
  // Beyond any machine (2^48 bytes): exit 2 whatever the limits say.
  const Scenario absurd = parse_scenario(
      std::string(kBigGemm).replace(std::string(kBigGemm).find("seed: 1"), 7,
                                    "seed: 1\ntokens: 16777216\nsweep: {batch: [16777216]}"),
      "s.yaml");
  EXPECT_EQ(code_of(absurd, Budget{kDefaultMaxContexts, UINT64_MAX, std::nullopt}),
            ExitCode::kBadInput);
  // The shipped scenarios fit the default context limit.
  for (const auto& f : fs::directory_iterator(testing::source_dir() / "scenarios")) {
    if (f.path().extension() != ".yaml") continue;
    EXPECT_LE(estimate_scenario(load_scenario(f.path().string())).contexts, kDefaultMaxContexts)
        << f.path();
  }
}

// The context list is part of the host budget before it is built: 6.5e7 contexts (the context
// limit raised) take gigabytes of ids and values, refused with the list named in the breakdown.
TEST(Budget, TheContextListCountsBeforeItExists) {
  const Scenario many = parse_scenario(R"(name: many
op: gemm
dtype: bf16
shape: {n: 8, k: 8}
seed: 1
sweep:
  batch: {from: 1, to: 65536}
  tokens: {from: 1, to: 1000}
backends:
  cpu-invariant: invariant
)",
                                       "s.yaml");
  const ScenarioEstimate e = estimate_scenario(many);
  EXPECT_EQ(e.contexts, 65536000.0);
  // At least the Context objects and the (axis, value) pairs of two axes each.
  EXPECT_GT(e.host_bytes,
            e.contexts * (sizeof(Context) + 2 * sizeof(std::pair<std::string, AxisValue>)));
  EXPECT_NE(e.breakdown.find("context list "), std::string::npos) << e.breakdown;
  try {
    check_budget(many, e, Budget{uint64_t{1} << 40, uint64_t{1} << 30, std::nullopt}, false,
                 std::nullopt);
    FAIL() << "not refused";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::kRuntime);
    EXPECT_NE(std::string(err.what()).find("(context list "), std::string::npos) << err.what();
  }
}

// A model scenario says what it will compute (tokens x layers, and attention's quadratic pairs),
// and a prompt long enough to compute for hours is refused before anything runs.
TEST(Budget, ModelWorkIsCountedAndLongPromptsAreRefused) {
  const std::string base = R"(name: long
op: model
dtype: bf16
model: {hidden: 64, layers: 2, heads: 4, kv_heads: 2, intermediate: 128, vocab: 256,
        max_new_tokens: 16, prompt_len: PROMPT, num_prompts: 1}
seed: 1
sweep: {batch: [1, 4]}
backends:
  cpu-invariant: invariant
)";
  const auto with_prompt = [&](int n) {
    std::string t = base;
    t.replace(t.find("PROMPT"), 6, std::to_string(n));
    return parse_scenario(t, "s.yaml");
  };
  const ScenarioEstimate small = estimate_scenario(with_prompt(48));
  // Per context at batch 4: 4 sequences x 64 tokens x 2 layers; 2 contexts.
  EXPECT_EQ(small.token_layers, 2.0 * 4 * 64 * 2);
  EXPECT_EQ(small.attention_pair_layers, 2.0 * 4 * (64.0 * 65 / 2) * 2);
  EXPECT_NE(small.work.find("token-layers"), std::string::npos) << small.work;
  EXPECT_EQ(code_of(with_prompt(48), Budget{}), ExitCode::kOk);
  // 2^20-token prompts: about 1e13 attention pair-layers.
  const Scenario huge = with_prompt(1 << 20);
  try {
    check_budget(huge, estimate_scenario(huge), Budget{}, false, std::nullopt);
    FAIL() << "not refused";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(err.what()).find("scenario 'long' would compute about "),
              std::string::npos)
        << err.what();
    EXPECT_NE(std::string(err.what()).find("shorten the prompts"), std::string::npos) << err.what();
  }
}

// An allocation that fails names itself: a tensor's dtype, shape and size.
TEST(Budget, FailedAllocationsSayWhatAndHowMuch) {
#ifdef NVDET_ASAN
  GTEST_SKIP() << "AddressSanitizer ends the process on an impossible allocation";
#else
  try {
    HostTensor t(DType::kBF16, {int64_t{1} << 30, int64_t{1} << 30});  // 2 EiB
    FAIL() << "allocated";
  } catch (const std::bad_alloc& e) {
    EXPECT_EQ(std::string(e.what()), "a bf16 tensor of shape [1073741824, 1073741824] (2.0 EiB)");
  }
#endif
}

TEST(Budget, ByteSizesParseStrictly) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("64K"), 65536u);
  EXPECT_EQ(parse_byte_size("3G"), uint64_t{3} << 30);
  EXPECT_EQ(parse_byte_size("2T"), uint64_t{2} << 40);
  EXPECT_FALSE(parse_byte_size(""));
  EXPECT_FALSE(parse_byte_size("G"));
  EXPECT_FALSE(parse_byte_size("1.5G"));
  EXPECT_FALSE(parse_byte_size("-1"));
  EXPECT_FALSE(parse_byte_size("99999999999T"));
  EXPECT_EQ(byte_size_text(512), "512 B");
  EXPECT_EQ(byte_size_text(1.5 * (1 << 30)), "1.5 GiB");
}

struct AuditRun {
  int exit_code = -1;
  std::string err;
  double seconds = 0;
};

AuditRun audit(const fs::path& scenario, const std::string& flags) {
  const fs::path dir = testing::make_temp_dir("budget-cmd");
  const std::string cmd = "timeout -k 5 60 " + testing::nvdet_binary().string() + " audit " +
                          scenario.string() + " " + flags + " >/dev/null 2>" +
                          (dir / "err").string() + " </dev/null";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  AuditRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = testing::read_file(dir / "err");
  fs::remove_all(dir);
  return r;
}

TEST(BudgetCli, OversizedScenariosAreRefusedAtOnceWithTheNumbers) {
  const fs::path dir = testing::make_temp_dir("budget");
  testing::write_file(dir / "sweep.yaml", kHugeSweep);
  testing::write_file(dir / "gemm.yaml", kBigGemm);
  testing::write_file(dir / "vocab.yaml", kBigVocab);

  const AuditRun sweep = audit(dir / "sweep.yaml", "");
  EXPECT_EQ(sweep.exit_code, 2) << sweep.err;
  EXPECT_EQ(sweep.err,
            "nvdet: scenario 'huge-sweep' sweeps 4294967296 contexts (65536 batch x 65536 "
            "tokens), more than the limit of 100000; narrow the sweep or raise --max-contexts\n");
  EXPECT_LT(sweep.seconds, 10.0);

  const AuditRun gemm = audit(dir / "gemm.yaml", "--max-host-bytes 1G");
  EXPECT_EQ(gemm.exit_code, 3) << gemm.err;
  EXPECT_NE(gemm.err.find("scenario 'big-gemm' needs about 32.0 GiB of host memory per context "
                          "(inputs 256.0 KiB, weights 16.0 GiB, outputs 256.0 KiB, fp32 workspace "
                          "256.0 KiB, CPU backends' fp32 copies 16.0 GiB), more than the 1.0 GiB "
                          "allowed by --max-host-bytes"),
            std::string::npos)
      << gemm.err;
  EXPECT_LT(gemm.seconds, 10.0);

  const AuditRun vocab = audit(dir / "vocab.yaml", "--max-host-bytes 4G");
  EXPECT_EQ(vocab.exit_code, 3) << vocab.err;
  EXPECT_NE(vocab.err.find("scenario 'big-vocab' needs about 32."), std::string::npos) << vocab.err;
  EXPECT_LT(vocab.seconds, 10.0);

  const AuditRun bad_flag = audit(dir / "gemm.yaml", "--max-host-bytes 12Q");
  EXPECT_EQ(bad_flag.exit_code, 2) << bad_flag.err;
  EXPECT_NE(bad_flag.err.find("--max-host-bytes '12Q' is not a size"), std::string::npos);

  // A scenario well inside its budget runs.
  const AuditRun ok = audit(testing::source_dir() / "scenarios/rmsnorm-cpu.yaml",
                            "--max-host-bytes 1G --max-contexts 1000 --quiet");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nvdet
