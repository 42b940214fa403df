#include "lib/probe/probe_runner.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/probe/filler_prompts.h"
#include "lib/probe/http_client.h"
#include "lib/probe/served_output.h"
#include "lib/probe/served_request.h"
#include "lib/probe/sse_stream.h"
#include "lib/runner/budget.h"
#include "lib/runner/probe_verdict.h"
#include "lib/runner/result_classes.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/scenario/context_filter.h"

namespace nvdet {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// "2026-12-01T20:46:03Z", as the audit stamps its reports.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  char text[32];
  if (!gmtime_r(&now, &tm) || !std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm))
    return "";
  return text;
}

std::string host() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

// The scenario with the concurrency axis in its sweep (first, when the file does not name it):
// every loaded context says how many fillers ran beside the probe.
Scenario with_concurrency_axis(const Scenario& s) {
  Scenario out = s;
  for (const SweepAxis& a : out.sweep)
    if (a.axis == Axis::kConcurrency) return out;
  out.sweep.insert(out.sweep.begin(),
                   SweepAxis{Axis::kConcurrency, {int64_t{s.probe.fillers.concurrency}}, {}});
  return out;
}

// The audit's summary of the scenario with the concurrency axis, whose first value is the
// control's 0.
ScenarioSummary probe_summary(const Scenario& s) {
  ScenarioSummary m = summarize_scenario(with_concurrency_axis(s));
  m.dtype = "server";  // whatever the server computes in: not nvdet's to say
  m.out_dtype.clear();
  for (auto& [axis, values] : m.axes)
    if (axis == "concurrency") values.insert(values.begin(), "0");
  return m;
}

ProbeRun probe_run(const Scenario& s) {
  const ProbeSpec& p = s.probe;
  ProbeRun r;
  r.url = endpoint_request_url(p.endpoint);
  r.model = p.endpoint.model;
  r.api = std::string(server_api_name(p.endpoint.api));
  if (!p.endpoint.api_key_env.empty()) r.headers.push_back("Authorization");
  for (const auto& [header, variable] : p.endpoint.headers_env) r.headers.push_back(header);
  r.body_json = p.endpoint.body_json;
  r.stream = p.endpoint.stream;
  r.control = p.control;
  r.max_tokens = p.probe.max_tokens;
  r.logprobs = p.probe.logprobs;
  r.temperature = p.probe.temperature;
  if (p.probe.seeded) r.seed = p.probe.seed;
  for (const int64_t q : s.requests)
    r.prompts.push_back(p.probe.prompts.at(static_cast<size_t>(q)).substr(0, 200));
  return r;
}

// One request's answer as it arrives: a stream's events, or the whole body at the end.
struct Answer {
  explicit Answer(ServerApi api) : reader(api) {}
  ServedOutputReader reader;
  SseStream sse;
  bool streamed = false;
  bool done = false;
  int events = 0;
  void read(std::string_view data) {
    ++events;
    (void)reader.add_text(data);
  }
  // Reads a piece of a stream; false (the transfer stops) once it is malformed. Called from
  // inside libcurl: never throws.
  bool feed(std::string_view bytes) {
    sse.feed(bytes, [this](std::string_view data) { read(data); });
    return reader.error().empty();
  }
  int64_t chunks() const { return reader.output().chunks; }
};

class ProbeRunner {
 public:
  ProbeRunner(const Scenario& s, const ProbeOptions& o)
      : s_(s),
        o_(o),
        e_(s.probe.endpoint),
        url_(endpoint_request_url(e_)),
        headers_(endpoint_headers(e_)) {}

  AuditResult run(const std::vector<Context>& contexts);

 private:
  HttpRequest request(const std::string& prompt, const RequestSampling& sampling) const {
    HttpRequest r;
    r.url = url_;
    r.headers = headers_;
    r.body = request_body(e_, prompt, sampling);
    r.timeout_s = e_.timeout_s;
    r.inactivity_timeout_s = e_.inactivity_timeout_s;
    r.max_response_bytes = e_.max_response_bytes;
    r.retries = e_.retries;
    return r;
  }
  RequestSampling probe_sampling() const {
    const ProbePrompts& p = s_.probe.probe;
    return {p.max_tokens, p.temperature, p.seeded ? std::optional<uint64_t>(p.seed) : std::nullopt,
            p.logprobs, e_.stream};
  }
  void start(HttpClient& client, HttpRequest r, Answer& answer, bool stream, const std::string& who,
             const Context& c);
  ServedOutput run_alone(const std::string& prompt, int64_t request, const Context& c);
  ServedOutput run_loaded(const std::string& prompt, int64_t request, const Context& c,
                          RunNotes& notes);
  void compare(const RequestRecord& record, const ServedOutput& out, const Context& c, int repeat,
               const RunNotes& notes);

  const Scenario& s_;
  const ProbeOptions& o_;
  const EndpointSpec& e_;
  const std::string url_;
  const std::vector<std::string> headers_;
  AuditResult result_;
  const Context* control_ = nullptr;
  struct Alone {
    ServedOutput first;
    Hash128 first_hash;
    std::set<Hash128> hashes;  // every completion the prompt gave alone
  };
  std::map<int64_t, Alone> alone_;
};

// Starts a request whose answer is read into `answer`. Any failure ends the probe with one
// sentence naming the server, the request (`who`: "the probe (request 0)", "filler 3") and the
// context.
void ProbeRunner::start(HttpClient& client, HttpRequest r, Answer& answer, bool stream,
                        const std::string& who, const Context& c) {
  answer.streamed = stream;
  if (stream) r.on_data = [&answer](std::string_view bytes) { return answer.feed(bytes); };
  client.start(std::move(r), [this, &answer, who, &c](int, HttpResponse response) {
    answer.done = true;
    const auto fail = [&](const std::string& why) {
      throw_runtime_error(fmt::format("server {} {} ({}, in {})", url_, why, who, c.id));
    };
    const auto read = [&answer](std::string_view data) { answer.read(data); };
    if (!answer.reader.error().empty()) fail(answer.reader.error());
    if (!response.error.empty()) fail(response.error);
    if (!response.ok()) {
      fail(fmt::format(
          "answered HTTP {}: '{}'", response.status,
          excerpt(response.body.empty() ? std::string("(no body)") : response.body, 300)));
    }
    if (answer.streamed) answer.sse.finish(read);
    // A server that ignores "stream" answers with one JSON body, which holds no SSE event.
    if (!answer.streamed || answer.events == 0) read(response.body);
    if (!answer.reader.error().empty()) fail(answer.reader.error());
  });
}

ServedOutput ProbeRunner::run_alone(const std::string& prompt, int64_t request, const Context& c) {
  HttpClient client;
  Answer probe(e_.api);
  start(client, this->request(prompt, probe_sampling()), probe, e_.stream,
        fmt::format("the probe (request {})", request), c);
  client.run();
  return probe.reader.output();
}

// The probe among `concurrency` fillers, sent when the context's arrival says; every request is
// waited for, so that each round puts the same load on the server and leaves none behind.
ServedOutput ProbeRunner::run_loaded(const std::string& prompt, int64_t request, const Context& c,
                                     RunNotes& notes) {
  const int64_t fillers = c.integer(Axis::kConcurrency);
  const int32_t words = static_cast<int32_t>(c.integer(Axis::kFillerWords));
  const int32_t max_tokens = static_cast<int32_t>(c.integer(Axis::kFillerMaxTokens));
  const std::string& arrival = c.word(Axis::kArrival);
  HttpClient client;
  std::vector<std::unique_ptr<Answer>> load;
  Answer probe(e_.api);
  const auto send_probe = [&] {
    int64_t chunks = 0, streaming = 0;
    for (const auto& f : load) {
      chunks += f->chunks();
      streaming += f->chunks() > 0 && !f->done;
    }
    notes[fmt::format("request {} sent", request)] = fmt::format(
        "after {} filler chunks, {} of {} fillers streaming", chunks, streaming, load.size());
    start(client, this->request(prompt, probe_sampling()), probe, e_.stream,
          fmt::format("the probe (request {})", request), c);
  };
  const auto send_fillers = [&] {
    for (int64_t i = 0; i < fillers; ++i) {
      load.push_back(std::make_unique<Answer>(e_.api));
      start(client,
            this->request(filler_prompt(s_.seed, i, words),
                          RequestSampling{max_tokens, 0.0, std::nullopt, 0, true}),
            *load.back(), true, fmt::format("filler {}", i), c);
    }
  };
  if (arrival == "first") {
    send_probe();
    send_fillers();
  } else {
    send_fillers();
    // mid: half the tokens the fillers asked for have streamed; last: each filler is streaming.
    const int64_t half = std::max<int64_t>(1, fillers * max_tokens / 2);
    client.run([&] {
      int64_t chunks = 0;
      bool each = true, all_done = true;
      for (const auto& f : load) {
        chunks += f->chunks();
        each = each && (f->chunks() > 0 || f->done);
        all_done = all_done && f->done;
      }
      return all_done || (arrival == "last" ? each : chunks >= half);
    });
    send_probe();
  }
  client.run();
  return probe.reader.output();
}

// Each run against the prompt's first run alone: a difference is a divergence, marked when the
// same completion also came alone (the control's nondeterminism, not the load's).
void ProbeRunner::compare(const RequestRecord& record, const ServedOutput& out, const Context& c,
                          int repeat, const RunNotes& notes) {
  const bool control = &c == control_;
  const auto [it, first] = alone_.try_emplace(record.request);
  Alone& alone = it->second;
  if (control) alone.hashes.insert(record.hash);
  if (first) {
    alone.first = out;
    alone.first_hash = record.hash;
    return;
  }
  if (record.hash == alone.first_hash) return;
  std::optional<Divergence> d = compare_served(alone.first, out);
  if (!d) d = Divergence{};  // the hashes say they differ: keep it, whatever part it was in
  d->backend = e_.name;
  d->kind = control ? DivergenceKind::kRunToRun : DivergenceKind::kContext;
  d->request = record.request;
  d->baseline_context = control_->id;
  d->baseline_context_index = control_->index;
  d->context = c.id;
  d->context_index = c.index;
  d->repeat = repeat;
  d->notes = notes;
  if (!d->served) d->served = ServedDivergence{};
  d->served->seen_alone = alone.hashes.count(record.hash) > 0;
  result_.divergences.push_back(std::move(*d));
}

AuditResult ProbeRunner::run(const std::vector<Context>& contexts) {
  const auto t0 = Clock::now();
  result_.started_at = utc_now();
  result_.hostname = host();
  result_.scenario = probe_summary(s_);
  result_.system = collect_system_info();
  result_.probe = probe_run(s_);
  result_.probe->url = url_;
  result_.fingerprint = run_fingerprint(s_);
  result_.fingerprint["probe.url"] = url_;
  result_.fingerprint.merge(build_fingerprint(result_.system));
  result_.contexts = contexts;
  AuditProgress progress;
  progress.backend = e_.name;
  progress.contexts = static_cast<int>(contexts.size());
  for (const Context& c : contexts) {
    if (is_probe_control(c)) control_ = &c;
    progress.total += is_probe_control(c) ? s_.probe.control : s_.repeat;
  }
  if (!control_ || control_->index != contexts.front().index)
    throw_runtime_error("the probe's control is not its first context");
  for (const Context& c : contexts) {
    ++progress.context_number;
    progress.context = c.id;
    const bool control = &c == control_;
    for (int rep = 0; rep < (control ? s_.probe.control : s_.repeat); ++rep) {
      if (o_.on_progress) o_.on_progress(progress);
      CaseRecord rec;
      rec.backend = e_.name;
      rec.context_index = c.index;
      rec.repeat = rep;
      const auto t = Clock::now();
      for (const int64_t request : s_.requests) {
        const std::string& prompt = s_.probe.probe.prompts.at(static_cast<size_t>(request));
        RunNotes notes;
        const ServedOutput out =
            control ? run_alone(prompt, request, c) : run_loaded(prompt, request, c, notes);
        RequestRecord record = served_record(request, out);
        compare(record, out, c, rep, notes);
        rec.notes.insert(notes.begin(), notes.end());
        rec.requests.push_back(std::move(record));
      }
      rec.seconds = seconds_since(t);
      result_.cases.push_back(std::move(rec));
      ++progress.done;
      if (o_.on_progress) o_.on_progress(progress);
    }
  }
  // The level of the first answer alone: what every run was compared at.
  result_.probe->level = alone_.empty() ? "text" : served_level(alone_.begin()->second.first);
  result_.scenario.coord_names = served_coord_names(result_.probe->level);
  BackendOutcome o;
  o.name = e_.name;
  o.description = fmt::format("OpenAI-compatible server at {} (model {}, {} API)", e_.url, e_.model,
                              server_api_name(e_.api));
  o.expect = s_.backends.front().expect;
  o.scenario_line = s_.backends.front().where.line;
  assign_result_classes(result_);
  decide_probe_verdict(o, result_, o_.shard.has_value());
  result_.backends = {std::move(o)};
  result_.shard = o_.shard;
  tally_summary(result_, static_cast<int>(contexts.size()));
  result_.summary.seconds = seconds_since(t0);
  return std::move(result_);
}

}  // namespace

std::vector<Context> probe_contexts(const Scenario& s) {
  std::vector<Context> out;
  const AxisSettings defaults = axis_defaults(s);
  out.push_back(make_context(s.op, 0, {{"concurrency", AxisValue(int64_t{0})}}, &defaults, s.path));
  for (Context& c : expand_contexts(with_concurrency_axis(s))) {
    // Rebuilt at its place after the control, so that its id and index are what they are.
    out.push_back(make_context(s.op, static_cast<int>(out.size()), c.values, &defaults, s.path));
  }
  return out;
}

namespace {

// Every filler and the probe hold a connection (a file descriptor) at once: raise the soft limit
// toward the hard one where the sweep needs more, and say so where even that is too few, before
// anything is sent.
void check_connection_limit(const std::vector<Context>& contexts) {
  int64_t most = 0;
  for (const Context& c : contexts) most = std::max(most, c.integer(Axis::kConcurrency));
  const rlim_t needed = static_cast<rlim_t>(most) + 64;  // the probe, stdio, reports, libcurl's own
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
  rlimit raised = limit;
  raised.rlim_cur = std::min(needed, limit.rlim_max);
  if (::setrlimit(RLIMIT_NOFILE, &raised) == 0 && raised.rlim_cur >= needed) return;
  throw_runtime_error(fmt::format(
      "concurrency {} needs about {} open files at once, more than this process may open ({}, "
      "ulimit -n)",
      most, needed, limit.rlim_max));
}

}  // namespace

std::vector<Context> check_probe(Scenario& s, const ProbeOptions& options) {
  if (!op_spec(s.op).server) {
    throw_input_error(SourceLocation{s.path, 0, 0},
                      "scenario '" + s.name + "' is not a server probe (op " +
                          std::string(op_name(s.op)) + "); run it with nvdet audit");
  }
  EndpointSpec& e = s.probe.endpoint;
  if (!options.url.empty()) {
    if (const std::optional<std::string> why = endpoint_url_problem(options.url))
      throw_input_error("--url " + *why + ", got '" + excerpt(options.url) + "'");
    e.url = normalized_endpoint_url(options.url);
  }
  (void)endpoint_headers(e);  // every variable set, before anything is sent
  check_budget(s, estimate_scenario(s, false), Budget{}, false, std::nullopt);
  std::vector<Context> contexts = probe_contexts(s);
  check_connection_limit(contexts);
  const ContextFilter filter(options.context_filter);
  if (filter.empty()) return contexts;
  std::vector<Context> kept = select_contexts(contexts, filter);
  if (kept.empty() && !options.filter_spans_scenarios)
    throw_input_error(no_match_text(filter, contexts));
  return kept;
}

AuditResult run_probe(const Scenario& s, const ProbeOptions& options,
                      const std::vector<Context>& contexts) {
  return ProbeRunner(s, options).run(contexts);
}

}  // namespace nvdet
