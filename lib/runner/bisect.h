#pragma once
// nvdet bisect: for one request of a model scenario and two contexts, where did the bits part?
// Both contexts are decoded again with every intermediate tensor of that request kept (its rows
// only), and compared tensor by tensor in trace order: the first (step, layer, op) whose bits
// differ, with its first mismatching element; the first step whose greedy token differs; and the
// largest |difference| per layer per step, which shows how one rounding difference grew.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/compare/compare.h"
#include "lib/runner/audit_result.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

class Backend;

struct BisectOptions {
  int64_t request = -1;  // -1: the scenario's first probed request
  // Context A: the baseline context with these axis values replaced (empty: the baseline).
  std::vector<std::pair<std::string, std::string>> context;
  // Context B: the baseline with these values replaced; empty: the first of the scenario's
  // contexts whose completion differs from A's (else the first whose logits differ).
  std::vector<std::pair<std::string, std::string>> against;
  // "": the first of the scenario's backends (that this machine runs) whose two contexts differ
  // (with `scoring`: whose decode and scoring pass differ); when none does, the first of them.
  std::string backend;
  // Sampler against trainer: B is context A's scoring pass (lib/model/scoring_pass.h) over A's
  // prompt + completion, under A's score_batch and score_chunk; `against` is then refused.
  bool scoring = false;
  // For tests: a backend to use instead of making `backend` from the registry.
  Backend* backend_override = nullptr;
};

// The first tensor whose bits differ.
struct BisectFirstOp {
  int32_t step = 0, layer = 0;
  std::string op;
  std::vector<int64_t> shape;
  std::vector<std::string> coord_names;  // "token", "col" / "token", "head", "dim"
  FirstMismatch first_mismatch;
  double max_abs_diff = 0.0;
  int64_t mismatch_count = 0;
  int64_t numel = 0;
};

// max |diff| of one step: per column of BisectResult::columns.
struct BisectStepGrowth {
  int32_t step = 0;
  std::vector<double> max_abs_diff;  // NaN where the two runs' tensors differ in shape
};

struct BisectResult {
  std::string scenario, backend;
  int64_t request = 0;
  std::string context_a, context_b;
  bool diverged = false;
  int32_t steps = 0, layers = 0;
  std::optional<BisectFirstOp> first_op;
  std::optional<CompletionDivergence> first_flip;  // first step whose token differs
  // With BisectOptions::scoring, B's completion is the scoring pass's argmax at each position
  // (where a greedy trainer would have chosen otherwise).
  std::vector<int32_t> completion_a, completion_b;
  std::vector<std::string> columns;  // "embed", "layer 0", ..., "final_norm", "logits"
  std::vector<BisectStepGrowth> growth;
  // Serving traffic: what shared the step where A and B parted (first_op's step, else the
  // flip's), on each side.
  std::optional<ProbeStep> step_a, step_b;
};

// Throws kBadInput for a scenario that is not a model, an unknown request, axis or backend.
BisectResult run_bisect(const Scenario& s, const BisectOptions& options);

nlohmann::json bisect_to_json(const BisectResult& r);
std::string render_bisect_text(const BisectResult& r);

}  // namespace nvdet
