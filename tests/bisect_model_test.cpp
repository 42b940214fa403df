// nvdet bisect: a test-only backend plants a one-ULP change in one known (step, layer, op) of one
// context; bisect must name exactly that op, its element and a 1-ulp distance. Identical contexts
// must report no divergence; the shipped CPU scenario must bisect from the command line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/model/decoder.h"
#include "lib/runner/bisect.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

constexpr int32_t kLayers = 2;

Scenario tiny_scenario() {
  return parse_scenario(R"(name: bisect-tiny
op: model
dtype: bf16
model:
  hidden: 64
  layers: 2
  heads: 4
  kv_heads: 2
  intermediate: 128
  vocab: 256
  prompts: [[5, 17, 200, 3, 9, 44], [7, 7, 8], [100, 1]]
  max_new_tokens: 8
seed: 5
requests: [0]
sweep:
  batch: [1, 2, 3]
backends:
  cpu-invariant: invariant
)",
                        "bisect-tiny.yaml");
}

// cpu-invariant, except that in batches of exactly `batch` sequences it adds one ULP to element
// `col` of row 0 of GEMM output number `target` among the GEMMs with m == batch: the prefill's
// LM head (one row per sequence), then per decode step 4 per layer (qkv, o_proj, gate_up, down)
// and the LM head.
class PlantingBackend final : public Backend {
 public:
  PlantingBackend(int64_t batch, int64_t target, int64_t col)
      : inner_(make_backend("cpu-invariant")), batch_(batch), target_(target), col_(col) {}
  const BackendInfo& info() const override { return inner_->info(); }
  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    HostTensor out = inner_->run(args, notes);
    if (const auto* g = std::get_if<GemmArgs>(&args); g && g->a->dim(0) == batch_) {
      if (count_++ == target_) {
        std::byte* p = out.mutable_data() + col_ * 2;
        uint16_t bits;
        std::memcpy(&bits, p, 2);
        bits = static_cast<uint16_t>(bits + 1);  // the next bf16 value up: one ulp
        std::memcpy(p, &bits, 2);
        ++planted;
      }
    }
    return out;
  }
  int planted = 0;

 private:
  std::unique_ptr<Backend> inner_;
  int64_t batch_, target_, col_;
  int64_t count_ = 0;
};

// The index of (decode step, layer, GEMM) among the m == batch GEMMs of a run.
int64_t gemm_index(int32_t step, int32_t layer, int which) {
  return 1 + int64_t{step - 1} * (4 * kLayers + 1) + 4 * layer + which;
}

TEST(Bisect, FindsAPlantedOneUlpChange) {
  const Scenario s = tiny_scenario();
  struct Plant {
    int32_t step, layer;
    int which;  // 0 qkv, 1 o_proj, 2 gate_up, 3 down
    const char* op;
  };
  for (const Plant p : {Plant{3, 1, 3, "down"}, Plant{1, 0, 1, "o_proj"}, Plant{5, 0, 0, "qkv"}}) {
    PlantingBackend planted(2, gemm_index(p.step, p.layer, p.which), 5);
    BisectOptions o;
    o.against = {{"batch", "2"}};
    o.backend_override = &planted;
    const BisectResult r = run_bisect(s, o);
    ASSERT_EQ(planted.planted, 1);
    ASSERT_TRUE(r.diverged);
    ASSERT_TRUE(r.first_op.has_value());
    EXPECT_EQ(r.first_op->step, p.step);
    EXPECT_EQ(r.first_op->layer, p.layer);
    EXPECT_EQ(r.first_op->op, p.op);
    EXPECT_EQ(r.first_op->first_mismatch.coords, (std::vector<int64_t>{0, 5}));
    EXPECT_EQ(r.first_op->first_mismatch.ulp, 1u);
    EXPECT_EQ(r.first_op->mismatch_count, 1);
    EXPECT_EQ(r.context_a, "model(batch=1)");
    EXPECT_EQ(r.context_b, "model(batch=2)");
    // Nothing differs before the planted step; the growth table starts at 0 there.
    for (const BisectStepGrowth& g : r.growth) {
      if (g.step < p.step) {
        for (double v : g.max_abs_diff) EXPECT_EQ(v, 0.0) << "step " << g.step;
      }
    }
    const nlohmann::json j = bisect_to_json(r);
    EXPECT_EQ(j["first_op"]["op"], p.op);
    EXPECT_EQ(j["first_op"]["step"], p.step);
    EXPECT_EQ(j["growth"].size(), 8u);
    EXPECT_NE(render_bisect_text(r).find(std::string("op ") + p.op), std::string::npos);
  }
}

TEST(Bisect, InvariantBackendHasNothingToBisect) {
  const Scenario s = tiny_scenario();
  BisectOptions o;
  o.backend = "cpu-invariant";
  o.against = {{"batch", "3"}};
  BisectResult r = run_bisect(s, o);
  EXPECT_FALSE(r.diverged);
  EXPECT_FALSE(r.first_op.has_value());
  o.against.clear();  // search every context: none differs
  r = run_bisect(s, o);
  EXPECT_FALSE(r.diverged);
  EXPECT_TRUE(r.context_b.empty());
}

TEST(Bisect, BadInput) {
  const Scenario s = tiny_scenario();
  const auto expect_bad = [&](BisectOptions o, const std::string& word) {
    try {
      run_bisect(s, o);
      FAIL() << "expected kBadInput";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  BisectOptions o;
  o.request = 2;
  expect_bad(o, "--request 2");
  o = {};
  o.against = {{"kv_len", "5"}};
  expect_bad(o, "kv_len");
  o = {};
  o.against = {{"batch", "many"}};
  expect_bad(o, "integer");
  o = {};
  o.backend = "no-such-backend";
  expect_bad(o, "no-such-backend");
}

TEST(Bisect, CommandLineOnTheShippedScenario) {
  const std::string scenario =
      (nvdet::testing::source_dir() / "scenarios" / "model-cpu.yaml").string();
  auto r = nvdet::testing::run_nvdet("bisect " + scenario + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["diverged"].get<bool>());
  EXPECT_EQ(j["backend"], "cpu-variant");
  ASSERT_FALSE(j["first_op"].is_null());
  if (!j["first_flip"].is_null())
    EXPECT_LE(j["first_op"]["step"].get<int>(), j["first_flip"]["step"].get<int>());

  r = nvdet::testing::run_nvdet("bisect " + scenario +
                                " --backend cpu-invariant --against batch=8");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("identical"), std::string::npos) << r.out;

  r = nvdet::testing::run_nvdet("bisect " + scenario + " --against batch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("KEY=VALUE"), std::string::npos) << r.err;
}

// Without --backend, bisect takes the first backend whose contexts differ, not merely the first
// not expected to be invariant (here cpu-invariant, expected `report`, which has nothing to
// bisect).
TEST(Bisect, TheDefaultBackendIsTheFirstThatDiverged) {
  const auto dir = nvdet::testing::make_temp_dir("bisect-default");
  std::string yaml =
      nvdet::testing::read_file(nvdet::testing::source_dir() / "scenarios" / "model-cpu.yaml");
  yaml = yaml.substr(0, yaml.find("sweep:")) +
         "sweep:\n  batch: [2, 8]\nbackends:\n  cpu-invariant: report\n  cpu-variant: report\n";
  nvdet::testing::write_file(dir / "m.yaml", yaml);
  const auto r =
      nvdet::testing::run_nvdet("bisect " + (dir / "m.yaml").string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["backend"], "cpu-variant");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nvdet
