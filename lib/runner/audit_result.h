#pragma once
// The result model of an audit: everything the report writers, the manifest and the console see.
// Writers never talk to a backend; they read only this.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/compare/compare.h"
#include "lib/core/system_info.h"
#include "lib/hash/hash.h"
#include "lib/runner/verify_result.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

inline constexpr int kReportSchemaVersion = 1;

struct ScenarioSummary {
  std::string name, path, description, op;
  std::string dtype, out_dtype;
  uint64_t seed = 0;
  std::vector<int64_t> requests;
  int32_t repeat = 1;
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;  // name -> values
  std::vector<std::string> coord_names;  // what each output coordinate means: token, col / head, dim
};

// Model scenarios: the first intermediate tensor whose bits differ.
struct OpDivergence {
  int32_t step = 0, layer = 0;
  std::string op;
};

// Model scenarios with a scoring pass: the sampler's distributions (each decode step's logits)
// against the trainer's (the scoring pass's logits at that position) for one request of one case,
// under the names RL frameworks give them. Every metric is computed in double from the two fp32
// logits rows (lib/runner/parity_metrics.h).
struct ParityRecord {
  int64_t tokens = 0;                  // generated tokens compared
  int64_t bitwise_equal_tokens = 0;    // logits rows equal bit for bit
  int64_t first_differing_token = -1;  // -1: every row equal
  double logprob_abs_diff_max = 0.0;   // |log p_sampler(tok) - log p_trainer(tok)|, sampled tokens
  double logprob_abs_diff_mean = 0.0;
  double mismatch_kl_mean = 0.0;       // KL(sampler || trainer) over the whole vocabulary
  double mismatch_kl_max = 0.0;
  double k3_mean = 0.0;                // k3 = r - 1 - log r, r = p_trainer(tok) / p_sampler(tok)
  std::optional<OpDivergence> first_op;  // first (step, layer, op) where decode and scoring parted
};

// A backend's parity over every scored request of every case.
struct ParitySummary {
  int64_t requests = 0;  // (case, request) pairs scored
  int64_t tokens = 0, bitwise_equal_tokens = 0;
  double logprob_abs_diff_max = 0.0, logprob_abs_diff_mean = 0.0;  // mean over all tokens
  double mismatch_kl_mean = 0.0, mismatch_kl_max = 0.0, k3_mean = 0.0;
  // The first request whose rows differ (empty context when none).
  std::string first_context;
  int64_t first_request = 0, first_token = 0;
  std::optional<OpDivergence> first_op;
};

struct RequestRecord {
  int64_t request = 0;
  Hash128 hash;                       // the request's whole output
  std::vector<Hash128> token_hashes;  // one per token (first dimension)
  std::vector<int32_t> completion;    // model scenarios: the generated token ids
  std::optional<ParityRecord> parity;  // model scenarios with a scoring pass
};

// One backend run of one context (one repeat).
struct CaseRecord {
  std::string backend;
  int context_index = 0;
  std::string context_id;
  // The context's group: the values of its request-defining axes ("kv_len=255"; "" when none).
  // Contexts of one group compute the same requests and share one baseline.
  std::string group;
  // The context's value of each swept axis, typed as the scenario gave it (an integer, or a word
  // such as "first"), in the order of the scenario's axes.
  std::vector<std::pair<std::string, AxisValue>> context_values;
  int repeat = 0;
  std::vector<RequestRecord> requests;
  RunNotes notes;
  double seconds = 0.0;
  int64_t generated_tokens = 0;  // model cases: tokens decoded (batch x max_new_tokens), else 0
};

// Model scenarios: where two completions part (token ids per decode step; the output tensor
// holds each step's logits).
struct CompletionDivergence {
  int64_t step = 0;                 // first decode step whose token differs
  int32_t baseline_token = 0, token = 0;
  double baseline_logit_of_baseline_token = 0.0, baseline_logit_of_token = 0.0;
  double logit_of_baseline_token = 0.0, logit_of_token = 0.0;
  double baseline_margin = 0.0;     // baseline's top-1 minus top-2 logit at that step
  // Sampled scenarios (model.sampling): both tokens' probabilities in the baseline's filtered
  // sampling distribution at that step (0 for a token the filter dropped).
  bool sampled = false;
  double baseline_prob_of_baseline_token = 0.0, baseline_prob_of_token = 0.0;
};

// What an output was compared with when it differed.
enum class DivergenceKind {
  kContext,   // the same request in its group's baseline context (repeat 0 of both)
  kRunToRun,  // repeat 0 of the same context
};

// "context", "run-to-run": the words the JSON report and the HTML report's filters use.
inline std::string_view divergence_kind_name(DivergenceKind k) {
  return k == DivergenceKind::kRunToRun ? "run-to-run" : "context";
}
inline std::optional<DivergenceKind> parse_divergence_kind(std::string_view word) {
  if (word == "context") return DivergenceKind::kContext;
  if (word == "run-to-run") return DivergenceKind::kRunToRun;
  return std::nullopt;
}

struct Divergence {
  std::string backend;
  DivergenceKind kind = DivergenceKind::kContext;
  int64_t request = 0;
  int64_t token = 0;  // first token (row) of the request's output that differs
  // The two contexts compared: indices into the sweep (CaseRecord::context_index), which is how
  // writers find their values, and their ids, which the JSON report and manifests carry.
  int baseline_context_index = 0, context_index = 0;
  std::string baseline_context, context;
  int repeat = 0;
  FirstMismatch first_mismatch;
  double max_abs_diff = 0.0;
  double max_rel_diff = 0.0;
  int64_t mismatch_count = 0;
  int64_t mismatched_tokens = 0;
  int64_t tokens = 0;  // tokens in the request's output
  RunNotes baseline_notes, notes;  // why: the algorithms/splits each side used
  std::optional<CompletionDivergence> completion;  // model scenarios, when the tokens differ
  std::optional<OpDivergence> first_op;            // model scenarios
};

struct BackendOutcome {
  std::string name;
  std::string description;
  bool gpu = false;
  Expectation expect = Expectation::kReport;
  bool passed = true;
  int contexts_run = 0;
  int divergent_contexts = 0;      // contexts where some request differs from the baseline
  int run_to_run_divergences = 0;
  int max_distinct_results = 1;    // most distinct outputs of one request over the contexts
  int max_distinct_completions = 0;  // model scenarios: most distinct completions of one request
  std::string verdict;             // one sentence for humans
  std::map<std::string, std::string> stands_for;
  // Not run, on request (`--skip-unavailable`), because this machine cannot run it (a GPU
  // backend without a GPU). A skipped backend neither passes nor fails; every writer says so.
  bool skipped = false;
  std::string skip_reason;
  int scenario_line = 0;  // the line naming the backend in the scenario file (0: not from it)
  ParityExpectation parity_expect = ParityExpectation::kReport;
  std::optional<ParitySummary> parity;  // model scenarios with a scoring pass
};

struct AuditSummary {
  // The audit's verdict, the one the exit code states: every expectation held and, with
  // --verify, the manifest check passed.
  bool passed = true;
  int backends = 0;
  int contexts = 0;
  int cases = 0;
  int divergences = 0;
  int failed_backends = 0;
  int skipped_backends = 0;
  double seconds = 0.0;
};

struct AuditResult {
  int schema_version = kReportSchemaVersion;
  ScenarioSummary scenario;
  SystemInfo system;
  std::vector<BackendOutcome> backends;
  std::vector<CaseRecord> cases;
  std::vector<Divergence> divergences;
  AuditSummary summary;
  // With --verify: the comparison with the golden manifest (lib/manifest). It takes part in
  // summary.passed (see attach_verify in lib/runner/audit.h).
  std::optional<VerifyResult> verify;
};

}  // namespace nvdet
