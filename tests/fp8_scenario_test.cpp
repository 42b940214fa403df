// FP8 through scenarios (README "FP8"): the shipped CPU scenarios show, scheme by scheme, what
// the issue asks them to show (fp8-gemm-cpu: dynamic_tensor diverges on cpu-invariant and every
// per-row scheme holds; fp8-moe-cpu, the vLLM case: dynamic_tensor diverges on every backend,
// dynamic_token and group_128 hold on cpu-invariant; an FP8 checkpoint decoded the same way);
// every GPU backend and cpu-portable is refused with exit 2 naming the key and the backend; and
// the loader refuses FP8 keys and axes where they do not apply, naming them.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/loader/op_table.h"
#include "lib/loader/scenario_loader.h"
#include "lib/runner/audit.h"
#include "lib/scenario/context.h"
#include "tests/scenario_snippets.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using namespace nvdet::testing;

// For each context group (its request-defining values, here the FP8 scheme) and probed request,
// how many distinct outputs `backend` gave over the group's contexts.
std::map<std::string, size_t> distinct_per_group(const Scenario& s, const std::string& backend) {
  auto workload = make_workload(s);
  auto b = make_backend(backend);
  std::map<std::string, std::set<std::string>> seen;
  for (const Context& c : expand_contexts(s)) {
    for (const RequestOutput& r : workload->run(*b, c, nullptr)) {
      const std::string bytes(reinterpret_cast<const char*>(r.output.data()), r.output.nbytes());
      seen[c.group + " request " + std::to_string(r.request)].insert(bytes);
    }
  }
  std::map<std::string, size_t> out;
  for (const auto& [key, set] : seen) out[key] = set.size();
  return out;
}

bool is_dynamic_tensor(const std::string& group) {
  return group.find("act_scale=dynamic_tensor") != std::string::npos;
}

Scenario shipped(const std::string& name) {
  return load_scenario((source_dir() / "scenarios" / (name + ".yaml")).string());
}

TEST(Fp8Scenarios, GemmDynamicTensorDivergesAndPerRowScalesHold) {
  const Scenario s = shipped("fp8-gemm-cpu");
  for (const char* backend : {"cpu-invariant", "cpu-reference"}) {
    const auto groups = distinct_per_group(s, backend);
    EXPECT_EQ(groups.size(), 16u);  // 4 act_scale x 2 weight_scale x 2 requests
    for (const auto& [group, distinct] : groups) {
      if (is_dynamic_tensor(group)) EXPECT_GT(distinct, 1u) << backend << " " << group;
      else EXPECT_EQ(distinct, 1u) << backend << " " << group;
    }
  }
  // cpu-variant's split follows the batch in every scheme (in some probed request: a sum of FP8
  // products is often exact in fp32, so not every row moves).
  std::map<std::string, size_t> most;
  for (const auto& [group, distinct] : distinct_per_group(s, "cpu-variant")) {
    size_t& m = most[group.substr(0, group.find(" request"))];
    m = std::max(m, distinct);
  }
  EXPECT_EQ(most.size(), 8u);
  for (const auto& [scheme, distinct] : most) EXPECT_GT(distinct, 1u) << "cpu-variant " << scheme;
}

TEST(Fp8Scenarios, MoeOneBatchScaleDivergesOnEveryBackendPerRowScalesHoldOnInvariant) {
  const Scenario s = shipped("fp8-moe-cpu");
  for (const char* backend : {"cpu-reference", "cpu-invariant", "cpu-variant"}) {
    for (const auto& [group, distinct] : distinct_per_group(s, backend)) {
      if (is_dynamic_tensor(group)) EXPECT_GT(distinct, 1u) << backend << " " << group;
      else if (std::string(backend) != "cpu-variant")
        EXPECT_EQ(distinct, 1u) << backend << " " << group;
    }
  }
}

// The FP8 checkpoint of fp8-model-cpu.yaml, shortened (4 tokens, batch 1 and 4) to keep the
// test fast: the same per-scheme outcome on cpu-invariant.
TEST(Fp8Scenarios, Fp8CheckpointDecodesInvariantlyWithPerRowScales) {
  const auto dir = make_temp_dir("fp8-model");
  write_file(dir / "m.yaml",
             "name: fp8-model-short\nop: model\ndtype: bf16\nmodel:\n  checkpoint: " +
                 (source_dir() / "tests/fixtures/checkpoints/qwen3moe-fp8").string() +
                 "\n  prompt_len: 12\n  num_prompts: 4\n  max_new_tokens: 4\nseed: 7\n"
                 "requests: [0]\nsweep:\n  act_scale: [group_128, dynamic_token, dynamic_tensor]\n"
                 "  batch: [1, 4]\nbackends:\n  cpu-invariant: report\n");
  const Scenario s = load_scenario((dir / "m.yaml").string());
  for (const auto& [group, distinct] : distinct_per_group(s, "cpu-invariant")) {
    if (is_dynamic_tensor(group)) EXPECT_GT(distinct, 1u) << group;
    else EXPECT_EQ(distinct, 1u) << group;
  }
}

// Sampler against trainer on the FP8 checkpoint (README "Sampler against trainer"): with
// group_128 every FP8 GEMM's row is the row's own, so the decode's logits and the scoring pass's
// are bitwise equal on cpu-invariant; with dynamic_tensor the scoring pass's scale is a max over
// another set of rows (the whole sequence at once), and parity breaks.
TEST(Fp8Scenarios, Fp8CheckpointSamplerMatchesTrainerOnlyWithPerRowScales) {
  const auto dir = make_temp_dir("fp8-parity");
  for (const std::string act : {"group_128", "dynamic_tensor"}) {
    write_file(dir / "p.yaml",
               "name: fp8-parity\nop: model\ndtype: bf16\nmodel:\n  checkpoint: " +
                   (source_dir() / "tests/fixtures/checkpoints/qwen3moe-fp8").string() +
                   "\n  prompt_len: 8\n  num_prompts: 2\n  max_new_tokens: 4\n"
                   "  score_chunk: whole\nfp8: {act_scale: " +
                   act +
                   "}\nseed: 5\n"
                   "requests: [0]\nsweep:\n  batch: [1, 2]\nbackends:\n"
                   "  cpu-invariant: {expect: report, parity: bitwise}\n");
    const AuditResult r = run_audit(load_scenario((dir / "p.yaml").string()), AuditOptions{});
    EXPECT_EQ(r.summary.passed, act == "group_128") << act;
  }
}

TEST(Fp8Scenarios, EveryBackendThatComputesNoFp8IsRefusedNamingTheKey) {
  const DeviceFacts device = device_facts();
  const Scenario gemm = shipped("fp8-gemm-cpu");
  const Scenario model = shipped("fp8-model-cpu");
  for (const BackendRegistration& r : backend_registry()) {
    const bool computes = r.info.name == "cpu-reference" || r.info.name == "cpu-invariant" ||
                          r.info.name == "cpu-variant";
    for (const Scenario* s : {&gemm, &model}) {
      if (s == &model && r.info.name == "cudnn") continue;  // refused for the model's ops first
      const Support answer = scenario_support(*s, r.info.name, device);
      if (computes) {
        EXPECT_TRUE(answer.ok()) << r.info.name << ": " << answer.reason;
        continue;
      }
      if (r.info.name == "cuda-invariant") {
        // Its FP8 GEMM computes every scheme of both sweeps: at most the device is missing.
        EXPECT_EQ(answer.reason.find("does not compute FP8"), std::string::npos) << answer.reason;
        continue;
      }
      EXPECT_EQ(answer.status, Support::Status::kUnsupportedOp) << r.info.name;
      EXPECT_EQ(answer.reason.rfind("does not compute FP8", 0), 0u) << answer.reason;
      EXPECT_NE(answer.reason.find(s == &gemm ? "asked for by the key 'fp8'"
                                              : "asked for by 'model.checkpoint'"),
                std::string::npos)
          << answer.reason;
    }
  }
}

// cublas's registry answer: the scale pairs cuBLASLt's FP8 GEMM takes (one scale per operand, a
// scale per row of each, 128-wide activation vectors with 128x128 weight blocks), e4m3, gemm and
// the MoE block; a sentence naming the pair for the rest; the other CUDA backends but
// cuda-invariant compute no FP8.
TEST(Fp8Scenarios, CublasComputesTheScalePairsCublasLtTakes) {
  struct Pair {
    Fp8ActScale act;
    Fp8WeightScale weight;
    bool fast_too;
  };
  for (const Pair& p : {Pair{Fp8ActScale::kStatic, Fp8WeightScale::kTensor, true},
                        Pair{Fp8ActScale::kDynamicTensor, Fp8WeightScale::kTensor, true},
                        Pair{Fp8ActScale::kDynamicToken, Fp8WeightScale::kChannel, true},
                        Pair{Fp8ActScale::kGroup128, Fp8WeightScale::kBlock128, false}}) {
    for (const Fp8Accumulation acc : {Fp8Accumulation::kPromoted, Fp8Accumulation::kFast}) {
      Fp8Scheme s;
      s.act_scale = p.act;
      s.weight_scale = p.weight;
      s.accumulation = acc;
      for (const OpKind op : {OpKind::kGemm, OpKind::kMoe}) {
        const std::string answer = backend_fp8_refusal("cublas", op, s);
        if (acc == Fp8Accumulation::kPromoted || p.fast_too) {
          EXPECT_EQ(answer, "") << fp8_scheme_text(s);
        } else {
          EXPECT_CONTAINS(answer,
                          "does not compute FP8 accumulation 'fast' with act_scale "
                          "'group_128' with weight_scale 'block_128x128'");
        }
      }
    }
  }
  const auto refusal = [](Fp8ActScale act, Fp8WeightScale weight, OpKind op) {
    Fp8Scheme t;
    t.act_scale = act;
    t.weight_scale = weight;
    return backend_fp8_refusal("cublas", op, t);
  };
  EXPECT_CONTAINS(refusal(Fp8ActScale::kStatic, Fp8WeightScale::kChannel, OpKind::kGemm),
                  "does not compute FP8 act_scale 'static' with weight_scale 'channel'");
  EXPECT_CONTAINS(refusal(Fp8ActScale::kGroup128, Fp8WeightScale::kTensor, OpKind::kMoe),
                  "does not compute FP8 act_scale 'group_128' with weight_scale 'tensor'");
  EXPECT_CONTAINS(refusal(Fp8ActScale::kDynamicToken, Fp8WeightScale::kBlock128, OpKind::kGemm),
                  "does not compute FP8 act_scale 'dynamic_token' with weight_scale "
                  "'block_128x128'");
  Fp8Scheme e5m2;
  e5m2.format = Fp8Format::kE5M2;
  e5m2.act_scale = Fp8ActScale::kStatic;
  e5m2.weight_scale = Fp8WeightScale::kTensor;
  EXPECT_CONTAINS(backend_fp8_refusal("cublas", OpKind::kGemm, e5m2),
                  "does not compute FP8 format 'e5m2'");
  EXPECT_CONTAINS(backend_fp8_refusal("cublas", OpKind::kModel, Fp8Scheme{}),
                  "does not compute FP8 models");
  for (const char* other : {"cublaslt-nosplit", "cuda-vendor-policy"})
    EXPECT_CONTAINS(backend_fp8_refusal(other, OpKind::kGemm, Fp8Scheme{}),
                    "does not compute FP8: ");
}

// cuda-invariant's registry answer: its wgmma e4m3 GEMM takes every activation and weight scale,
// promoted, for op gemm, the MoE block and FP8 checkpoints (on the host engine); fast only where
// no scale changes along K; not e5m2.
TEST(Fp8Scenarios, CudaInvariantComputesEveryE4m3SchemeButFastWithKGroupScales) {
  for (const std::string& act : fp8_act_scale_words()) {
    for (const std::string& weight : fp8_weight_scale_words()) {
      for (const std::string& acc : fp8_accumulation_words()) {
        Fp8Scheme s;
        s.act_scale = *parse_fp8_act_scale(act);
        s.weight_scale = *parse_fp8_weight_scale(weight);
        s.accumulation = *parse_fp8_accumulation(acc);
        const bool k_groups =
            s.act_scale == Fp8ActScale::kGroup128 || s.weight_scale == Fp8WeightScale::kBlock128;
        const bool computed = !(k_groups && s.accumulation == Fp8Accumulation::kFast);
        for (const OpKind op : {OpKind::kGemm, OpKind::kMoe, OpKind::kModel}) {
          const std::string answer = backend_fp8_refusal("cuda-invariant", op, s);
          if (computed) {
            EXPECT_EQ(answer, "") << fp8_scheme_text(s);
          } else {
            EXPECT_CONTAINS(answer,
                            "does not compute FP8 accumulation 'fast' with scales that "
                            "change along K");
          }
        }
      }
    }
  }
  Fp8Scheme e5m2;
  e5m2.format = Fp8Format::kE5M2;
  EXPECT_CONTAINS(backend_fp8_refusal("cuda-invariant", OpKind::kGemm, e5m2),
                  "does not compute FP8 format 'e5m2'");
}

TEST(Fp8Scenarios, TheCliRefusesAGpuBackendWithExit2) {
  const CommandResult audit = run_nvdet(
      "audit " + (source_dir() / "scenarios/fp8-gemm-cpu.yaml").string() + " --backends cublas");
  EXPECT_EQ(audit.exit_code, 2) << audit.err;
  EXPECT_NE(audit.err.find("backend 'cublas' does not compute FP8"), std::string::npos)
      << audit.err;
  EXPECT_NE(audit.err.find("the key 'fp8' and the sweep axes act_scale, weight_scale"),
            std::string::npos)
      << audit.err;
  const CommandResult fast =
      run_nvdet("audit " + (source_dir() / "scenarios/fp8-moe-cpu.yaml").string() +
                " --backends cpu-invariant --axis accumulation=fast");
  EXPECT_EQ(fast.exit_code, 2) << fast.err;
  EXPECT_NE(fast.err.find("backend 'cpu-invariant' does not compute FP8 accumulation 'fast'"),
            std::string::npos)
      << fast.err;
}

// The loader: each mistake is one sentence naming the key or axis, exit 2.
TEST(Fp8Scenarios, TheLoaderRefusesFp8WhereItDoesNotApply) {
  const std::string head = "name: t\ndtype: bf16\nseed: 1\nbackends: {cpu-invariant: report}\n";
  const std::string gemm = head + "op: gemm\nshape: {n: 8, k: 8}\n";
  const std::string moe =
      head + "op: moe\nshape: {hidden: 8, intermediate: 8, top_k: 1, experts: 2}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "op: rmsnorm\nshape: {d: 8}\nfp8: {format: e4m3}\n",
       "key 'fp8' does not apply to op 'rmsnorm'"},
      {gemm + "fp8: {format: e4m3fn}\n", "'fp8.format' must be one of 'e4m3', 'e5m2'"},
      {gemm + "fp8: {act_scale: per_token}\n", "'fp8.act_scale' must be one of"},
      {gemm + "fp8: {block: 128}\n", "unknown key 'block' in 'fp8'"},
      {gemm + "sweep: {act_scale: [dynamic_token]}\n",
       "sweep axis 'act_scale' sets the FP8 scheme; give the key 'fp8'"},
      {gemm + "fp8: {act_scale: static}\n", "act_scale 'static' needs 'fp8.static_scale'"},
      {gemm + "fp8: {static_scale: 0.1}\n",
       "'fp8.static_scale' is read only with act_scale 'static'"},
      {moe + "fp8: {act_scale: static, static_scale: 0.1}\n",
       "act_scale 'static' applies to op gemm only"},
      {"name: t\ndtype: fp32\nseed: 1\nbackends: {cpu-invariant: report}\nop: gemm\n"
       "shape: {n: 8, k: 8}\ntf32: true\nfp8: {}\n",
       "'tf32' does not apply to FP8 GEMMs"},
      {gemm + "fp8: {}\nsweep: {tp: [1, 2]}\n",
       "sweep axis 'tp' (tensor parallel) is not implemented with 'fp8'"},
      {head + "op: model\nfp8: {weight_scale: channel}\n",
       "'fp8.weight_scale' does not apply to op 'model'"},
      {moe + "fp8: {}\nsweep: {weight_scale: [tensor, bogus]}\n", "'weight_scale' values must be"},
  };
  for (const auto& [yaml, want] : cases) {
    try {
      parse_scenario(yaml, "t.yaml");
      ADD_FAILURE() << "accepted:\n" << yaml;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
          << "got: " << e.what() << "\nwanted: " << want;
    }
  }
}

// A model that is not FP8 takes no FP8 key or axis; an FP8 checkpoint takes no tp or traffic.
TEST(Fp8Scenarios, TheModelWorkloadRefusesFp8ItCannotCompute) {
  const auto dir = make_temp_dir("fp8-model-refuse");
  const std::string fp8_ckpt = (source_dir() / "tests/fixtures/checkpoints/llama-fp8").string();
  const std::string bf16_ckpt = (source_dir() / "tests/fixtures/checkpoints/llama-t5").string();
  const std::string head =
      "name: t\nop: model\ndtype: bf16\nseed: 1\nrequests: [0]\n"
      "backends: {cpu-invariant: report}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "model: {checkpoint: " + bf16_ckpt + ", max_new_tokens: 2}\nfp8: {}\n",
       "the key 'fp8' sets how an FP8 checkpoint's GEMMs quantise, but the model is not FP8"},
      {head + "model: {checkpoint: " + bf16_ckpt +
           ", max_new_tokens: 2}\nsweep: {act_scale: [group_128]}\n",
       "sweep axis 'act_scale' sets how an FP8 checkpoint's GEMMs quantise"},
      {head + "model: {max_new_tokens: 2}\nfp8: {}\n", "but the model is not FP8"},
      {head + "model: {checkpoint: " + fp8_ckpt + ", max_new_tokens: 2}\nsweep: {tp: [1]}\n",
       "sweep axis 'tp' (tensor parallel) is not implemented for FP8 checkpoints"},
  };
  for (const auto& [yaml, want] : cases) {
    write_file(dir / "t.yaml", yaml);
    try {
      make_workload(load_scenario((dir / "t.yaml").string()));
      ADD_FAILURE() << "accepted:\n" << yaml;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
          << "got: " << e.what() << "\nwanted: " << want;
    }
  }
}

}  // namespace
}  // namespace nvdet
