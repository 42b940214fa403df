#include "lib/runner/probe_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace nvdet {

bool is_probe_control(const Context& c) {
  for (const auto& [axis, value] : c.values) {
    if (axis != "concurrency") continue;
    const auto* n = std::get_if<int64_t>(&value);
    return n && *n == 0;
  }
  return false;
}

ProbeAnalysis analyze_probe(const AuditResult& r, const std::string& backend) {
  std::vector<const CaseRecord*> order;
  for (const CaseRecord& c : r.cases)
    if (c.backend == backend) order.push_back(&c);
  // As result classes are numbered: every context's first repeat in sweep order, then the rest;
  // the control is the first context, so its first run comes first.
  std::stable_sort(order.begin(), order.end(), [](const CaseRecord* a, const CaseRecord* b) {
    return std::pair(a->repeat > 0, a->context_index) < std::pair(b->repeat > 0, b->context_index);
  });
  std::map<int64_t, ProbedPrompt> prompts;
  std::map<int64_t, std::set<Hash128>> alone;  // the completions each prompt gave alone
  std::set<int> loaded_contexts, differing_contexts;
  for (const CaseRecord* c : order) {
    const bool control = is_probe_control(context_of(r, *c));
    if (!control) loaded_contexts.insert(c->context_index);
    for (const RequestRecord& q : c->requests) {
      ProbedPrompt& p = prompts[q.request];
      p.request = q.request;
      auto it = std::find_if(p.distinct.begin(), p.distinct.end(),
                             [&q](const DistinctCompletion& d) { return d.hash == q.hash; });
      if (it == p.distinct.end()) {
        DistinctCompletion d;
        d.hash = q.hash;
        d.first_context_index = c->context_index;
        d.first_repeat = c->repeat;
        if (q.served) d.text = q.served->text;
        p.distinct.push_back(std::move(d));
        it = std::prev(p.distinct.end());
      }
      if (control) {
        ++it->runs_alone;
        ++p.runs_alone;
        alone[q.request].insert(q.hash);
      } else {
        ++it->runs_loaded;
        ++p.runs_loaded;
      }
    }
  }
  // Under load: compared with the first alone run's completion, and with every alone run's.
  for (const CaseRecord* c : order) {
    if (is_probe_control(context_of(r, *c))) continue;
    for (const RequestRecord& q : c->requests) {
      ProbedPrompt& p = prompts[q.request];
      const bool first_alone = p.runs_alone > 0 && p.distinct.front().runs_alone > 0 &&
                               p.distinct.front().hash == q.hash;
      if (first_alone) continue;
      ++p.loaded_differing;
      differing_contexts.insert(c->context_index);
      if (!alone[q.request].count(q.hash)) ++p.loaded_never_alone;
    }
  }
  ProbeAnalysis a;
  for (auto& [request, p] : prompts) {
    p.alone_distinct = static_cast<int>(alone[request].size());
    a.runs_alone += p.runs_alone;
    a.runs_loaded += p.runs_loaded;
    a.loaded_differing += p.loaded_differing;
    a.loaded_never_alone += p.loaded_never_alone;
    a.most_alone_distinct = std::max(a.most_alone_distinct, p.alone_distinct);
    a.most_distinct = std::max(a.most_distinct, static_cast<int>(p.distinct.size()));
    a.prompts.push_back(std::move(p));
  }
  a.contexts_loaded = static_cast<int>(loaded_contexts.size());
  a.contexts_differing = static_cast<int>(differing_contexts.size());
  return a;
}

namespace {

// The first divergence under load that is the load's doing (else the first under load, else the
// first of the control), for "first at ...".
const Divergence* first_divergence(const AuditResult& r, const std::string& backend) {
  const Divergence* loaded = nullptr;
  const Divergence* any = nullptr;
  for (const Divergence& d : r.divergences) {
    if (d.backend != backend) continue;
    if (!any) any = &d;
    if (d.kind != DivergenceKind::kContext) continue;
    if (d.served && !d.served->seen_alone) return &d;
    if (!loaded) loaded = &d;
  }
  return loaded ? loaded : any;
}

}  // namespace

void decide_probe_verdict(BackendOutcome& o, const AuditResult& r, bool partial) {
  const ProbeAnalysis a = analyze_probe(r, o.name);
  o.contexts_run = a.contexts_loaded + (a.runs_alone > 0 ? 1 : 0);
  o.divergent_contexts = a.contexts_differing;
  o.run_to_run_divergences = 0;
  for (const Divergence& d : r.divergences)
    if (d.backend == o.name && d.kind == DivergenceKind::kRunToRun) ++o.run_to_run_divergences;
  o.max_distinct_results = std::max(1, a.most_distinct);
  o.max_distinct_completions = a.most_distinct;

  const Divergence* first = first_divergence(r, o.name);
  const std::string where =
      first ? fmt::format("; first at {}{}", first->context,
                          first->repeat ? fmt::format(" (repeat {})", first->repeat) : "")
            : std::string();
  const std::string control =
      a.control_deterministic()
          ? fmt::format("the probe alone gave one completion per prompt ({} runs alone)",
                        a.runs_alone)
          : fmt::format(
                "the probe alone is not deterministic: up to {} distinct completions per prompt "
                "over {} runs alone (a prompt cache or a shared random generator, not the load)",
                a.most_alone_distinct, a.runs_alone);
  const std::string load = fmt::format(
      "{} of {} runs under load differ from the probe alone, {} with a completion never seen "
      "alone; up to {} distinct completions per prompt",
      a.loaded_differing, a.runs_loaded, a.loaded_never_alone, a.most_distinct);
  const bool all_identical = a.control_deterministic() && a.loaded_differing == 0;
  switch (o.expect) {
    case Expectation::kInvariant:
      o.passed = all_identical;
      o.verdict = o.passed ? fmt::format(
                                 "held: all {} runs (alone and under load in {} contexts) gave the "
                                 "probe alone's completion bit for bit",
                                 a.runs_alone + a.runs_loaded, a.contexts_loaded)
                           : fmt::format("expected invariant, but {}; {}{}", load, control, where);
      break;
    case Expectation::kVariant:
      if (partial && a.loaded_never_alone == 0) {
        o.passed = true;
        o.verdict = fmt::format(
            "no completion under load unseen alone in this shard's {} runs (the merged shards "
            "decide the expectation); {}",
            a.runs_loaded, control);
        break;
      }
      o.passed = a.loaded_never_alone > 0;
      o.verdict = o.passed ? fmt::format("diverged as expected: {}; {}{}", load, control, where)
                           : fmt::format(
                                 "expected the load to change the probe's completion, but no run "
                                 "under load gave one unseen alone ({} runs); {}",
                                 a.runs_loaded, control);
      break;
    case Expectation::kReport:
      o.passed = true;
      o.verdict = all_identical ? fmt::format(
                                      "recorded: all {} runs gave the probe alone's completion bit "
                                      "for bit",
                                      a.runs_alone + a.runs_loaded)
                                : fmt::format("recorded: {}; {}{}", load, control, where);
      break;
  }
}

}  // namespace nvdet
