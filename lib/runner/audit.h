#pragma once
// The audit pipeline: scenario -> contexts -> backend runs -> hashes -> comparisons. The result
// model it returns is all that the writers, the manifest and the console ever see.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/runner/audit_result.h"
#include "lib/runner/budget.h"
#include "lib/scenario/context.h"
#include "lib/workloads/workload.h"

namespace nvdet {

struct AuditProgress {
  int done = 0, total = 0;               // cases (backend × context × repeat)
  int context_number = 0, contexts = 0;  // the context being run: 1-based, of how many
  std::string backend, context;
};

struct AuditOptions {
  // Backends to run (names); empty = the scenario's. A name the scenario does not list is run
  // with expectation `report`.
  std::vector<std::string> backends;
  std::string context_filter;  // --filter REGEX
  // The filter applies to a run of several scenarios as a whole: a scenario it matches nothing
  // of gets no contexts from check_audit (the caller names it) instead of an error.
  bool filter_spans_scenarios = false;
  // Skip (and report as skipped) the backends this machine cannot run: GPU backends when no GPU
  // is present. Without it such a backend fails the audit with exit 3 before anything runs.
  bool skip_unavailable = false;
  std::function<void(const AuditProgress&)> on_progress;  // at the start and end of each case
  // Called after each case with its outputs (for --dump); the outputs die after the call.
  std::function<void(const Context&, const CaseRecord&, const std::vector<RequestOutput>&)>
      on_outputs;
  // --shard: the contexts given are this shard's (lib/runner/shard.h select_shard); the result
  // carries it, and a `variant` expectation is left to the merge.
  std::optional<ShardInfo> shard;
  Budget budget;  // --max-contexts, --max-host-bytes, --max-device-bytes (lib/runner/budget.h)
};

// Runs the op's own checks of the scenario (check_op_scenario, lib/loader/op_table.h: shape
// errors are exit 2 before any budget's exit 3), then estimates the scenario's contexts and
// bytes and refuses it (exit 2 or 3) above the budget, before anything is expanded or allocated.
// The audit (for every scenario named, before the first runs), bench and bisect call it first.
void check_scenario_budget(const Scenario& s, const std::vector<BackendSpec>& specs,
                           const Budget& budget);

// What the reports say of a scenario: its name, path, op, dtypes, seed, requests, repeat and
// swept axes with their values (not the output's coordinate names: its workload's, or a
// probe's server's).
ScenarioSummary summarize_scenario(const Scenario& s);

// The backends an audit runs, with their expectations, after applying options.backends.
// Throws kBadInput for names not in the registry (pointing at the scenario line when it is
// the scenario's).
std::vector<BackendSpec> select_backends(const Scenario& s, const std::vector<std::string>& names);

// Whether backend `name` computes every op the scenario's workload calls, in the scenario's
// dtype, on `device` (the registry's support tables): the first refusal, an op or dtype the
// backend lacks before anything this machine lacks, or ok.
Support scenario_support(const Scenario& s, const std::string& name, const DeviceFacts& device);

// Refuses a backend the scenario cannot use: Error(kBadInput) "backend 'NAME' does not compute
// ..." at the backend's line of the scenario for an op or dtype it lacks; for a machine that
// lacks what it needs, Error(kRuntime) unless `skip_unavailable`. Returns the reason to skip it
// for, "" when it runs.
// `hint` ends the sentence of an unavailable backend: what the command offers about it (the
// audit's --skip-unavailable; bench, which has no such option, names --backends).
std::string check_backend_support(
    const Scenario& s, const BackendSpec& spec, const DeviceFacts& device, bool skip_unavailable,
    std::string_view hint =
        " (--skip-unavailable skips such backends and reports them as skipped)");

// model.trainer (the scoring pass's backend, a registry name as check_model_scenario checks):
// computing the scenario's ops and dtype (else exit 2), and runnable here (else exit 3: it
// scores every backend, and is never skipped). Part of check_audit; bisect calls it too.
void check_trainer(const Scenario& s, const DeviceFacts& device);

// Everything about one audit that can be checked before any context runs: the backends exist,
// the filter is valid and matches, each backend that will run computes the scenario's op and
// dtype, and (without options.skip_unavailable) that this machine can run every backend.
// Throws what run_audit would throw, before anything is computed; returns the contexts.
std::vector<Context> check_audit(const Scenario& s, const AuditOptions& options);

AuditResult run_audit(const Scenario& s, const AuditOptions& options);
// The same, for a caller that has already run check_audit(s, options) and kept its contexts
// (nvdet audit checks every scenario before the first one runs).
AuditResult run_checked_audit(const Scenario& s, const AuditOptions& options,
                              const std::vector<Context>& contexts);

// The summary's counts and verdict from the result's backends, cases and divergences (`contexts`
// run); not its seconds. The audit and the merge of a sharded sweep (lib/report/merge_reports.h)
// both count this way.
void tally_summary(AuditResult& result, int contexts);

// Makes a manifest verification part of the audit's result: the audit passes only when its
// expectations held and the verification passed, so that every writer and the exit code agree.
void attach_verify(AuditResult& result, VerifyResult verify);

}  // namespace nvdet
