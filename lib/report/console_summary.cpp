#include "lib/report/console_summary.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "lib/core/checked_parse.h"
#include "lib/report/parity_section.h"
#include "lib/report/probe_section.h"
#include "lib/report/report_text.h"
#include "lib/report/traffic_section.h"
#include "lib/report/verify_report.h"
#include "lib/runner/verdict.h"

namespace nvdet {
namespace {

// "batch=34..64,128" style: the contexts where a backend diverged from its baseline, grouped by
// consecutive indices so that a long sweep stays one line.
std::string divergent_contexts_line(const AuditResult& r, const std::string& backend) {
  std::set<int> idx;
  std::map<int, std::string> ids;
  for (const Context& c : r.contexts) ids[c.index] = c.id;
  for (const Divergence& d : r.divergences) {
    if (d.backend == backend && d.kind == DivergenceKind::kContext) idx.insert(d.context_index);
  }
  std::string out;
  int shown = 0;
  for (auto it = idx.begin(); it != idx.end() && shown < 12; ++shown) {
    auto end = it;
    while (std::next(end) != idx.end() && *std::next(end) == *end + 1) ++end;
    out += (out.empty() ? "" : ", ") + ids[*it];
    if (end != it) out += " .. " + ids[*end];
    it = std::next(end);
  }
  if (shown == 12) out += ", ...";
  return out;
}

}  // namespace

namespace {

// Model scenarios: the range of a backend's tokens/s and seconds over its cases ("" when its
// cases generate no tokens), e.g. "373-2827 tokens/s per case (5.49-8.62 s)".
std::string throughput_range(const AuditResult& r, const std::string& backend) {
  std::vector<double> rates, seconds;
  for (const CaseRecord* c : report_text::decoding_cases(r)) {
    if (c->backend != backend) continue;
    rates.push_back(report_text::tokens_per_second(*c));
    seconds.push_back(c->seconds);
  }
  if (rates.empty()) return "";
  const auto [rate_lo, rate_hi] = std::minmax_element(rates.begin(), rates.end());
  const auto [s_lo, s_hi] = std::minmax_element(seconds.begin(), seconds.end());
  return fmt::format("{:.0f}-{:.0f} tokens/s per case ({:.3g}-{:.3g} s)", *rate_lo, *rate_hi, *s_lo,
                     *s_hi);
}

// Model scenarios whose contexts fall in several groups (a request-defining axis such as
// `sampler`): the most distinct completions of one request in each group, "" for one group.
std::string completions_by_group(const AuditResult& r, const std::string& backend) {
  std::map<std::string, std::map<int64_t, std::set<std::vector<int32_t>>>> groups;
  for (const CaseRecord& c : r.cases) {
    if (c.backend != backend) continue;
    for (const RequestRecord& q : c.requests) {
      if (!q.completion.empty()) groups[context_of(r, c).group][q.request].insert(q.completion);
    }
  }
  if (groups.size() < 2) return "";
  std::string out;
  for (const auto& [group, requests] : groups) {
    size_t most = 0;
    for (const auto& [request, set] : requests) most = std::max(most, set.size());
    out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", group, most);
  }
  return out;
}

}  // namespace

std::string render_console_summary(const AuditResult& r) {
  std::string s;
  s += fmt::format("scenario {} ({}, {}): {} contexts x {} backends, {} repeat{}\n",
                   r.scenario.name, r.scenario.op, r.scenario.dtype, r.summary.contexts,
                   r.summary.backends, r.scenario.repeat, r.scenario.repeat == 1 ? "" : "s");
  const std::string device =
      r.system.gpus.empty()
          ? std::string("CPU only")
          : fmt::format("{} ({} SMs, driver {}, CUDA {}, cuBLAS {})", r.system.gpus[0].name,
                        r.system.gpus[0].sm_count, r.system.driver_version,
                        r.system.cuda_runtime_version, r.system.cublas_version);
  s += "device: " + device + "\n";
  for (const BackendOutcome& o : r.backends) {
    if (o.skipped) {
      s += fmt::format("  SKIP {:<20} expect {:<9} {}\n", o.name, expectation_name(o.expect),
                       o.skip_reason);
      continue;
    }
    s += fmt::format("  {} {:<20} expect {:<9} {}\n", o.passed ? "PASS" : "FAIL", o.name,
                     expectation_name(o.expect), o.verdict);
    const std::string throughput = throughput_range(r, o.name);
    if (!throughput.empty()) s += "       decode: " + throughput + "\n";
    s += parity_console_lines(r, o);
    s += probe_console_lines(r, o);
    const Divergence* first = nullptr;
    for (const Divergence& d : r.divergences) {
      if (d.backend == o.name) {
        first = &d;
        break;
      }
    }
    if (r.probe) continue;  // a probe's runs are described by its own lines above
    if (!first) {
      s += traffic_console_lines(r, o);
      continue;
    }
    s += "       first mismatch: " + describe_first_mismatch(*first, r.scenario.coord_names) + "\n";
    s += fmt::format("       max |diff| {:.3g}, {} elements in {} of {} tokens differ\n",
                     first->max_abs_diff, first->mismatch_count, first->mismatched_tokens,
                     first->tokens);
    for (const auto& [key, value] : first->notes) {
      auto it = first->baseline_notes.find(key);
      if (it != first->baseline_notes.end() && it->second != value) {
        s += fmt::format("       {}: {} at the baseline, {} here\n", key, it->second, value);
      }
    }
    if (const auto t = report_text::token_level_result(r, o)) {
      if (!t->completions.empty()) {
        s += "       completions: " + t->completions + "\n";
        const std::string by_group = completions_by_group(r, o.name);
        if (!by_group.empty())
          s += "       most distinct completions per request, by group: " + by_group + "\n";
      }
      if (!t->first_flip.empty()) s += "       first token flip: " + t->first_flip + "\n";
      if (!t->sampled.empty()) s += "       sampled: " + t->sampled + "\n";
      if (!t->first_op.empty()) s += "       its bits parted first at " + t->first_op + "\n";
    }
    s += traffic_console_lines(r, o);
    const std::string where = divergent_contexts_line(r, o.name);
    if (!where.empty()) s += "       diverging contexts: " + where + "\n";
  }
  if (r.verify) s += render_verify_text(*r.verify);
  if (r.shard && !ran_nothing(r)) {
    s += fmt::format("shard {} of {}: {} contexts owned, {} run as baselines only\n",
                     r.shard->index, r.shard->count, r.shard->owned.size(),
                     r.summary.contexts - static_cast<int>(r.shard->owned.size()));
  }
  return s + render_verdict_line(r) + "\n";
}

std::string render_verdict_line(const AuditResult& r) {
  const int ran = r.summary.backends - r.summary.skipped_backends;
  if (ran_nothing(r)) {
    return fmt::format(
        "{} RAN NOTHING: no case ran ({} of {} backends skipped, {} contexts); exit code 5",
        report_text::command_name(r), r.summary.skipped_backends, r.summary.backends,
        r.summary.contexts);
  }
  return fmt::format(
      "{} {}: {} of {} backends met their expectation{}{} ({:.1f} s)", report_text::command_name(r),
      r.summary.passed ? "PASSED" : "FAILED", ran - r.summary.failed_backends, ran,
      r.summary.skipped_backends ? fmt::format(", {} skipped", r.summary.skipped_backends)
                                 : std::string(),
      !r.verify          ? std::string()
      : r.verify->passed ? ", manifest verified"
                         : ", manifest verify FAILED",
      r.summary.seconds);
}

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double progress_interval(double requested) {
  if (requested >= 0) return requested;
  if (const char* env = std::getenv("NVDET_PROGRESS_INTERVAL")) {
    const std::optional<double> v = parse_real(env);
    if (v && *v >= 0 && *v < 1e9) return *v;
  }
  return 30.0;
}

}  // namespace

size_t terminal_columns(int fd) {
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return std::max<size_t>(ws.ws_col, 2);
  if (const char* env = std::getenv("COLUMNS")) {
    const std::optional<int64_t> v = parse_integer<int64_t>(env);
    if (v && *v >= 2 && *v <= 100000) return static_cast<size_t>(*v);
  }
  return 80;
}

TerminalProgress::TerminalProgress(std::FILE* stream, double interval_s)
    : stream_(stream),
      terminal_(stream && ::isatty(::fileno(stream))),
      interval_s_(progress_interval(interval_s)),
      started_(now_seconds()),
      last_line_(started_) {}

void TerminalProgress::update(int done, int total, const std::string& backend,
                              const std::string& context, int context_number, int contexts,
                              const std::string& detail) {
  const std::string what = detail.empty() ? context : context + ": " + detail;
  if (!stream_) return;
  if (!terminal_) {
    const double t = now_seconds();
    if (t - last_line_ < interval_s_ || done >= total) return;
    last_line_ = t;
    const std::string where =
        contexts > 0 ? fmt::format("context {} of {}, ", context_number, contexts) : std::string();
    fmt::print(stream_, "progress: {}{} of {} cases, {:.0f} s elapsed ({} {})\n", where, done,
               total, t - started_, backend, what);
    std::fflush(stream_);
    return;
  }
  // One column short of the terminal's width: a line that fills the last column wraps on some
  // terminals, and '\r' then rewrites only the second row. Asked on every update, so that a
  // resized window is followed.
  const size_t fit = terminal_columns(::fileno(stream_)) - 1;
  std::string line = fmt::format("[{:>4}/{}] {} {}", done, total, backend, what);
  if (line.size() > fit) line = fit > 3 ? line.substr(0, fit - 3) + "..." : line.substr(0, fit);
  fmt::print(stream_, "\r{:<{}}", line, std::min(last_width_, fit));
  last_width_ = line.size();
  std::fflush(stream_);
}

void TerminalProgress::finish() {
  if (!terminal_ || last_width_ == 0) return;
  fmt::print(stream_, "\r{:<{}}\r", "", last_width_);
  std::fflush(stream_);
  last_width_ = 0;
}

}  // namespace nvdet
