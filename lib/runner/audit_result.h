#pragma once
// The result model of an audit: everything the report writers, the manifest and the console see.
// Writers never talk to a backend; they read only this.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/compare/compare.h"
#include "lib/core/error.h"
#include "lib/core/system_info.h"
#include "lib/hash/hash.h"
#include "lib/runner/verify_result.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"
#include "lib/workloads/traffic_steps.h"

namespace nvdet {

// 2: the contexts are a table of their own ("contexts": index, id, group, typed values), which
// cases refer to by context_index. nvdet report reads 1 too (each case carried its context).
inline constexpr int kReportSchemaVersion = 2;
inline constexpr int kOldestReadableSchemaVersion = 1;

struct ScenarioSummary {
  std::string name, path, description, op;
  std::string dtype, out_dtype;
  uint64_t seed = 0;
  std::vector<int64_t> requests;
  int32_t repeat = 1;
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;  // name -> values
  std::vector<std::string>
      coord_names;  // what each output coordinate means: token, col / head, dim
  // Model scenarios under serving traffic: the traffic in one line (traffic_summary); "" else.
  std::string traffic;
};

// Model scenarios: the first intermediate tensor whose bits differ.
struct OpDivergence {
  int32_t step = 0, layer = 0;
  std::string op;
};

// The sampler/trainer metrics of one distribution pair, under the names RL frameworks give them
// (means over the generated tokens): the sampled token's |log p_sampler - log p_trainer|,
// KL(sampler || trainer) over the distribution's tokens, and k3 = r - 1 - log r with
// r = p_trainer(tok) / p_sampler(tok), the estimator of that KL from the sampled token alone.
struct ParityMetrics {
  double logprob_abs_diff_max = 0.0, logprob_abs_diff_mean = 0.0;
  double mismatch_kl_mean = 0.0, mismatch_kl_max = 0.0;
  double k3_mean = 0.0;
};

// Model scenarios with a scoring pass: the sampler's distributions (each decode step's logits)
// against the trainer's (the scoring pass's logits at that position) for one request of one case.
// Every metric is computed in double from the two fp32 logits rows (lib/runner/parity_metrics.h),
// twice: at temperature 1 over the whole vocabulary (the inherited fields), and, when the scenario
// samples, at its sampling distribution (`sampling`: both rows divided by the temperature and
// restricted to the tokens the sampler's top_k / top_p kept), which is what RL frameworks compare.
struct ParityRecord : ParityMetrics {
  int64_t tokens = 0;                     // generated tokens compared
  int64_t bitwise_equal_tokens = 0;       // logits rows equal bit for bit
  int64_t first_differing_token = -1;     // -1: every row equal
  std::optional<OpDivergence> first_op;   // first (step, layer, op) where decode and scoring parted
  std::optional<ParityMetrics> sampling;  // at the sampling distribution (sampled scenarios)
  // Per generated token, the sampled token's logprob under the sampler's and the trainer's
  // distribution: at temperature 1 over the vocabulary, and (sampled scenarios) at the sampling
  // distribution.
  std::vector<double> sampler_logprobs, trainer_logprobs;
  std::vector<double> sampling_sampler_logprobs, sampling_trainer_logprobs;
};

// A backend's parity over every scored request of every case (means over all tokens).
struct ParitySummary : ParityMetrics {
  int64_t requests = 0;  // (case, request) pairs scored
  int64_t tokens = 0, bitwise_equal_tokens = 0;
  std::optional<ParityMetrics> sampling;
  // The first request whose rows differ (empty context when none).
  std::string first_context;
  int64_t first_request = 0, first_token = 0;
  std::optional<OpDivergence> first_op;
};

// nvdet probe (op probe): what the server returned for one probed prompt, at the finest level it
// returned: the text always; each generated token's text and log probability where it gave them
// (its ids are the record's `completion`). The hashes are taken over every byte and bit of it,
// the top alternatives' log probabilities included (lib/probe/served_output.h).
struct ServedCompletion {
  std::string text;
  std::string finish_reason;
  std::vector<std::string> tokens;  // each token's text; empty when the server gave text only
  std::vector<double> logprobs;     // each token's log probability; empty when not given
  // Each token's top-1 minus top-2 log probability among the alternatives the server listed
  // (NaN where it listed fewer than two): how close the choice was.
  std::vector<double> top_gaps;
};

struct RequestRecord {
  int64_t request = 0;
  Hash128 hash;                            // the request's whole output
  std::vector<Hash128> token_hashes;       // one per token (first dimension)
  std::vector<int32_t> completion;         // model scenarios: the generated token ids
  std::optional<ParityRecord> parity;      // model scenarios with a scoring pass
  std::optional<ServedCompletion> served;  // op probe
  // Which of its request's distinct results in its group this output is, by first appearance in
  // sweep order (0: the group's baseline result); set by assign_result_classes
  // (lib/runner/result_classes.h), not written to the JSON report.
  int result_class = 0;
};

// One backend run of one context (one repeat).
struct CaseRecord {
  std::string backend;
  // The context it ran: its index in the sweep (Context::index), found in AuditResult::contexts
  // (its id, group and typed values are stored there once, not in every case).
  int context_index = 0;
  int repeat = 0;
  std::vector<RequestRecord> requests;
  RunNotes notes;
  double seconds = 0.0;
  int64_t generated_tokens = 0;  // model cases: tokens decoded (batch x max_new_tokens), else 0
};

// Model scenarios: where two completions part (token ids per decode step; the output tensor
// holds each step's logits).
struct CompletionDivergence {
  int64_t step = 0;  // first decode step whose token differs
  int32_t baseline_token = 0, token = 0;
  double baseline_logit_of_baseline_token = 0.0, baseline_logit_of_token = 0.0;
  double logit_of_baseline_token = 0.0, logit_of_token = 0.0;
  double baseline_margin = 0.0;  // baseline's top-1 minus top-2 logit at that step
  // Sampled scenarios (model.sampling): both tokens' probabilities in the baseline's filtered
  // sampling distribution at that step (0 for a token the filter dropped).
  bool sampled = false;
  double baseline_prob_of_baseline_token = 0.0, baseline_prob_of_token = 0.0;
};

// Model scenarios under serving traffic: the probed request's step where the two replays' bits
// first parted (the first op's step), with what shared that step on each side.
struct TrafficParting {
  int32_t step = 0;
  ProbeStep baseline, here;
};

// nvdet probe: where a run's completion parts from the probe's first run alone (the control's
// first): the first token that differs (the first byte of the text when the server gave no
// tokens), both sides there, and how close the alone run's choice was.
struct ServedDivergence {
  bool by_token = true;  // false: `position` is a byte of the text
  int64_t position = 0;
  std::string baseline_piece, piece;  // the two tokens' texts (or a few bytes of each text)
  int32_t baseline_id = -1, id = -1;  // their ids, where the server gave ids
  double baseline_logprob = 0.0, logprob = 0.0;  // each side's token's log probability (NaN: none)
  double baseline_top_gap = 0.0;  // the alone run's top-1 minus top-2 there (NaN: not listed)
  // The same completion came from a run of the probe alone (the control is not deterministic):
  // this difference is not the load's doing.
  bool seen_alone = false;
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
  int64_t tokens = 0;                              // tokens in the request's output
  RunNotes baseline_notes, notes;                  // why: the algorithms/splits each side used
  std::optional<CompletionDivergence> completion;  // model scenarios, when the tokens differ
  std::optional<OpDivergence> first_op;            // model scenarios
  std::optional<TrafficParting> traffic;           // model scenarios under serving traffic
  std::optional<ServedDivergence> served;          // op probe
};

struct BackendOutcome {
  std::string name;
  std::string description;
  bool gpu = false;
  Expectation expect = Expectation::kReport;
  bool passed = true;
  int contexts_run = 0;
  int divergent_contexts = 0;  // contexts where some request differs from the baseline
  int run_to_run_divergences = 0;
  int max_distinct_results = 1;      // most distinct outputs of one request over the contexts
  int max_distinct_completions = 0;  // model scenarios: most distinct completions of one request
  std::string verdict;               // one sentence for humans
  std::map<std::string, std::string> stands_for;
  // Not run, on request (`--skip-unavailable`), because this machine cannot run it (a GPU
  // backend without a GPU). A skipped backend neither passes nor fails; every writer says so.
  bool skipped = false;
  std::string skip_reason;
  int scenario_line = 0;  // the line naming the backend in the scenario file (0: not from it)
  ParityExpectation parity_expect = ParityExpectation::kReport;
  ParityTolerance parity_tolerance;     // with parity_expect kTolerance
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

// A shard's part of a sharded sweep (`--shard I/N`, lib/runner/shard.h): which contexts it owns.
// It also ran the baselines of their groups; the merge keeps each case from its owner only.
struct ShardInfo {
  int index = 1, count = 1;  // shard `index` (1-based) of `count`
  std::string filter;        // the --filter the sweep was cut from (every shard's must agree)
  // --last-failed: the contexts its reports left of the filtered sweep (indices, ascending),
  // which the shards partition instead; empty: the whole filtered sweep.
  std::vector<int> selection;
  std::vector<int> owned;  // the context indices this shard owns, ascending
};

// What defines a run (lib/runner/run_fingerprint.h): field -> value, e.g. "shape.n" -> "256",
// "inputs.checkpoint" -> its files' hash. Shards of one sweep must agree on every field; a
// manifest records the fields that are not the build's.
using RunFingerprint = std::map<std::string, std::string>;

// nvdet probe: the server that answered and what it was asked (never a header's value), and what
// it returned (`level`). The endpoint is the result's one backend; the context of sweep index 0
// is its control, the probe alone, run `control` times.
struct ProbeRun {
  std::string url, model, api;       // where the requests went: <url>/v1/<api path>
  std::vector<std::string> headers;  // names of the headers set from the environment
  std::string body_json;             // the server hints merged into every request
  bool stream = false;
  int32_t control = 1, max_tokens = 0, logprobs = 0;
  double temperature = 0.0;
  std::optional<uint64_t> seed;
  std::vector<std::string> prompts;  // the probed prompts, by request id (cut to 200 bytes)
  // The finest level of what the server returned, compared bit for bit: "logprobs" (tokens and
  // their log probabilities), "tokens" (token texts) or "text".
  std::string level;
};

struct AuditResult {
  int schema_version = kReportSchemaVersion;
  // When and where it ran: "2026-12-01T20:46:03Z" (UTC) and the host's name; "" when unknown
  // (reports written before they were recorded). A timing, like the seconds: not compared.
  std::string started_at, hostname;
  ScenarioSummary scenario;
  RunFingerprint fingerprint;  // empty in reports written before it was recorded
  SystemInfo system;
  std::vector<BackendOutcome> backends;
  // The contexts of the sweep that ran, once each, by ascending Context::index: what cases,
  // divergences and verify changes refer to by index.
  std::vector<Context> contexts;
  std::vector<CaseRecord> cases;
  std::vector<Divergence> divergences;
  AuditSummary summary;
  // With --verify: the comparison with the golden manifest (lib/manifest). It takes part in
  // summary.passed (see attach_verify in lib/runner/audit.h).
  std::optional<VerifyResult> verify;
  std::optional<ShardInfo> shard;  // a shard's report; absent for a whole (or merged) sweep
  std::optional<ProbeRun> probe;   // nvdet probe's result (op probe)
};

// The context of sweep index `index`, null when the result has none of that index.
inline const Context* find_context(const AuditResult& r, int index) {
  const auto it = std::lower_bound(r.contexts.begin(), r.contexts.end(), index,
                                   [](const Context& c, int i) { return c.index < i; });
  return it != r.contexts.end() && it->index == index ? &*it : nullptr;
}
// A case's context: every case's context is in the table (the audit and the report reader make
// it so).
inline const Context& context_of(const AuditResult& r, const CaseRecord& c) {
  if (const Context* x = find_context(r, c.context_index)) return *x;
  throw_runtime_error("case of " + c.backend + " refers to context " +
                      std::to_string(c.context_index) + ", which the result does not hold");
}

// Nothing was run: no case at all (every backend skipped, or no context). Every writer says so and
// the exit code is 5, as pytest's when it collects no test. Never said of a shard: a shard may
// own no context of a small sweep, and its (empty) part of the merge is then complete.
inline bool ran_nothing(const AuditResult& r) { return r.summary.cases == 0 && !r.shard; }

}  // namespace nvdet
