#include "lib/report/json_report.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "lib/report/system_info_json.h"
#include "lib/report/traffic_section.h"
#include "lib/report/verify_report.h"
#include "lib/runner/parity_metrics.h"
#include "lib/runner/traffic_steps_text.h"
#include "lib/scenario/scenario.h"

namespace nvdet {
namespace {

using nlohmann::json;

json string_map(const std::map<std::string, std::string>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

json scenario_json(const ScenarioSummary& s) {
  json axes = json::array();
  // An array, not an object: the order of the axes is the order of the sweep (the last varies
  // fastest), and JSON objects carry no order.
  for (const auto& [name, values] : s.axes) axes.push_back({{"name", name}, {"values", values}});
  json j = {{"name", s.name},
            {"path", s.path},
            {"description", s.description},
            {"op", s.op},
            {"dtype", s.dtype},
            {"out_dtype", s.out_dtype},
            {"seed", s.seed},
            {"requests", s.requests},
            {"repeat", s.repeat},
            {"axes", axes},
            {"coord_names", s.coord_names}};
  if (!s.traffic.empty()) j["traffic"] = s.traffic;  // serving traffic: the traffic in one line
  return j;
}

json device_json(const SystemInfo& s) { return system_info_json<json>(s); }

json op_json(const OpDivergence& op) {
  return {{"step", op.step}, {"layer", op.layer}, {"op", op.op}};
}

// Sampler against trainer (model scenarios with a scoring pass), under the metrics' RL names:
// the metrics at temperature 1 over the whole vocabulary at the top level, those at the sampling
// distribution (sampled scenarios) under "sampling".
void add_metrics(json& j, const ParityMetrics& m) {
  j["logprob_abs_diff_max"] = json_number(m.logprob_abs_diff_max);
  j["logprob_abs_diff_mean"] = json_number(m.logprob_abs_diff_mean);
  j["mismatch_kl_mean"] = json_number(m.mismatch_kl_mean);
  j["mismatch_kl_max"] = json_number(m.mismatch_kl_max);
  j["k3_mean"] = json_number(m.k3_mean);
}

// Per generated token, the sampled token's logprob under each side's distribution.
json logprobs_json(const std::vector<double>& sampler, const std::vector<double>& trainer) {
  json s = json::array(), t = json::array();
  for (const double v : sampler) s.push_back(json_number(v));
  for (const double v : trainer) t.push_back(json_number(v));
  return {{"sampler", s}, {"trainer", t}};
}

json parity_json(const ParityRecord& p) {
  json j = {{"tokens", p.tokens},
            {"bitwise_equal_tokens", p.bitwise_equal_tokens},
            {"first_differing_token", p.first_differing_token}};
  add_metrics(j, p);
  if (p.first_op) j["first_op"] = op_json(*p.first_op);
  if (!p.sampler_logprobs.empty())
    j["logprobs"] = logprobs_json(p.sampler_logprobs, p.trainer_logprobs);
  if (p.sampling) {
    json s = json::object();
    add_metrics(s, *p.sampling);
    s["logprobs"] = logprobs_json(p.sampling_sampler_logprobs, p.sampling_trainer_logprobs);
    j["sampling"] = s;
  }
  return j;
}

json parity_summary_json(const ParitySummary& p) {
  json j = {{"requests", p.requests},
            {"tokens", p.tokens},
            {"bitwise_equal_tokens", p.bitwise_equal_tokens}};
  add_metrics(j, p);
  if (p.sampling) {
    json s = json::object();
    add_metrics(s, *p.sampling);
    j["sampling"] = s;
  }
  if (!p.first_context.empty()) {
    j["first"] = {
        {"context", p.first_context}, {"request", p.first_request}, {"token", p.first_token}};
  }
  if (p.first_op) j["first_op"] = op_json(*p.first_op);
  return j;
}

// nvdet probe: a run's completion as the server returned it (its hashes and ids are beside it).
json served_json(const ServedCompletion& c) {
  json gaps = json::array(), logprobs = json::array();
  for (const double g : c.top_gaps) gaps.push_back(json_number(g));
  for (const double l : c.logprobs) logprobs.push_back(json_number(l));
  return {{"text", c.text},
          {"finish_reason", c.finish_reason},
          {"tokens", c.tokens},
          {"logprobs", logprobs},
          {"top_gaps", gaps}};
}

json served_divergence_json(const ServedDivergence& s) {
  return {{"by_token", s.by_token},
          {"position", s.position},
          {"baseline_piece", s.baseline_piece},
          {"piece", s.piece},
          {"baseline_id", s.baseline_id},
          {"id", s.id},
          {"baseline_logprob", json_number(s.baseline_logprob)},
          {"logprob", json_number(s.logprob)},
          {"baseline_top_gap", json_number(s.baseline_top_gap)},
          {"seen_alone", s.seen_alone}};
}

// nvdet probe: the server and what it was asked; never a header's value.
json probe_run_json(const ProbeRun& p) {
  json j = {{"url", p.url},
            {"model", p.model},
            {"api", p.api},
            {"headers", p.headers},
            {"body", p.body_json},
            {"stream", p.stream},
            {"control", p.control},
            {"max_tokens", p.max_tokens},
            {"logprobs", p.logprobs},
            {"temperature", json_number(p.temperature)},
            {"seed", p.seed ? json(*p.seed) : json(nullptr)},
            {"prompts", p.prompts},
            {"level", p.level}};
  return j;
}

json backend_json(const AuditResult& r, const BackendOutcome& b) {
  json j = {{"name", b.name},
            {"description", b.description},
            {"gpu", b.gpu},
            {"expect", std::string(expectation_name(b.expect))},
            {"passed", b.passed},
            {"contexts_run", b.contexts_run},
            {"divergent_contexts", b.divergent_contexts},
            {"run_to_run_divergences", b.run_to_run_divergences},
            {"max_distinct_results", b.max_distinct_results},
            {"verdict", b.verdict},
            {"stands_for", string_map(b.stands_for)},
            {"skipped", b.skipped}};
  if (b.skipped) j["skip_reason"] = b.skip_reason;
  if (b.max_distinct_completions > 0) j["max_distinct_completions"] = b.max_distinct_completions;
  if (b.parity) {
    j["parity_expect"] = std::string(parity_expectation_name(b.parity_expect));
    if (b.parity_expect == ParityExpectation::kTolerance) {
      json limits = json::object();
      if (b.parity_tolerance.mismatch_kl_max)
        limits["mismatch_kl_max"] = *b.parity_tolerance.mismatch_kl_max;
      if (b.parity_tolerance.logprob_abs_diff_max)
        limits["logprob_abs_diff_max"] = *b.parity_tolerance.logprob_abs_diff_max;
      j["parity_tolerance"] = limits;
    }
    j["parity"] = parity_summary_json(*b.parity);
    // For each scoring pass setting: folded from the records, so never read back.
    json by = json::array();
    for (const ParityByScoring& g : parity_by_scoring(r, b.name)) {
      json row = {{"score_batch", g.score_batch}, {"score_chunk", g.score_chunk}};
      row.update(parity_summary_json(g.parity));
      by.push_back(std::move(row));
    }
    j["parity"]["by_scoring"] = by;
  }
  return j;
}

// A context value as its type: a number, or a word.
json axis_value_json(const AxisValue& v) {
  if (const auto* n = std::get_if<int64_t>(&v)) return *n;
  return std::get<std::string>(v);
}

json context_json(const Context& c) {
  json values = json::object();
  for (const auto& [k, v] : c.values) values[k] = axis_value_json(v);
  return {{"index", c.index}, {"id", c.id}, {"group", c.group}, {"values", values}};
}

json case_json(const CaseRecord& c) {
  json requests = json::array();
  for (const RequestRecord& r : c.requests) {
    json tokens = json::array();
    for (const Hash128& h : r.token_hashes) tokens.push_back(h.hex());
    json jr = {{"request", r.request}, {"hash", r.hash.hex()}, {"token_hashes", tokens}};
    if (!r.completion.empty()) jr["completion"] = r.completion;
    if (r.parity) jr["parity"] = parity_json(*r.parity);
    if (r.served) jr["served"] = served_json(*r.served);
    requests.push_back(std::move(jr));
  }
  json j = {{"backend", c.backend},         {"context_index", c.context_index},
            {"repeat", c.repeat},           {"seconds", json_number(c.seconds)},
            {"notes", string_map(c.notes)}, {"requests", requests}};
  if (c.generated_tokens > 0) j["generated_tokens"] = c.generated_tokens;
  return j;
}

json divergence_json(const Divergence& d) {
  json j = {{"backend", d.backend},
            {"kind", std::string(divergence_kind_name(d.kind))},
            {"request", d.request},
            {"token", d.token},
            {"baseline_context", d.baseline_context},
            {"context", d.context},
            {"repeat", d.repeat},
            {"first_mismatch", first_mismatch_to_json(d.first_mismatch)},
            {"max_abs_diff", json_number(d.max_abs_diff)},
            {"max_rel_diff", json_number(d.max_rel_diff)},
            {"mismatch_count", d.mismatch_count},
            {"mismatched_tokens", d.mismatched_tokens},
            {"tokens", d.tokens},
            {"baseline_notes", string_map(d.baseline_notes)},
            {"notes", string_map(d.notes)}};
  // Model scenarios: where the completions part and which intermediate tensor parted first.
  if (d.completion) {
    const CompletionDivergence& c = *d.completion;
    j["completion"] = {
        {"step", c.step},
        {"baseline_token", c.baseline_token},
        {"token", c.token},
        {"baseline_logit_of_baseline_token", json_number(c.baseline_logit_of_baseline_token)},
        {"baseline_logit_of_token", json_number(c.baseline_logit_of_token)},
        {"logit_of_baseline_token", json_number(c.logit_of_baseline_token)},
        {"logit_of_token", json_number(c.logit_of_token)},
        {"baseline_margin", json_number(c.baseline_margin)}};
    if (c.sampled) {
      j["completion"]["baseline_prob_of_baseline_token"] =
          json_number(c.baseline_prob_of_baseline_token);
      j["completion"]["baseline_prob_of_token"] = json_number(c.baseline_prob_of_token);
    }
  }
  if (d.first_op) j["first_op"] = op_json(*d.first_op);
  if (d.traffic) {
    j["traffic"] = {{"step", d.traffic->step},
                    {"baseline", probe_step_json(d.traffic->baseline)},
                    {"here", probe_step_json(d.traffic->here)}};
  }
  if (d.served) j["served"] = served_divergence_json(*d.served);
  return j;
}

// Serving traffic: per backend and probed request, the distinct completions of its replays and
// how many replays gave each (from the cases; nvdet report derives it again).
json traffic_json(const AuditResult& r) {
  json replays = json::array();
  for (const BackendOutcome& b : r.backends) {
    for (const ReplayCounts& c : replay_counts(r, b.name)) {
      replays.push_back({{"backend", b.name},
                         {"group", c.group},
                         {"request", c.request},
                         {"replays", c.replays},
                         {"replays_per_completion", c.counts}});
    }
  }
  return {{"summary", r.scenario.traffic}, {"replays", replays}};
}

json summary_json(const AuditResult& r) {
  const AuditSummary& s = r.summary;
  return {{"passed", s.passed},
          // No case ran (every backend skipped): exit code 5.
          {"nothing_ran", ran_nothing(r)},
          // null without --verify; else whether the manifest check passed (part of "passed").
          {"verify_passed", r.verify ? json(r.verify->passed) : json(nullptr)},
          {"backends", s.backends},
          {"contexts", s.contexts},
          {"cases", s.cases},
          {"divergences", s.divergences},
          {"failed_backends", s.failed_backends},
          {"skipped_backends", s.skipped_backends},
          {"seconds", json_number(s.seconds)}};
}

}  // namespace

json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json first_mismatch_to_json(const FirstMismatch& m) {
  return {{"flat_index", m.flat_index},
          {"coords", m.coords},
          {"a", json_number(m.a)},
          {"b", json_number(m.b)},
          {"a_bits", m.a_bits},
          {"b_bits", m.b_bits},
          {"ulp", m.ulp == std::numeric_limits<uint64_t>::max() ? json(nullptr) : json(m.ulp)}};
}

json audit_to_json(const AuditResult& r) {
  json backends = json::array(), contexts = json::array(), cases = json::array(),
       divergences = json::array();
  for (const BackendOutcome& b : r.backends) backends.push_back(backend_json(r, b));
  for (const Context& c : r.contexts) contexts.push_back(context_json(c));
  for (const CaseRecord& c : r.cases) cases.push_back(case_json(c));
  for (const Divergence& d : r.divergences) divergences.push_back(divergence_json(d));
  json j = {{"schema_version", r.schema_version},
            {"started_at", r.started_at},
            {"hostname", r.hostname},
            {"scenario", scenario_json(r.scenario)},
            {"device", device_json(r.system)},
            {"backends", backends},
            {"contexts", contexts},
            {"cases", cases},
            {"divergences", divergences},
            {"summary", summary_json(r)}};
  if (!r.scenario.traffic.empty()) j["traffic"] = traffic_json(r);
  // What defines the run (lib/runner/run_fingerprint.h): the merge of shards and a manifest's
  // verification compare it. Absent from reports written before it was recorded.
  if (!r.fingerprint.empty()) j["fingerprint"] = r.fingerprint;
  if (r.probe) j["probe"] = probe_run_json(*r.probe);
  if (r.verify) j["verify"] = json::parse(verify_to_json(*r.verify).dump());
  if (r.shard) {
    j["shard"] = {{"index", r.shard->index},
                  {"count", r.shard->count},
                  {"filter", r.shard->filter},
                  {"owned_contexts", r.shard->owned}};
    if (!r.shard->selection.empty()) j["shard"]["selection"] = r.shard->selection;
  }
  return j;
}

std::string render_json_report(const AuditResult& result) {
  // error_handler replace: a stray invalid UTF-8 byte in a name or note must not make the whole
  // report fail to write.
  return audit_to_json(result).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace nvdet
