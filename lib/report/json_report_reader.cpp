#include "lib/report/json_report_reader.h"

#include <fmt/format.h>

#include <limits>
#include <string_view>
#include <vector>

#include "lib/core/bounded_file.h"
#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/runner/recount.h"
#include "lib/runner/result_classes.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"

namespace nvdet {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const json& v, const std::string& why) {
  throw json::other_error::create(501, why, &v);
}

// An integer field read as T: a JSON integer within T's range (and at least `least`). A float
// (1e89), a string or an out-of-range integer is refused rather than converted: converting an
// out-of-range float to an integer is undefined, and a wrapped integer would be a wrong report.
template <class T>
T integer(const json& v, std::string_view key, T least = std::numeric_limits<T>::min()) {
  const std::optional<T> n = json_integer<T>(v);
  if (!n || *n < least) {
    refuse(v, fmt::format("'{}' must be an integer from {} to {}", key, least,
                          std::numeric_limits<T>::max()));
  }
  return *n;
}

// The field `key` of `object` as an integer, `fallback` when absent.
template <class T>
T integer_or(const json& object, const char* key, T fallback,
             T least = std::numeric_limits<T>::min()) {
  return object.contains(key) ? integer<T>(object.at(key), key, least) : fallback;
}

template <class T>
T integer_at(const json& object, const char* key, T least = std::numeric_limits<T>::min()) {
  return integer<T>(object.at(key), key, least);
}

template <class T>
std::vector<T> integers(const json& array, const char* key) {
  if (!array.is_array()) refuse(array, std::string("'") + key + "' must be an array of integers");
  std::vector<T> out;
  out.reserve(array.size());
  for (const json& e : array) out.push_back(integer<T>(e, key));
  return out;
}

// An array of integers (an absent key reads as empty).
template <class T>
std::vector<T> integers_or_empty(const json& object, const char* key) {
  return object.contains(key) ? integers<T>(object.at(key), key) : std::vector<T>{};
}

// An optional count (0 when absent): a JSON integer from 0 to 2^63 - 1.
int64_t count(const json& object, const char* key) {
  return integer_or<int64_t>(object, key, 0, 0);
}

// The inverse of json_number: "nan", "inf" and "-inf" are strings.
double number(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw json::other_error::create(501, "'" + excerpt(s) + "' is not a number", &v);
  }
  return v.get<double>();
}

Hash128 hash(const json& v) {
  Hash128 h;
  if (!Hash128::from_hex(v.get<std::string>(), h)) {
    throw json::other_error::create(501, "'" + excerpt(v.get<std::string>()) + "' is not a hash",
                                    &v);
  }
  return h;
}

RunNotes notes(const json& v) {
  RunNotes n;
  for (const auto& [k, val] : v.items()) n[k] = val.get<std::string>();
  return n;
}

// A context value as a report writes it: a number (schema 2) or text (schema 1, "8", "whole"),
// read by its axis's rule; an unknown axis is refused when the context is made.
AxisValue axis_value_of(const std::string& axis, const json& v) {
  if (v.is_number_integer()) return integer<int64_t>(v, axis);
  if (!v.is_string())
    refuse(v, "context value of '" + excerpt(axis) + "' must be an integer or a word");
  const AxisSpec* a = find_axis(axis);
  return a ? axis_value_from_text(*a, v.get<std::string>()) : AxisValue(v.get<std::string>());
}

Expectation expectation(const std::string& s) {
  for (Expectation e : {Expectation::kInvariant, Expectation::kVariant, Expectation::kReport}) {
    if (expectation_name(e) == s) return e;
  }
  throw json::other_error::create(501, "unknown expectation '" + excerpt(s) + "'", nullptr);
}

SystemInfo system(const json& j) {
  SystemInfo s;
  s.nvdet_version = j.value("nvdet_version", "");
  s.host = j.value("host", "");
  s.cuda_built = j.value("cuda_built", false);
  s.compiled_architectures = j.value("compiled_architectures", "");
  s.cuda_fp_flags = j.value("cuda_fp_flags", "");
  s.cxx_fp_flags = j.value("cxx_fp_flags", "");
  s.driver_version = j.value("driver_version", "");
  s.cuda_runtime_version = j.value("cuda_runtime_version", "");
  s.cublas_version = j.value("cublas_version", "");
  s.device_error = j.value("device_error", "");
  for (const json& g : j.value("gpus", json::array())) {
    GpuInfo gi;
    gi.index = integer_or<int>(g, "index", 0, 0);
    gi.name = g.value("name", "");
    gi.sm_count = integer_or<int>(g, "sm_count", 0, 0);
    gi.compute_capability = g.value("compute_capability", "");
    gi.memory_bytes = integer_or<size_t>(g, "memory_bytes", 0);
    gi.l2_bytes = integer_or<size_t>(g, "l2_bytes", 0);
    s.gpus.push_back(gi);
  }
  return s;
}

FirstMismatch first_mismatch(const json& j) {
  FirstMismatch m;
  m.flat_index = integer_at<int64_t>(j, "flat_index", 0);
  m.coords = integers<int64_t>(j.at("coords"), "coords");
  m.a = number(j.at("a"));
  m.b = number(j.at("b"));
  m.a_bits = j.at("a_bits").get<std::string>();
  m.b_bits = j.at("b_bits").get<std::string>();
  m.ulp =
      j.at("ulp").is_null() ? std::numeric_limits<uint64_t>::max() : integer_at<uint64_t>(j, "ulp");
  return m;
}

OpDivergence op_divergence(const json& f) {
  return OpDivergence{integer_at<int32_t>(f, "step"), integer_at<int32_t>(f, "layer"),
                      f.at("op").get<std::string>()};
}

std::vector<double> numbers(const json& array, const char* key) {
  if (!array.is_array()) refuse(array, std::string("'") + key + "' must be an array of numbers");
  std::vector<double> out;
  out.reserve(array.size());
  for (const json& v : array) out.push_back(number(v));
  return out;
}

ServedCompletion served_completion(const json& j) {
  ServedCompletion c;
  c.text = j.at("text").get<std::string>();
  c.finish_reason = j.value("finish_reason", "");
  c.tokens = j.value("tokens", std::vector<std::string>{});
  c.logprobs = numbers(j.value("logprobs", json::array()), "logprobs");
  c.top_gaps = numbers(j.value("top_gaps", json::array()), "top_gaps");
  return c;
}

ServedDivergence served_divergence(const json& j) {
  ServedDivergence s;
  s.by_token = j.at("by_token").get<bool>();
  s.position = integer_at<int64_t>(j, "position", -1);
  s.baseline_piece = j.at("baseline_piece").get<std::string>();
  s.piece = j.at("piece").get<std::string>();
  s.baseline_id = integer_at<int32_t>(j, "baseline_id", -1);
  s.id = integer_at<int32_t>(j, "id", -1);
  s.baseline_logprob = number(j.at("baseline_logprob"));
  s.logprob = number(j.at("logprob"));
  s.baseline_top_gap = number(j.at("baseline_top_gap"));
  s.seen_alone = j.at("seen_alone").get<bool>();
  return s;
}

ProbeRun probe_run(const json& j) {
  ProbeRun p;
  p.url = j.at("url").get<std::string>();
  p.model = j.at("model").get<std::string>();
  p.api = j.at("api").get<std::string>();
  p.headers = j.value("headers", std::vector<std::string>{});
  p.body_json = j.value("body", "{}");
  p.stream = j.value("stream", false);
  p.control = integer_at<int32_t>(j, "control", 1);
  p.max_tokens = integer_at<int32_t>(j, "max_tokens", 1);
  p.logprobs = integer_or<int32_t>(j, "logprobs", 0, 0);
  p.temperature = number(j.at("temperature"));
  if (j.contains("seed") && !j.at("seed").is_null()) p.seed = integer_at<uint64_t>(j, "seed");
  p.prompts = j.value("prompts", std::vector<std::string>{});
  p.level = j.at("level").get<std::string>();
  return p;
}

// The metrics every parity object carries, under their JSON names.
ParityMetrics metrics(const json& j) {
  ParityMetrics m;
  m.logprob_abs_diff_max = number(j.at("logprob_abs_diff_max"));
  m.logprob_abs_diff_mean = number(j.at("logprob_abs_diff_mean"));
  m.mismatch_kl_mean = number(j.at("mismatch_kl_mean"));
  m.mismatch_kl_max = number(j.at("mismatch_kl_max"));
  m.k3_mean = number(j.at("k3_mean"));
  return m;
}

// The counts and metrics both parity objects carry, and the sampling distribution's metrics.
template <class P>
void read_parity_metrics(const json& j, P& p) {
  p.tokens = count(j, "tokens");
  p.bitwise_equal_tokens = count(j, "bitwise_equal_tokens");
  static_cast<ParityMetrics&>(p) = metrics(j);
  if (j.contains("first_op")) p.first_op = op_divergence(j.at("first_op"));
  if (j.contains("sampling")) p.sampling = metrics(j.at("sampling"));
}

// {"sampler": [...], "trainer": [...]}: one logprob per generated token on each side.
void read_logprobs(const json& j, int64_t tokens, std::vector<double>& sampler,
                   std::vector<double>& trainer) {
  for (const auto& [side, out] : {std::pair{"sampler", &sampler}, std::pair{"trainer", &trainer}}) {
    const json& a = j.at(side);
    if (!a.is_array() || static_cast<int64_t>(a.size()) != tokens) {
      refuse(a, std::string("'logprobs' '") + side + "' must list one number per token");
    }
    for (const json& v : a) out->push_back(number(v));
  }
}

// Serving traffic: what shared a probed request's step (json_report.cpp's probe_step_json).
ProbeStep probe_step(const json& j) {
  ProbeStep p;
  p.step = integer_at<int32_t>(j, "step", 0);
  p.cached_tokens = integer_at<int32_t>(j, "cached_tokens", 0);
  for (const json& e : j.at("engine_steps")) {
    EngineStep step;
    step.step = integer_at<int64_t>(e, "step", 0);
    step.decode_rows = integer_at<int32_t>(e, "decode_rows", 0);
    step.prefill_rows = integer_at<int32_t>(e, "prefill_rows", 0);
    for (const json& q : e.at("requests")) {
      step.requests.push_back({q.at("request").get<std::string>(),
                               integer_at<int32_t>(q, "rows", 0), q.at("decode").get<bool>()});
    }
    step.notes = notes(e.at("notes"));
    p.engine_steps.push_back(std::move(step));
  }
  return p;
}

TrafficParting traffic_parting(const json& j) {
  return TrafficParting{integer_at<int32_t>(j, "step", 0), probe_step(j.at("baseline")),
                        probe_step(j.at("here"))};
}

ParityRecord parity_record(const json& j) {
  ParityRecord p;
  read_parity_metrics(j, p);
  p.first_differing_token = integer_or<int64_t>(j, "first_differing_token", -1, -1);
  if (j.contains("logprobs")) {
    read_logprobs(j.at("logprobs"), p.tokens, p.sampler_logprobs, p.trainer_logprobs);
  }
  if (j.contains("sampling") && j.at("sampling").contains("logprobs")) {
    read_logprobs(j.at("sampling").at("logprobs"), p.tokens, p.sampling_sampler_logprobs,
                  p.sampling_trainer_logprobs);
  }
  return p;
}

ParitySummary parity_summary(const json& j) {
  ParitySummary p;
  read_parity_metrics(j, p);
  p.requests = count(j, "requests");
  if (j.contains("first")) {
    const json& f = j.at("first");
    p.first_context = f.at("context").get<std::string>();
    p.first_request = integer_at<int64_t>(f, "request");
    p.first_token = integer_at<int64_t>(f, "token", 0);
  }
  return p;
}

ParityExpectation parity_expectation(const std::string& word) {
  if (word == "bitwise") return ParityExpectation::kBitwise;
  if (word == "report") return ParityExpectation::kReport;
  if (word == "tolerance") return ParityExpectation::kTolerance;
  throw json::other_error::create(501, "unknown parity expectation '" + word + "'", nullptr);
}

AuditResult parse(const json& j, const std::string& what) {
  AuditResult r;
  r.schema_version = integer_at<int>(j, "schema_version");
  if (r.schema_version < kOldestReadableSchemaVersion || r.schema_version > kReportSchemaVersion) {
    throw json::other_error::create(501,
                                    "schema_version " + std::to_string(r.schema_version) +
                                        " (this nvdet reads " +
                                        std::to_string(kOldestReadableSchemaVersion) + " to " +
                                        std::to_string(kReportSchemaVersion) + ")",
                                    nullptr);
  }
  // It is written as it is read: the current version, whatever version it was read from.
  r.schema_version = kReportSchemaVersion;
  const json& sj = j.at("scenario");
  ScenarioSummary& s = r.scenario;
  s.name = sj.at("name").get<std::string>();
  s.path = sj.value("path", "");
  s.description = sj.value("description", "");
  s.op = sj.at("op").get<std::string>();
  s.dtype = sj.value("dtype", "");
  s.out_dtype = sj.value("out_dtype", "");
  s.seed = integer_or<uint64_t>(sj, "seed", 0);
  s.requests = integers_or_empty<int64_t>(sj, "requests");
  s.repeat = integer_or<int32_t>(sj, "repeat", 1, 1);
  for (const json& a : sj.value("axes", json::array())) {
    s.axes.emplace_back(a.at("name").get<std::string>(),
                        a.at("values").get<std::vector<std::string>>());
  }
  s.coord_names = sj.value("coord_names", std::vector<std::string>{});
  s.traffic = sj.value("traffic", "");
  const OpSpec* op_record = find_op(s.op);
  if (!op_record) refuse(sj.at("op"), "unknown op '" + excerpt(s.op) + "'");
  const OpKind op = op_record->kind;
  r.system = system(j.at("device"));
  if (j.contains("fingerprint")) {
    const json& f = j.at("fingerprint");
    if (!f.is_object()) refuse(f, "'fingerprint' must be an object of strings");
    for (const auto& [field, value] : f.items()) {
      if (!value.is_string())
        refuse(value, "'fingerprint' field '" + excerpt(field) + "' must be a string");
      r.fingerprint[field] = value.get<std::string>();
    }
  }
  r.started_at = j.value("started_at", "");
  r.hostname = j.value("hostname", "");

  for (const json& b : j.at("backends")) {
    BackendOutcome o;
    o.name = b.at("name").get<std::string>();
    o.description = b.value("description", "");
    o.gpu = b.value("gpu", false);
    o.expect = expectation(b.at("expect").get<std::string>());
    o.passed = b.at("passed").get<bool>();
    o.contexts_run = integer_or<int>(b, "contexts_run", 0, 0);
    o.divergent_contexts = integer_or<int>(b, "divergent_contexts", 0, 0);
    o.run_to_run_divergences = integer_or<int>(b, "run_to_run_divergences", 0, 0);
    o.max_distinct_results = integer_or<int>(b, "max_distinct_results", 1, 0);
    o.max_distinct_completions = integer_or<int>(b, "max_distinct_completions", 0, 0);
    o.verdict = b.value("verdict", "");
    o.stands_for = b.value("stands_for", std::map<std::string, std::string>{});
    o.skipped = b.value("skipped", false);
    o.skip_reason = b.value("skip_reason", "");
    if (b.contains("parity")) {
      o.parity_expect = parity_expectation(b.value("parity_expect", "report"));
      o.parity = parity_summary(b.at("parity"));
      if (o.parity_expect == ParityExpectation::kTolerance) {
        const json& limits = b.at("parity_tolerance");
        if (limits.contains("mismatch_kl_max"))
          o.parity_tolerance.mismatch_kl_max = number(limits.at("mismatch_kl_max"));
        if (limits.contains("logprob_abs_diff_max"))
          o.parity_tolerance.logprob_abs_diff_max = number(limits.at("logprob_abs_diff_max"));
      }
    }
    r.backends.push_back(std::move(o));
  }
  // A context as the report holds it: its index, id and values (in the order of the scenario's
  // axes: a JSON object has no order of its own), made and checked as every context is
  // (make_context); the id must be the one its values make.
  std::map<int, Context> contexts;
  const auto add_context = [&](int index, const std::string& id, const json& values) {
    std::vector<std::pair<std::string, AxisValue>> typed;
    for (const auto& [axis, ignored] : s.axes) {
      if (values.contains(axis)) typed.emplace_back(axis, axis_value_of(axis, values.at(axis)));
    }
    Context context =
        make_context(op, index, std::move(typed), nullptr,
                     "cannot read audit report '" + what + "': context '" + excerpt(id) + "'");
    if (context.id != id) {
      throw_input_error("cannot read audit report '" + what + "': context '" + excerpt(id) +
                        "' does not match its values (" + excerpt(context.id) + ")");
    }
    if (!contexts.emplace(index, context).second && contexts.at(index).id != id) {
      throw_input_error("cannot read audit report '" + what + "': contexts '" + excerpt(id) +
                        "' and '" + excerpt(contexts.at(index).id) + "' have one index " +
                        std::to_string(index));
    }
  };
  const bool table = j.contains("contexts");  // schema 2; in schema 1 each case carries its own
  for (const json& c : j.value("contexts", json::array())) {
    // The table holds each context once (schema 1's cases repeat theirs, one per case).
    const int index = integer_at<int>(c, "index", 0);
    if (contexts.count(index)) {
      throw_input_error("cannot read audit report '" + what + "': context index " +
                        std::to_string(index) + " is given twice");
    }
    add_context(index, c.at("id").get<std::string>(), c.value("values", json::object()));
  }
  for (const json& c : j.at("cases")) {
    CaseRecord rec;
    rec.backend = c.at("backend").get<std::string>();
    rec.context_index = integer_at<int>(c, "context_index", 0);
    if (!table) {
      add_context(rec.context_index, c.at("context").get<std::string>(),
                  c.value("context_values", json::object()));
    } else if (!contexts.count(rec.context_index)) {
      refuse(c, "case context_index " + std::to_string(rec.context_index) +
                    " is not in the report's 'contexts'");
    }
    rec.repeat = integer_or<int>(c, "repeat", 0, 0);
    rec.seconds = number(c.value("seconds", json(0.0)));
    rec.generated_tokens = count(c, "generated_tokens");
    rec.notes = notes(c.value("notes", json::object()));
    for (const json& q : c.at("requests")) {
      RequestRecord rr;
      rr.request = integer_at<int64_t>(q, "request");
      rr.hash = hash(q.at("hash"));
      for (const json& t : q.value("token_hashes", json::array()))
        rr.token_hashes.push_back(hash(t));
      rr.completion = integers_or_empty<int32_t>(q, "completion");
      if (q.contains("parity")) rr.parity = parity_record(q.at("parity"));
      if (q.contains("served")) rr.served = served_completion(q.at("served"));
      rec.requests.push_back(std::move(rr));
    }
    r.cases.push_back(std::move(rec));
  }
  for (auto& [index, c] : contexts) r.contexts.push_back(std::move(c));
  // Divergences and verify changes name their contexts by id; the context table gives each id
  // its index (-1 for an id it lacks: its label is then the id itself).
  std::map<std::string, int> index_of_id;
  for (const Context& c : r.contexts) index_of_id.emplace(c.id, c.index);
  auto index_of_context = [&index_of_id](const std::string& id) {
    const auto it = index_of_id.find(id);
    return it == index_of_id.end() ? -1 : it->second;
  };
  for (const json& d : j.at("divergences")) {
    Divergence v;
    v.backend = d.at("backend").get<std::string>();
    const std::string kind = d.at("kind").get<std::string>();
    const std::optional<DivergenceKind> parsed_kind = parse_divergence_kind(kind);
    if (!parsed_kind) {
      throw json::other_error::create(
          501, "unknown divergence kind '" + excerpt(kind) + "' (expected context or run-to-run)",
          nullptr);
    }
    v.kind = *parsed_kind;
    v.request = integer_at<int64_t>(d, "request");
    v.token = integer_or<int64_t>(d, "token", 0, 0);
    v.baseline_context = d.at("baseline_context").get<std::string>();
    v.context = d.at("context").get<std::string>();
    v.baseline_context_index = index_of_context(v.baseline_context);
    v.context_index = index_of_context(v.context);
    v.repeat = integer_or<int>(d, "repeat", 0, 0);
    v.first_mismatch = first_mismatch(d.at("first_mismatch"));
    v.max_abs_diff = number(d.value("max_abs_diff", json(0.0)));
    v.max_rel_diff = number(d.value("max_rel_diff", json(0.0)));
    v.mismatch_count = count(d, "mismatch_count");
    v.mismatched_tokens = count(d, "mismatched_tokens");
    v.tokens = count(d, "tokens");
    v.baseline_notes = notes(d.value("baseline_notes", json::object()));
    v.notes = notes(d.value("notes", json::object()));
    if (d.contains("completion")) {
      const json& c = d.at("completion");
      CompletionDivergence cd;
      cd.step = integer_at<int64_t>(c, "step", 0);
      cd.baseline_token = integer_at<int32_t>(c, "baseline_token");
      cd.token = integer_at<int32_t>(c, "token");
      cd.baseline_logit_of_baseline_token = number(c.at("baseline_logit_of_baseline_token"));
      cd.baseline_logit_of_token = number(c.at("baseline_logit_of_token"));
      cd.logit_of_baseline_token = number(c.at("logit_of_baseline_token"));
      cd.logit_of_token = number(c.at("logit_of_token"));
      cd.baseline_margin = number(c.at("baseline_margin"));
      if (c.contains("baseline_prob_of_baseline_token")) {
        cd.sampled = true;
        cd.baseline_prob_of_baseline_token = number(c.at("baseline_prob_of_baseline_token"));
        cd.baseline_prob_of_token = number(c.at("baseline_prob_of_token"));
      }
      v.completion = cd;
    }
    if (d.contains("first_op")) v.first_op = op_divergence(d.at("first_op"));
    if (d.contains("traffic")) v.traffic = traffic_parting(d.at("traffic"));
    if (d.contains("served")) v.served = served_divergence(d.at("served"));
    r.divergences.push_back(std::move(v));
  }
  const json& sum = j.at("summary");
  r.summary.passed = sum.at("passed").get<bool>();
  r.summary.backends = integer_or<int>(sum, "backends", 0, 0);
  r.summary.contexts = integer_or<int>(sum, "contexts", 0, 0);
  r.summary.cases = integer_or<int>(sum, "cases", 0, 0);
  r.summary.divergences = integer_or<int>(sum, "divergences", 0, 0);
  r.summary.failed_backends = integer_or<int>(sum, "failed_backends", 0, 0);
  r.summary.skipped_backends = integer_or<int>(sum, "skipped_backends", 0, 0);
  r.summary.seconds = number(sum.value("seconds", json(0.0)));
  if (j.contains("verify")) {
    const json& v = j.at("verify");
    VerifyResult vr;
    vr.manifest = v.value("manifest", "");
    vr.scenario = v.value("scenario", "");
    vr.passed = v.at("passed").get<bool>();
    vr.verdict = v.value("verdict", "");
    vr.compared = integer_or<int>(v, "compared", 0, 0);
    vr.environment = v.value("environment", std::vector<std::string>{});
    vr.recorded_as = v.value("recorded_as", std::map<std::string, std::string>{});
    if (v.contains("strict")) vr.strict = v.at("strict").get<bool>();
    for (const json& c : v.value("changes", json::array())) {
      ManifestChange ch;
      ch.backend = c.at("backend").get<std::string>();
      ch.expectation = c.value("expectation", "");
      ch.context = c.at("context").get<std::string>();
      ch.context_index = index_of_context(ch.context);
      ch.repeat = integer_or<int>(c, "repeat", 0, 0);
      ch.request = integer_at<int64_t>(c, "request");
      ch.recorded = hash(c.at("recorded_hash"));
      ch.now = hash(c.at("hash"));
      ch.first_token =
          c.at("first_token").is_null() ? -1 : integer_at<int64_t>(c, "first_token", 0);
      ch.changed_tokens = count(c, "changed_tokens");
      ch.tokens_recorded = count(c, "tokens_recorded");
      ch.tokens_now = count(c, "tokens");
      ch.fails = c.value("fails", false);
      vr.changes.push_back(std::move(ch));
    }
    auto refs = [](const json& a) {
      std::vector<ManifestEntryRef> out;
      for (const json& x : a) {
        out.push_back({x.at("backend").get<std::string>(), x.at("context").get<std::string>(),
                       integer_or<int>(x, "repeat", 0, 0), integer_at<int64_t>(x, "request")});
      }
      return out;
    };
    vr.missing = refs(v.value("missing", json::array()));
    vr.added = refs(v.value("new", json::array()));
    r.verify = std::move(vr);  // summary.passed was read as written
  }
  if (j.contains("probe")) r.probe = probe_run(j.at("probe"));
  if (j.contains("shard")) {
    const json& sh = j.at("shard");
    ShardInfo info;
    info.count = integer_at<int>(sh, "count", 1);
    info.index = integer_at<int>(sh, "index", 1);
    if (info.index > info.count) refuse(sh, "'shard' index must be from 1 to its count");
    info.filter = sh.value("filter", "");
    info.selection = integers_or_empty<int>(sh, "selection");
    info.owned = integers<int>(sh.at("owned_contexts"), "owned_contexts");
    r.shard = std::move(info);
  }
  // The verdicts written in the file are claims: decided again from the hashes.
  recount_result(r, what);
  assign_result_classes(r);  // the analysis the writers draw, as the audit made it
  return r;
}

}  // namespace

AuditResult audit_from_json(const json& j, const std::string& what) {
  // A bench table, a manifest or any other JSON is told apart by its shape before any field is
  // read, so that it gets one plain sentence instead of the first field lookup that fails.
  const bool shaped = j.is_object() && j.contains("schema_version") && j.contains("scenario") &&
                      j["scenario"].is_object() && j.contains("backends") &&
                      j["backends"].is_array() && j.contains("cases") && j["cases"].is_array() &&
                      j.contains("summary") && j["summary"].is_object();
  if (!shaped) {
    throw_input_error("cannot read audit report '" + what +
                      "': not an audit report (nvdet audit's JSON report: an object with "
                      "schema_version, scenario, backends, cases and summary)");
  }
  try {
    return parse(j, what);
  } catch (const json::exception& e) {
    std::string why = e.what();
    // nlohmann prefixes "[json.exception.type_error.302] "; keep the sentence.
    if (const size_t at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    throw_input_error("cannot read audit report '" + what + "': " + why);
  }
}

AuditResult read_audit_report(const std::string& path) {
  // Bounded like every input file: a regular file under the cap, nesting limited, one sentence
  // for any failure.
  const std::string text = read_bounded_file(path, kMaxAuditReportBytes, "audit report");
  return audit_from_json(parse_json_input(text, "audit report '" + path + "'"), path);
}

}  // namespace nvdet
