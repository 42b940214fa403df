// op moe on the CPU backends, through the scenario loader and the workload as an audit runs
// them: every backend against cpu-reference (double) within a stated tolerance, cpu-invariant and
// cpu-portable bitwise invariant across batch, position and filler_routing, cpu-variant not,
// cpu-portable equal to an independent recomputation, and the notes naming each probed expert's
// row count and plan. Tiny seeded shapes (hidden 128, 16 experts of width 256: the shape of a
// fused-MoE table that cpu-variant's plan looks up, lib/ops/fused_moe_plan.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <set>

#include "kernels/silu_mul.cuh"
#include "lib/backend/backend.h"
#include "lib/loader/op_table.h"
#include "lib/loader/scenario_loader.h"
#include "lib/ops/moe_routing.h"
#include "lib/scenario/context.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using namespace nvdet::testing;

Scenario moe_scenario(const std::string& dtype, const std::string& sweep,
                      const std::string& extra = "") {
  const auto dir = make_temp_dir("moe");
  const auto path = dir / "moe.yaml";
  write_file(path, "name: moe-test\nop: moe\ndtype: " + dtype +
                       "\nout_dtype: fp32\nshape: {hidden: 128, intermediate: 256, experts: 16, "
                       "top_k: 2}\ntokens: 2\nseed: 23\nrequests: [3]\n" +
                       extra + "sweep:\n" + sweep + "backends:\n  cpu-invariant: invariant\n");
  return load_scenario(path.string());
}

const std::string kSweep =
    "  batch: [1, 3, 9, 40]\n  position: [first, last]\n  filler_routing: [random, same, hot]\n";

struct MoeRun {
  std::string context;
  HostTensor out;
  RunNotes notes;
};

std::vector<MoeRun> run_all(const Scenario& s, const std::string& backend_name) {
  auto workload = make_workload(s);
  auto backend = make_backend(backend_name);
  std::vector<MoeRun> runs;
  for (const Context& c : expand_contexts(s)) {
    RunNotes notes;
    std::vector<RequestOutput> out = workload->run(*backend, c, &notes);
    runs.push_back({c.id, std::move(out.at(0).output), std::move(notes)});
  }
  return runs;
}

bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::equal(a.data(), a.data() + a.nbytes(), b.data());
}

size_t distinct_results(const std::vector<MoeRun>& runs) {
  std::vector<const HostTensor*> seen;
  for (const MoeRun& r : runs) {
    bool known = false;
    for (const HostTensor* t : seen) known = known || same_bits(*t, r.out);
    if (!known) seen.push_back(&r.out);
  }
  return seen.size();
}

// fp32 activations: every backend within 2e-5 of the output's largest magnitude of the double
// reference (fp32 accumulation over K = 128 and 64 of O(1) terms: measured under 1e-6).
TEST(MoeCpu, EveryBackendMatchesTheDoubleReference) {
  const Scenario s = moe_scenario("fp32", kSweep);
  const std::vector<MoeRun> want = run_all(s, "cpu-reference");
  for (const std::string name : {"cpu-invariant", "cpu-variant", "cpu-portable"}) {
    const std::vector<MoeRun> got = run_all(s, name);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0.0;
    for (size_t c = 0; c < got.size(); ++c) {
      double scale = 0.0;
      for (int64_t i = 0; i < want[c].out.numel(); ++i)
        scale = std::max(scale, std::abs(double{want[c].out.get(i)}));
      ASSERT_GT(scale, 0.01) << "the output should not vanish";
      for (int64_t i = 0; i < got[c].out.numel(); ++i) {
        const double diff = std::abs(double{got[c].out.get(i)} - want[c].out.get(i));
        worst = std::max(worst, diff / scale);
        ASSERT_LE(diff, 2e-5 * scale) << name << " " << got[c].context << " element " << i;
      }
    }
    std::cout << "  " << name << ": worst |diff| / scale " << worst << "\n";
  }
}

TEST(MoeCpu, InvariantAndPortableHoldAcrossBatchPositionAndRouting) {
  for (const std::string dtype : {"bf16", "fp32"}) {
    const Scenario s = moe_scenario(dtype, kSweep);
    for (const std::string name : {"cpu-invariant", "cpu-portable"}) {
      const std::vector<MoeRun> runs = run_all(s, name);
      ASSERT_EQ(runs.size(), 24u);
      for (const MoeRun& r : runs) {
        EXPECT_TRUE(same_bits(r.out, runs[0].out)) << name << " " << dtype << " " << r.context;
      }
    }
  }
}

// In fp32 every bit the fused plan changes reaches the output (in bf16 most of the split-K's
// fp32 differences round away, scenarios/moe-cpu.yaml says more).
TEST(MoeCpu, VariantDivergesWithTheExpertsRowCounts) {
  const std::vector<MoeRun> runs = run_all(moe_scenario("fp32", kSweep), "cpu-variant");
  EXPECT_GE(distinct_results(runs), 2u);
  // The probed experts' plan is in the notes and changes with the batch.
  std::set<std::string> plans;
  for (const MoeRun& r : runs) {
    for (const auto& [key, value] : r.notes)
      if (key.rfind("expert ", 0) == 0) plans.insert(key + ": " + value);
  }
  EXPECT_GE(plans.size(), 4u);
}

// The notes give, for every expert a probed row selects, its row count; the counts follow the
// routing (hot piles every filler onto one expert, same onto the probe's own).
TEST(MoeCpu, NotesGiveEachProbedExpertsRowCount) {
  const Scenario s = moe_scenario("bf16", "  batch: [40]\n  filler_routing: [random, same, hot]\n");
  const std::vector<MoeRun> runs = run_all(s, "cpu-variant");
  ASSERT_EQ(runs.size(), 3u);
  std::vector<int> largest;
  for (const MoeRun& r : runs) {
    int experts_noted = 0, most = 0;
    for (const auto& [key, value] : r.notes) {
      if (key.rfind("expert ", 0) != 0) continue;
      ++experts_noted;
      most = std::max(most, std::stoi(value));
      EXPECT_NE(value.find(" rows"), std::string::npos) << value;
      EXPECT_NE(value.find("split_k"), std::string::npos) << value;
      EXPECT_NE(value.find(" -> "), std::string::npos) << value;  // the padded row count
    }
    EXPECT_NE(r.notes.at("fused_moe").find("BLOCK_SIZE_M"), std::string::npos);
    // 2 probed rows x top-2: between 2 and 4 distinct experts.
    EXPECT_GE(experts_noted, 2) << r.context;
    EXPECT_LE(experts_noted, 4) << r.context;
    EXPECT_NE(r.notes.find("router"), r.notes.end());
    EXPECT_NE(r.notes.find("combine"), r.notes.end());
    largest.push_back(most);
  }
  // 40 requests x 2 rows = 80 rows, 160 assignments over 16 experts: random spreads them (about
  // 10 each); same and hot send (nearly) every filler row to a probed expert.
  EXPECT_LT(largest[0], 50);
  EXPECT_GE(largest[1], 39);
  EXPECT_GE(largest[2], 78);
}

// cpu-portable against a recomputation written here from the definition (sequential fp32 dot
// products, SwiGLU with the portable exp, the combine in ascending rank), bit for bit.
TEST(MoeCpu, PortableEqualsARecomputation) {
  const Scenario s = moe_scenario("bf16", "  batch: [5]\n  filler_routing: [hot]\n");
  auto workload = make_workload(s);
  const Context c = expand_contexts(s).at(0);
  const std::unique_ptr<BenchCase> bc = workload->bench_case(c);
  const MoeArgs& a = std::get<MoeArgs>(bc->args);
  auto backend = make_backend("cpu-portable");
  const HostTensor got = backend->run(a, nullptr);

  namespace pt = kernels::portable;
  const HostTensor& x = *a.x;
  const int64_t rows = x.dim(0), h = x.dim(1), e_count = a.router->dim(0);
  const int64_t inter = a.down[0]->dim(1);
  const auto dot = [](const HostTensor& p, int64_t pr, const HostTensor& q, int64_t qr, int64_t n) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) acc = pt::mul_add(acc, p.get(pr * n + i), q.get(qr * n + i));
    return acc;
  };
  std::vector<float> logits(static_cast<size_t>(rows * e_count));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < e_count; ++e) logits[r * e_count + e] = dot(x, r, *a.router, e, h);
  const MoeRoute route = route_tokens(logits, static_cast<int>(rows), static_cast<int>(e_count),
                                      a.top_k, a.norm_topk_prob);
  int checked = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> acc(static_cast<size_t>(h), 0.0f);
    for (int j = 0; j < a.top_k; ++j) {
      const int32_t e = route.expert[r * a.top_k + j];
      HostTensor act(x.dtype(), {1, inter});
      for (int64_t i = 0; i < inter; ++i) {
        HostTensor gu(x.dtype(), {2});
        gu.set(0, dot(x, r, *a.gate_up[e], i, h));
        gu.set(1, dot(x, r, *a.gate_up[e], inter + i, h));
        act.set(i, pt::silu_mul(gu.get(0), gu.get(1)));
      }
      for (int64_t col = 0; col < h; ++col) {
        const float y = dot(act, 0, *a.down[e], col, inter);
        acc[col] = pt::add(acc[col], pt::mul(route.weight[r * a.top_k + j], y));
      }
    }
    for (int64_t col = 0; col < h; ++col, ++checked) {
      ASSERT_EQ(got.bits(r * h + col), std::bit_cast<uint32_t>(acc[col]))
          << "row " << r << " col " << col;
    }
  }
  EXPECT_EQ(checked, rows * h);
}

// The registry's support tables are in every build: every backend computes moe, and
// cublas-grouped computes nothing else.
TEST(MoeCpu, EveryBackendDeclaresMoeAndTheGroupedOneOnlyMoe) {
  DeviceFacts h200;
  h200.cuda_built = h200.gpu = true;
  h200.cc_major = 9;
  for (const char* name : {"cpu-reference", "cpu-invariant", "cpu-variant", "cpu-portable",
                           "cublas", "cuda-invariant", "cuda-portable", "cublas-grouped"}) {
    for (DType t : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      EXPECT_TRUE(backend_supports(name, OpKind::kMoe, t, h200).ok()) << name;
    }
  }
  const Support gemm = backend_supports("cublas-grouped", OpKind::kGemm, DType::kBF16, h200);
  EXPECT_EQ(gemm.status, Support::Status::kUnsupportedOp);
  EXPECT_NE(gemm.reason.find("it computes moe only"), std::string::npos) << gemm.reason;
}

TEST(MoeCpu, ScenarioKeysAreChecked) {
  const auto dir = make_temp_dir("moe-keys");
  const std::string head =
      "name: m\nop: moe\ndtype: bf16\nseed: 1\nbackends: {cpu-invariant: invariant}\n";
  const auto refused = [&](const std::string& body, const std::string& words) {
    write_file(dir / "s.yaml", head + body);
    try {
      load_scenario((dir / "s.yaml").string());
      make_workload(load_scenario((dir / "s.yaml").string()));
      ADD_FAILURE() << "accepted: " << body;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const std::string shape = "shape: {hidden: 64, intermediate: 32, experts: 4, top_k: 2}\n";
  refused("shape: {hidden: 64, intermediate: 32, experts: 4}\n", "top_k");
  refused("shape: {hidden: 64, intermediate: 32, experts: 4, top_k: 5}\n", "top_k (5)");
  refused(shape + "sweep: {filler_routing: [random, cold]}\n", "'filler_routing' values");
  refused("shape: {hidden: 8, intermediate: 8, experts: 5000, top_k: 2}\n", "at most 4096");
  refused("shape: {hidden: 8, intermediate: 8, experts: 128, top_k: 65}\n", "at most 64");
  refused(shape + "sweep: {filler_routing: {from: 1, to: 2}}\n", "not a range");
  refused(shape + "sweep: {filler_routing: [1]}\n", "'filler_routing' values");
  refused(shape + "norm_topk_prob: maybe\n", "norm_topk_prob");
  write_file(dir / "g.yaml",
             "name: g\nop: gemm\ndtype: bf16\nseed: 1\nshape: {n: 8, k: 8}\n"
             "norm_topk_prob: true\nbackends: {cpu-invariant: invariant}\n");
  EXPECT_THROW(load_scenario((dir / "g.yaml").string()), Error);
  write_file(dir / "ok.yaml", head + shape + "norm_topk_prob: false\n");
  EXPECT_FALSE(load_scenario((dir / "ok.yaml").string()).norm_topk_prob);
}

}  // namespace
}  // namespace nvdet
