#include "lib/runner/recount.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/runner/audit.h"
#include "lib/runner/parity_metrics.h"
#include "lib/runner/probe_verdict.h"
#include "lib/runner/verdict.h"

namespace nvdet {
namespace {

// One output that differs from what it is compared with: (backend, kind, context index, request,
// repeat), as the audit records a divergence.
using DivergenceKey = std::tuple<std::string, DivergenceKind, int, int64_t, int>;
using CaseKey = std::tuple<std::string, int, int>;  // backend, context index, repeat

bool same_output(const RequestRecord& a, const RequestRecord& b) {
  return a.hash == b.hash && a.completion == b.completion;
}

class Recount {
 public:
  Recount(AuditResult& r, const std::string& what) : r_(r), what_(what) {}

  void run() {
    index_contexts();
    index_backends();
    index_cases();
    check_divergences();
    for (BackendOutcome& o : r_.backends) {
      if (!o.skipped) decide(o);
    }
    tally_summary(r_, static_cast<int>(r_.contexts.size()));
    if (r_.verify) decide_verify();
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw_input_error("cannot read audit report '" + what_ + "': " + why);
  }
  std::string context_name(int index) const {
    const Context* c = find_context(r_, index);
    return c ? c->id : "index " + std::to_string(index);
  }

  // Each context once (by index and by id), and each group's baseline: its first context.
  void index_contexts() {
    std::map<std::string, int> by_id;
    for (size_t i = 0; i < r_.contexts.size(); ++i) {
      const Context& c = r_.contexts[i];
      if (i > 0 && r_.contexts[i - 1].index >= c.index) {
        refuse("context index " + std::to_string(c.index) + " is given twice");
      }
      if (const auto [it, fresh] = by_id.emplace(c.id, c.index); !fresh) {
        refuse(fmt::format("contexts {} and {} are both '{}'", it->second, c.index, excerpt(c.id)));
      }
      baseline_.try_emplace(c.group, c.index);
    }
  }

  void index_backends() {
    std::set<std::string> names;
    for (const BackendOutcome& o : r_.backends) {
      if (!names.insert(o.name).second) refuse("backend '" + excerpt(o.name) + "' is listed twice");
    }
  }

  // Every case once, of a listed backend that ran, with the scenario's requests; and every
  // context of the table run by every backend that ran, in every repeat.
  void index_cases() {
    for (const CaseRecord& c : r_.cases) {
      const BackendOutcome* o = outcome(c.backend);
      const std::string where =
          fmt::format("the case of backend '{}' on {} (repeat {})", excerpt(c.backend),
                      context_name(c.context_index), c.repeat);
      if (!o) refuse(where + " names a backend the report does not list");
      if (o->skipped) refuse(where + " belongs to a backend the report marks skipped");
      if (!find_context(r_, c.context_index)) refuse(where + " names a context it does not hold");
      if (c.repeat >= repeats_of(*find_context(r_, c.context_index))) {
        refuse(fmt::format("{} is past the {} repeats of its context", where,
                           repeats_of(*find_context(r_, c.context_index))));
      }
      std::vector<int64_t> requests;
      for (const RequestRecord& q : c.requests) requests.push_back(q.request);
      if (requests != r_.scenario.requests) {
        refuse(where + " holds other requests than the scenario probes");
      }
      if (!cases_.emplace(CaseKey{c.backend, c.context_index, c.repeat}, &c).second) {
        refuse(where + " is given twice");
      }
    }
    for (const BackendOutcome& o : r_.backends) {
      if (o.skipped) continue;
      for (const Context& c : r_.contexts) {
        for (int rep = 0; rep < repeats_of(c); ++rep) {
          if (!cases_.count({o.name, c.index, rep})) {
            refuse(fmt::format("backend '{}' has no case of {} (repeat {})", excerpt(o.name), c.id,
                               rep));
          }
        }
      }
    }
  }

  const BackendOutcome* outcome(const std::string& name) const {
    for (const BackendOutcome& o : r_.backends) {
      if (o.name == name) return &o;
    }
    return nullptr;
  }
  const CaseRecord& case_of(const std::string& backend, int context, int repeat) const {
    return *cases_.at({backend, context, repeat});
  }

  // A server probe's control (the probe alone) runs `control` times, every other context the
  // scenario's repeats.
  int repeats_of(const Context& c) const {
    return r_.probe && is_probe_control(c) ? r_.probe->control : r_.scenario.repeat;
  }

  // A server probe compares every run with the first run alone (the control's repeat 0): a run
  // of the control that differs is run-to-run, a run under load that differs a context's
  // divergence, each with its repeat.
  void check_probe_divergences() {
    using Key = std::tuple<std::string, DivergenceKind, int, int64_t, int>;
    std::set<Key> implied, listed;
    for (const BackendOutcome& o : r_.backends) {
      if (o.skipped || r_.contexts.empty()) continue;
      const Context& control = r_.contexts.front();
      if (!is_probe_control(control)) refuse("its first context is not the probe's control");
      const CaseRecord& alone = case_of(o.name, control.index, 0);
      for (const Context& c : r_.contexts) {
        for (int rep = 0; rep < repeats_of(c); ++rep) {
          const CaseRecord& run = case_of(o.name, c.index, rep);
          for (size_t q = 0; q < run.requests.size(); ++q) {
            if (same_output(alone.requests[q], run.requests[q])) continue;
            implied.insert({o.name,
                            &c == &control ? DivergenceKind::kRunToRun : DivergenceKind::kContext,
                            c.index, run.requests[q].request, rep});
          }
        }
      }
    }
    for (const Divergence& d : r_.divergences) {
      if (!find_context(r_, d.context_index))
        refuse("a divergence names context '" + excerpt(d.context) + "', which it does not hold");
      if (!listed.insert({d.backend, d.kind, d.context_index, d.request, d.repeat}).second) {
        refuse(fmt::format("the divergence of backend '{}' on {}, request {} is listed twice",
                           excerpt(d.backend), context_name(d.context_index), d.request));
      }
    }
    if (implied != listed) {
      refuse(
          "its divergences do not match its hashes: the runs that differ from the first run alone "
          "are not those its divergences name");
    }
  }

  // The divergences the hashes imply, against those the report lists: the same set, each
  // against its group's baseline (or its own repeat 0).
  void check_divergences() {
    if (r_.probe) {
      check_probe_divergences();
      return;
    }
    std::set<DivergenceKey> implied;
    for (const BackendOutcome& o : r_.backends) {
      if (o.skipped) continue;
      for (const Context& c : r_.contexts) {
        const CaseRecord& first = case_of(o.name, c.index, 0);
        const CaseRecord& base = case_of(o.name, baseline_.at(c.group), 0);
        for (size_t q = 0; q < first.requests.size(); ++q) {
          const int64_t request = first.requests[q].request;
          if (!same_output(base.requests[q], first.requests[q])) {
            implied.insert({o.name, DivergenceKind::kContext, c.index, request, 0});
          }
          for (int rep = 1; rep < r_.scenario.repeat; ++rep) {
            if (!same_output(first.requests[q], case_of(o.name, c.index, rep).requests[q])) {
              implied.insert({o.name, DivergenceKind::kRunToRun, c.index, request, rep});
            }
          }
        }
      }
    }
    std::set<DivergenceKey> listed;
    for (const Divergence& d : r_.divergences) {
      const Context* c = find_context(r_, d.context_index);
      if (!c)
        refuse("a divergence names context '" + excerpt(d.context) + "', which it does not hold");
      const int compared_with =
          d.kind == DivergenceKind::kRunToRun ? c->index : baseline_.at(c->group);
      if (d.baseline_context_index != compared_with) {
        refuse(
            fmt::format("the divergence of backend '{}' on {} is against '{}', not its {}",
                        excerpt(d.backend), c->id, excerpt(d.baseline_context),
                        d.kind == DivergenceKind::kRunToRun ? "first repeat" : "group's baseline"));
      }
      const DivergenceKey key{d.backend, d.kind, d.context_index, d.request,
                              d.kind == DivergenceKind::kRunToRun ? d.repeat : 0};
      if (!listed.insert(key).second) {
        refuse(fmt::format("the divergence of backend '{}' on {}, request {} is listed twice",
                           excerpt(d.backend), c->id, d.request));
      }
    }
    if (implied == listed) return;
    for (const DivergenceKey& k : implied) {
      if (listed.count(k)) continue;
      refuse(fmt::format(
          "its divergences do not match its hashes: backend '{}', {}, request {} differs from {} "
          "but no divergence says so",
          excerpt(std::get<0>(k)), context_name(std::get<2>(k)), std::get<3>(k),
          std::get<1>(k) == DivergenceKind::kRunToRun
              ? "its first repeat in repeat " + std::to_string(std::get<4>(k))
              : std::string("its group's baseline")));
    }
    for (const DivergenceKey& k : listed) {
      if (implied.count(k)) continue;
      refuse(fmt::format(
          "its divergences do not match its hashes: a divergence of backend '{}', {}, request {} "
          "is listed, but its output equals what it is compared with",
          excerpt(std::get<0>(k)), context_name(std::get<2>(k)), std::get<3>(k)));
    }
  }

  // A backend's counts and verdict from its cases and divergences, as the audit decides them.
  void decide(BackendOutcome& o) const {
    o.contexts_run = static_cast<int>(r_.contexts.size());
    o.run_to_run_divergences = 0;
    std::set<int> divergent;
    std::optional<Divergence> first;
    for (const Divergence& d : r_.divergences) {
      if (d.backend != o.name) continue;
      if (!first) first = d;
      if (d.kind == DivergenceKind::kRunToRun) {
        ++o.run_to_run_divergences;
      } else {
        divergent.insert(d.context_index);
      }
    }
    o.divergent_contexts = static_cast<int>(divergent.size());
    // Distinct outputs (and completions) of one request of one group over every case.
    std::map<std::pair<std::string, int64_t>, std::set<Hash128>> distinct;
    std::map<std::pair<std::string, int64_t>, std::set<std::vector<int32_t>>> completions;
    ParitySummary parity;
    for (const CaseRecord& c : r_.cases) {
      if (c.backend != o.name) continue;
      const Context& context = context_of(r_, c);
      for (const RequestRecord& q : c.requests) {
        distinct[{context.group, q.request}].insert(q.hash);
        if (!q.completion.empty()) completions[{context.group, q.request}].insert(q.completion);
        if (q.parity) add_parity(parity, *q.parity, context.id, q.request);
      }
    }
    o.max_distinct_results = 1;
    o.max_distinct_completions = 0;
    for (const auto& [key, set] : distinct) {
      o.max_distinct_results = std::max(o.max_distinct_results, static_cast<int>(set.size()));
    }
    for (const auto& [key, set] : completions) {
      o.max_distinct_completions =
          std::max(o.max_distinct_completions, static_cast<int>(set.size()));
    }
    if (r_.probe) {
      decide_probe_verdict(o, r_, r_.shard.has_value());  // over the probe's runs
      return;
    }
    decide_verdict(o, first, r_.shard.has_value());
    // Sampler against trainer: the summary folded again from the per-request records, in the
    // audit's order; a backend whose records the report holds must state its expectation.
    if (parity.requests > 0 && !o.parity) {
      refuse("backend '" + excerpt(o.name) +
             "' has scored requests but no sampler/trainer summary (its parity expectation)");
    }
    o.parity.reset();
    if (parity.requests > 0) o.parity = parity;
    decide_parity_verdict(o);
  }

  // The verification's verdict from its changes, with each change's expectation the backend's.
  // A report written before `strict` was recorded cannot be judged more leniently than it says.
  void decide_verify() {
    VerifyResult& v = *r_.verify;
    const bool written = v.passed;
    for (ManifestChange& ch : v.changes) {
      if (const BackendOutcome* o = outcome(ch.backend)) {
        ch.expectation = std::string(expectation_name(o->expect));
      }
      ch.fails = change_fails(ch, v.strict.value_or(false), v.recorded_as);
    }
    decide_verify_verdict(v);
    if (!v.strict) v.passed = v.passed && written;
    r_.summary.passed = r_.summary.passed && v.passed;
  }

  AuditResult& r_;
  const std::string& what_;
  std::map<std::string, int> baseline_;  // group -> its first context's index
  std::map<CaseKey, const CaseRecord*> cases_;
};

}  // namespace

void recount_result(AuditResult& r, const std::string& what) { Recount(r, what).run(); }

}  // namespace nvdet
