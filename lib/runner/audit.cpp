#include "lib/runner/audit.h"

#include <absl/container/flat_hash_map.h>
#include <absl/types/span.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "lib/core/error.h"
#include "lib/core/host_memory.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/runner/completion_compare.h"
#include "lib/runner/fp8_support.h"
#include "lib/runner/parity_metrics.h"
#include "lib/runner/result_classes.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/runner/verdict.h"
#include "lib/scenario/context_filter.h"
#include "lib/scenario/typo_hint.h"

namespace nvdet {
namespace {

using Clock = std::chrono::steady_clock;

// "2026-12-01T20:46:03Z"
std::string utc_timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (!gmtime_r(&now, &tm)) return "";
  char text[32];
  return std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm) ? std::string(text) : "";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

RequestRecord hash_output(const RequestOutput& out) {
  RequestRecord r;
  r.request = out.request;
  const absl::Span<const std::byte> bytes(out.output.data(), out.output.nbytes());
  r.hash = hash_bytes(bytes);
  const int64_t tokens = out.output.rank() ? out.output.dim(0) : 1;
  const size_t row_bytes = tokens ? bytes.size() / tokens : 0;
  for (int64_t t = 0; t < tokens; ++t) {
    r.token_hashes.push_back(hash_bytes(bytes.subspan(t * row_bytes, row_bytes)));
  }
  r.completion = out.completion;
  return r;
}

ScenarioSummary summarize(const Scenario& s, const Workload& w) {
  ScenarioSummary m = summarize_scenario(s);
  m.coord_names = w.coord_names();
  return m;
}

}  // namespace

ScenarioSummary summarize_scenario(const Scenario& s) {
  ScenarioSummary m;
  m.name = s.name;
  m.path = s.path;
  m.description = s.description;
  m.op = std::string(op_name(s.op));
  m.dtype = std::string(dtype_name(s.dtype));
  m.out_dtype = std::string(dtype_name(s.out_dtype));
  m.seed = s.seed;
  m.requests = s.requests;
  m.repeat = s.repeat;
  for (const SweepAxis& a : s.sweep) {
    std::vector<std::string> values;
    for (const AxisValue& v : a.values) values.push_back(axis_value_string(v));
    m.axes.emplace_back(a.name(), std::move(values));
  }
  if (s.traffic.enabled) m.traffic = traffic_summary(s.traffic);
  return m;
}

namespace {

// Compares one request's output with a reference output; nullopt when bitwise identical.
std::optional<Divergence> compare_request(const RequestOutput& reference_out,
                                          const RequestOutput& output_out) {
  const HostTensor& reference = reference_out.output;
  const HostTensor& output = output_out.output;
  const TensorComparison cmp = compare_tensors(reference, output);
  if (cmp.identical && reference_out.completion == output_out.completion) return std::nullopt;
  Divergence d;
  d.token = cmp.first_mismatch_row;
  if (cmp.first) d.first_mismatch = *cmp.first;
  d.completion = compare_completions(reference_out, output_out);
  d.first_op = first_trace_difference(reference_out, output_out);
  d.traffic = traffic_parting(reference_out, output_out, d.first_op, d.completion);
  d.max_abs_diff = cmp.max_abs_diff;
  d.max_rel_diff = cmp.max_rel_diff;
  d.mismatch_count = cmp.mismatch_count;
  d.mismatched_tokens = cmp.mismatched_rows;
  d.tokens = output.rank() ? output.dim(0) : 1;
  return d;
}

// Runs one backend over every context and repeat.
class BackendAudit {
 public:
  BackendAudit(const BackendSpec& spec, Backend& backend, Workload& workload,
               const std::vector<Context>& contexts, const Scenario& s, const AuditOptions& options,
               AuditResult& result, AuditProgress& progress)
      : spec_(spec),
        backend_(backend),
        workload_(workload),
        contexts_(contexts),
        s_(s),
        options_(options),
        result_(result),
        progress_(progress) {}

  // Runs every repeat of one context.
  void run_context(const Context& c) { run_context(c, outcome_); }
  const std::string& name() const { return spec_.name; }

  // The backend's outcome once every context has run.
  BackendOutcome finish() {
    BackendOutcome& o = outcome_;
    o.name = spec_.name;
    o.description = backend_.info().description;
    o.gpu = backend_.info().gpu;
    o.expect = spec_.expect;
    o.stands_for = backend_.info().stands_for;
    o.scenario_line = spec_.where.line;
    o.contexts_run = static_cast<int>(contexts_.size());
    for (const auto& [request, hashes] : distinct_) {
      o.max_distinct_results = std::max(o.max_distinct_results, static_cast<int>(hashes.size()));
    }
    for (const auto& [request, set] : completions_) {
      o.max_distinct_completions =
          std::max(o.max_distinct_completions, static_cast<int>(set.size()));
    }
    o.parity_expect = spec_.parity;
    o.parity_tolerance = spec_.parity_tolerance;
    if (parity_.requests > 0) o.parity = parity_;
    decide_verdict(o, first_divergence_, options_.shard.has_value());
    decide_parity_verdict(o);
    return o;
  }

 private:
  bool sampling() const { return s_.model.sampling.enabled && s_.model.sampling.temperature > 0.0; }
  BackendOutcome outcome_;
  void run_context(const Context& c, BackendOutcome& o) {
    std::map<int64_t, RequestOutput> first_repeat;
    RunNotes first_notes;
    bool context_diverged = false;
    for (int rep = 0; rep < s_.repeat; ++rep) {
      progress_.backend = spec_.name;
      progress_.context = c.id;
      // Reported at the start of a case too, so that progress within it (a long model decode's
      // steps) can name it.
      if (options_.on_progress) options_.on_progress(progress_);
      CaseRecord rec;
      rec.backend = spec_.name;
      rec.context_index = c.index;
      rec.repeat = rep;
      const auto t0 = Clock::now();
      std::vector<RequestOutput> outputs = workload_.run(backend_, c, &rec.notes);
      rec.seconds = seconds_since(t0);
      rec.generated_tokens = workload_.generated_tokens(c);
      for (const RequestOutput& out : outputs) {
        rec.requests.push_back(hash_output(out));
        if (!out.score_logits.empty()) {
          rec.requests.back().parity = parity_of(out, sampling() ? &s_.model.sampling : nullptr);
          add_parity(parity_, *rec.requests.back().parity, c.id, out.request);
        }
        distinct_[{c.group, out.request}].insert(rec.requests.back().hash);
        if (!out.completion.empty()) completions_[{c.group, out.request}].insert(out.completion);
        Baseline& base = baselines_[c.group];
        const bool baseline_case = rep == 0 && (base.context.empty() || base.context == c.id);
        if (baseline_case) {
          base.context = c.id;
          base.index = c.index;
          base.outputs[out.request] = out;
          base.notes = rec.notes;
        } else if (rep == 0) {
          if (auto d = compare_request(base.outputs.at(out.request), out)) {
            if (d->completion && sampling()) {
              add_sampling_probabilities(*d->completion, base.outputs.at(out.request),
                                         s_.model.sampling);
            }
            record(*d, DivergenceKind::kContext, out.request, {base.context, base.index}, c, 0,
                   base.notes, rec.notes);
            context_diverged = true;
          }
        } else if (rep > 0) {
          if (auto d = compare_request(first_repeat.at(out.request), out)) {
            record(*d, DivergenceKind::kRunToRun, out.request, {c.id, c.index}, c, rep, first_notes,
                   rec.notes);
            ++o.run_to_run_divergences;
          }
        }
        if (rep == 0) first_repeat[out.request] = out;
      }
      if (rep == 0) first_notes = rec.notes;
      if (options_.on_outputs) options_.on_outputs(c, rec, outputs);
      result_.cases.push_back(std::move(rec));
      ++progress_.done;
      if (options_.on_progress) options_.on_progress(progress_);
    }
    if (context_diverged) ++o.divergent_contexts;
  }

  struct ContextRef {
    std::string id;
    int index = 0;
  };
  void record(Divergence d, DivergenceKind kind, int64_t request, const ContextRef& base,
              const Context& ctx, int rep, const RunNotes& base_notes, const RunNotes& notes) {
    d.backend = spec_.name;
    d.kind = kind;
    d.request = request;
    d.baseline_context = base.id;
    d.baseline_context_index = base.index;
    d.context = ctx.id;
    d.context_index = ctx.index;
    d.repeat = rep;
    d.baseline_notes = base_notes;
    d.notes = notes;
    if (!first_divergence_) first_divergence_ = d;
    result_.divergences.push_back(std::move(d));
  }

  const BackendSpec& spec_;
  Backend& backend_;
  Workload& workload_;
  const std::vector<Context>& contexts_;
  const Scenario& s_;
  const AuditOptions& options_;
  AuditResult& result_;
  AuditProgress& progress_;
  // Each group of contexts (one value of the request-defining axes) has its own baseline: its
  // first context.
  struct Baseline {
    std::string context;
    int index = 0;
    std::map<int64_t, RequestOutput> outputs;
    RunNotes notes;
  };
  std::map<std::string, Baseline> baselines_;
  ParitySummary parity_;  // sampler against trainer, over every scored request
  // Distinct outputs and completions per (group, request): updated for every request of every
  // case and only ever read for their largest size, so a hash map (order does not matter).
  absl::flat_hash_map<std::pair<std::string, int64_t>, std::set<Hash128>> distinct_;
  absl::flat_hash_map<std::pair<std::string, int64_t>, std::set<std::vector<int32_t>>> completions_;
  std::optional<Divergence> first_divergence_;
};

// The out-of-memory sentence: what was being allocated and how much (when the allocation said:
// lib/core/host_memory.h), for which backend and context (none: building the workload), against
// the scenario's estimate.
[[noreturn]] void throw_out_of_host_memory(const Scenario& s, const std::bad_alloc& e,
                                           const std::string& backend, const std::string& context) {
  const auto* known = dynamic_cast<const HostAllocationError*>(&e);
  const ScenarioEstimate estimate = estimate_scenario(s);
  const std::string during =
      backend.empty() ? "while building the inputs and weights of scenario '" + s.name + "'"
                      : "while backend '" + backend + "' ran " + context;
  throw_runtime_error("out of host memory " +
                      (known ? "allocating " + std::string(known->what()) : std::string("")) +
                      (known ? " " : "") + during + " (the estimate for the scenario was " +
                      byte_size_text(estimate.host_bytes) + " per context: " + estimate.breakdown +
                      "); shrink the shapes");
}

}  // namespace

std::vector<BackendSpec> select_backends(const Scenario& s, const std::vector<std::string>& names) {
  // A probe's `backends` is its server, which no kernel computes: audit, bench and bisect all
  // start here and send it to nvdet probe.
  if (op_spec(s.op).server) refuse_server_op(s);
  std::vector<BackendSpec> chosen;
  if (names.empty()) {
    chosen = s.backends;
  } else {
    for (const std::string& n : names) {
      BackendSpec spec{n, Expectation::kReport, {}};
      for (const BackendSpec& b : s.backends) {
        if (b.name == n) spec = b;
      }
      chosen.push_back(spec);
    }
  }
  for (const BackendSpec& b : chosen) {
    if (find_backend(b.name)) continue;
    std::string known;
    std::vector<std::string> names;
    for (const auto& r : backend_registry()) {
      known += (known.empty() ? "" : ", ") + r.info.name;
      names.push_back(r.info.name);
    }
    const std::string msg = "unknown backend '" + excerpt(b.name) + "'" + typo_hint(b.name, names) +
                            " (known: " + known + ")";
    if (b.where.file.empty()) throw_input_error(msg);
    throw_input_error(b.where, msg);
  }
  return chosen;
}

void check_scenario_budget(const Scenario& s, const std::vector<BackendSpec>& specs,
                           const Budget& budget) {
  check_op_scenario(s);
  bool gpu = false, cpu = false;
  std::vector<std::string> names;
  for (const BackendSpec& spec : specs) names.push_back(spec.name);
  if (!s.model.trainer_backend.empty()) names.push_back(s.model.trainer_backend);
  for (const std::string& name : names) {
    const BackendRegistration* r = find_backend(name);
    gpu = gpu || (r && r->info.gpu);
    cpu = cpu || (r && !r->info.gpu);
  }
  check_budget(s, estimate_scenario(s, cpu), budget, gpu, gpu ? device_free_bytes() : std::nullopt);
}

Support scenario_support(const Scenario& s, const std::string& name, const DeviceFacts& device) {
  // A server op calls no backend op: no backend computes it (rather than every one, vacuously).
  if (op_spec(s.op).server)
    return {Support::Status::kUnsupportedOp,
            "does not compute op " + std::string(op_name(s.op)) + ": a running server answers it"};
  if (Support fp8 = fp8_support(s, name); !fp8.ok()) return fp8;
  Support device_refusal;
  for (OpKind op : op_spec(s.op).uses) {
    Support answer = backend_supports(name, op, s.dtype, device);
    if (answer.status == Support::Status::kUnsupportedOp) return answer;
    if (!answer.ok() && device_refusal.ok()) device_refusal = std::move(answer);
  }
  return device_refusal;
}

std::string check_backend_support(const Scenario& s, const BackendSpec& spec,
                                  const DeviceFacts& device, bool skip_unavailable,
                                  std::string_view hint) {
  const Support answer = scenario_support(s, spec.name, device);
  if (answer.ok()) return "";
  const std::string what = "backend '" + excerpt(spec.name) + "' " + answer.reason;
  if (answer.status == Support::Status::kUnsupportedOp) {
    if (spec.where.file.empty()) throw_input_error(what);
    throw_input_error(spec.where, what);
  }
  if (skip_unavailable) return answer.reason;
  throw_runtime_error(what + std::string(hint));
}

std::vector<Context> check_audit(const Scenario& s, const AuditOptions& options) {
  const std::vector<BackendSpec> specs = select_backends(s, options.backends);
  check_scenario_budget(s, specs, options.budget);  // before any context or tensor exists
  const ContextFilter filter(options.context_filter);
  std::vector<Context> contexts = expand_contexts(s);
  if (!filter.empty()) {
    std::vector<Context> kept = select_contexts(contexts, filter);
    if (kept.empty() && !options.filter_spans_scenarios)
      throw_input_error(no_match_text(filter, contexts));
    contexts = std::move(kept);
  }
  const DeviceFacts device = device_facts();
  for (const BackendSpec& spec : specs) {
    (void)check_backend_support(s, spec, device, options.skip_unavailable);
  }
  check_trainer(s, device);
  return contexts;
}

void check_trainer(const Scenario& s, const DeviceFacts& device) {
  const std::string& name = s.model.trainer_backend;
  if (name.empty()) return;
  // Its name was checked with the model (check_model_scenario). Every backend's decode is scored
  // by it: it cannot be skipped.
  const BackendSpec trainer{name, Expectation::kReport, s.model.trainer_where};
  (void)check_backend_support(s, trainer, device, false,
                              " (it is the scenario's trainer, model.trainer, which scores every "
                              "backend's decode)");
}

AuditResult run_audit(const Scenario& s, const AuditOptions& options) {
  return run_checked_audit(s, options, check_audit(s, options));
}

AuditResult run_checked_audit(const Scenario& s, const AuditOptions& options,
                              const std::vector<Context>& contexts) {
  const auto t0 = Clock::now();
  const std::vector<BackendSpec> specs = select_backends(s, options.backends);
  std::unique_ptr<Workload> workload;
  try {
    workload = make_workload(s);
  } catch (const std::bad_alloc& e) {
    throw_out_of_host_memory(s, e, "", "");
  }

  AuditResult result;
  result.started_at = utc_timestamp_now();
  result.hostname = host_name();
  result.scenario = summarize(s, *workload);
  result.system = collect_system_info();
  result.fingerprint = run_fingerprint(s);
  result.fingerprint.merge(build_fingerprint(result.system));

  // Backends skipped on request keep their place in the report, marked skipped.
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<BackendAudit>> audits;
  std::vector<std::optional<BackendOutcome>> skipped(specs.size());
  const DeviceFacts device = device_facts();
  for (size_t i = 0; i < specs.size(); ++i) {
    const BackendSpec& spec = specs[i];
    const std::string unavailable =
        check_backend_support(s, spec, device, options.skip_unavailable);
    if (!unavailable.empty()) {
      BackendOutcome o;
      const BackendInfo& info = find_backend(spec.name)->info;
      o.name = spec.name;
      o.description = info.description;
      o.gpu = info.gpu;
      o.expect = spec.expect;
      o.stands_for = info.stands_for;
      o.skipped = true;
      o.skip_reason = unavailable;
      o.scenario_line = spec.where.line;
      o.verdict = "skipped: " + unavailable;
      skipped[i] = std::move(o);
    }
  }
  AuditProgress progress;
  const int running = static_cast<int>(
      std::count_if(skipped.begin(), skipped.end(), [](const auto& o) { return !o; }));
  progress.total = running * static_cast<int>(contexts.size()) * s.repeat;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (skipped[i]) continue;
    const BackendSpec& spec = specs[i];
    backends.push_back(make_backend(spec.name));
    audits.push_back(std::make_unique<BackendAudit>(spec, *backends.back(), *workload, contexts, s,
                                                    options, result, progress));
  }
  // Context-major: a context's inputs (a multi-gigabyte KV cache, say) are built once and
  // serve every backend and repeat before the next context is built.
  progress.contexts = static_cast<int>(contexts.size());
  for (const Context& c : contexts) {
    ++progress.context_number;
    for (auto& audit : audits) {
      try {
        audit->run_context(c);
      } catch (const std::bad_alloc& e) {
        throw_out_of_host_memory(s, e, audit->name(), c.id);
      }
    }
  }
  size_t next_audit = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    result.backends.push_back(skipped[i] ? *skipped[i] : audits[next_audit++]->finish());
  }

  tally_summary(result, static_cast<int>(contexts.size()));
  result.summary.seconds = seconds_since(t0);
  result.shard = options.shard;
  result.contexts = contexts;
  std::sort(result.contexts.begin(), result.contexts.end(),
            [](const Context& a, const Context& b) { return a.index < b.index; });
  assign_result_classes(result);
  return result;
}

void tally_summary(AuditResult& result, int contexts) {
  AuditSummary& sum = result.summary;
  sum.backends = static_cast<int>(result.backends.size());
  sum.contexts = contexts;
  sum.cases = static_cast<int>(result.cases.size());
  sum.divergences = static_cast<int>(result.divergences.size());
  sum.failed_backends = sum.skipped_backends = 0;
  for (const BackendOutcome& o : result.backends) {
    if (o.skipped) {
      ++sum.skipped_backends;
    } else if (!o.passed) {
      ++sum.failed_backends;
    }
  }
  sum.passed = sum.failed_backends == 0;
}

void attach_verify(AuditResult& result, VerifyResult verify) {
  result.summary.passed = result.summary.passed && verify.passed;
  result.verify = std::move(verify);
}

}  // namespace nvdet
