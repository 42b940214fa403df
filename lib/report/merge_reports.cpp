#include "lib/report/merge_reports.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "lib/core/error.h"
#include "lib/runner/audit.h"
#include "lib/runner/parity_metrics.h"
#include "lib/runner/probe_verdict.h"
#include "lib/runner/result_classes.h"
#include "lib/runner/verdict.h"

namespace nvdet {
namespace {

// What must agree between the shards of one sweep: everything about the scenario but its path
// (the shards may have run from different checkouts).
bool same_sweep(const ScenarioSummary& a, const ScenarioSummary& b) {
  return a.name == b.name && a.op == b.op && a.dtype == b.dtype && a.out_dtype == b.out_dtype &&
         a.seed == b.seed && a.requests == b.requests && a.repeat == b.repeat && a.axes == b.axes &&
         a.coord_names == b.coord_names;
}

std::vector<std::string> backend_names(const AuditResult& r) {
  std::vector<std::string> names;
  for (const BackendOutcome& o : r.backends)
    names.push_back(o.name + ":" + std::string(expectation_name(o.expect)));
  return names;
}

// Sampler against trainer over the whole sweep: the owned cases' per-request records folded as
// the audit folds them, in its order (context, then repeat, then request), so that the means,
// maxima and first differing request are the unsharded run's to the bit; a shard's own summary
// also counts the baselines it ran for contexts it does not own. Then the parity half of the
// verdict, decided by the audit's own function.
void merge_parity(BackendOutcome& o, const std::vector<AuditResult>& shards, size_t b,
                  const AuditResult& merged) {
  o.parity.reset();
  // Every shard read the same scenario; one whose outcome has a summary carries its expectation
  // (the JSON report writes it beside the summary only).
  for (const AuditResult& s : shards) {
    if (s.backends[b].parity) {
      o.parity_expect = s.backends[b].parity_expect;
      break;
    }
  }
  ParitySummary sum;
  for (const CaseRecord& c : merged.cases) {
    if (c.backend != o.name) continue;
    for (const RequestRecord& r : c.requests) {
      if (r.parity) add_parity(sum, *r.parity, context_of(merged, c).id, r.request);
    }
  }
  if (sum.requests > 0) o.parity = sum;
  decide_parity_verdict(o);
}

// The first shard's outcome with the counts and verdict of the whole sweep.
BackendOutcome merged_outcome(const std::vector<AuditResult>& shards, size_t b,
                              const AuditResult& merged, int contexts) {
  const std::string& name = shards[0].backends[b].name;
  int skipped = 0;
  for (const AuditResult& s : shards) skipped += s.backends[b].skipped ? 1 : 0;
  if (skipped == static_cast<int>(shards.size())) return shards[0].backends[b];
  if (skipped > 0) {
    throw_input_error(
        fmt::format("cannot merge the shards of '{}': backend '{}' was skipped in {} "
                    "of {} shards and run in the others",
                    merged.scenario.name, name, skipped, shards.size()));
  }
  BackendOutcome o = shards[0].backends[b];
  o.contexts_run = contexts;
  o.divergent_contexts = o.run_to_run_divergences = 0;
  o.max_distinct_results = 1;
  o.max_distinct_completions = 0;
  std::set<int> divergent;
  std::optional<Divergence> first;
  for (const Divergence& d : merged.divergences) {
    if (d.backend != name) continue;
    if (!first) first = d;
    if (d.kind == DivergenceKind::kRunToRun) {
      ++o.run_to_run_divergences;
    } else {
      divergent.insert(d.context_index);
    }
  }
  o.divergent_contexts = static_cast<int>(divergent.size());
  // As the audit counts them: distinct outputs of one request of one group over every case.
  std::map<std::pair<std::string, int64_t>, std::set<Hash128>> distinct;
  std::map<std::pair<std::string, int64_t>, std::set<std::vector<int32_t>>> completions;
  for (const CaseRecord& c : merged.cases) {
    if (c.backend != name) continue;
    for (const RequestRecord& r : c.requests) {
      const std::string& group = context_of(merged, c).group;
      distinct[{group, r.request}].insert(r.hash);
      if (!r.completion.empty()) completions[{group, r.request}].insert(r.completion);
    }
  }
  for (const auto& [key, set] : distinct) {
    o.max_distinct_results = std::max(o.max_distinct_results, static_cast<int>(set.size()));
  }
  for (const auto& [key, set] : completions) {
    o.max_distinct_completions = std::max(o.max_distinct_completions, static_cast<int>(set.size()));
  }
  if (merged.probe) {
    decide_probe_verdict(o, merged, false);  // a server probe's verdict is over its runs
  } else {
    decide_verdict(o, first);
  }
  merge_parity(o, shards, b, merged);
  return o;
}

}  // namespace

AuditResult merge_shards(std::vector<AuditResult> shards) {
  const std::string name = shards.empty() ? std::string() : shards[0].scenario.name;
  auto refuse = [&name](const std::string& why) {
    throw_input_error("cannot merge the shards of '" + name + "': " + why);
  };
  if (shards.empty()) throw_input_error("no shard reports to merge");
  std::sort(shards.begin(), shards.end(), [](const AuditResult& a, const AuditResult& b) {
    return a.shard->index < b.shard->index;
  });
  const int count = shards[0].shard->count;
  if (static_cast<int>(shards.size()) != count || shards.back().shard->index != count) {
    std::string have;
    for (const AuditResult& s : shards)
      have += (have.empty() ? "" : ", ") + std::to_string(s.shard->index);
    refuse(
        fmt::format("it has {} shards, reports were given for shards {} (each once)", count, have));
  }
  // Who owns each context.
  std::map<int, int> owner;  // context index -> shard index
  for (size_t i = 0; i < shards.size(); ++i) {
    const AuditResult& s = shards[i];
    if (s.shard->index != static_cast<int>(i) + 1 || s.shard->count != count) {
      refuse(fmt::format("shard {} of {} is given twice or belongs to another split",
                         s.shard->index, s.shard->count));
    }
    if (!same_sweep(s.scenario, shards[0].scenario) ||
        backend_names(s) != backend_names(shards[0])) {
      refuse(fmt::format("shard {} ran another scenario or other backends", s.shard->index));
    }
    const auto server = [](const AuditResult& r) {
      return r.probe ? r.probe->url + " " + r.probe->model : std::string();
    };
    if (server(s) != server(shards[0])) {
      refuse(fmt::format("shard {} probed another server ({})", s.shard->index, server(s)));
    }
    if (s.shard->filter != shards[0].shard->filter) {
      refuse(fmt::format("shard {} ran --filter '{}', shard 1 '{}'", s.shard->index,
                         s.shard->filter, shards[0].shard->filter));
    }
    if (s.verify) {
      refuse(
          fmt::format("shard {} carries a manifest verification; verify the merged report "
                      "(nvdet report ... --verify MANIFEST)",
                      s.shard->index));
    }
    for (int c : s.shard->owned) {
      if (!owner.emplace(c, s.shard->index).second) {
        refuse(
            fmt::format("context {} is owned by shards {} and {}", c, owner.at(c), s.shard->index));
      }
    }
  }

  AuditResult merged;
  merged.schema_version = shards[0].schema_version;
  merged.scenario = shards[0].scenario;
  merged.system = shards[0].system;
  merged.hostname = shards[0].hostname;
  merged.probe = shards[0].probe;
  merged.started_at = shards[0].started_at;  // the same format everywhere: the earliest sorts first
  for (const AuditResult& s : shards) {
    if (!s.started_at.empty() && s.started_at < merged.started_at) merged.started_at = s.started_at;
  }
  std::map<std::string, size_t> backend_order;
  for (size_t b = 0; b < shards[0].backends.size(); ++b)
    backend_order[shards[0].backends[b].name] = b;
  auto owned_by = [&owner](int context_index, const AuditResult& s) {
    const auto it = owner.find(context_index);
    return it != owner.end() && it->second == s.shard->index;
  };
  for (AuditResult& s : shards) {
    for (Context& c : s.contexts) {
      if (owned_by(c.index, s)) merged.contexts.push_back(std::move(c));
    }
    for (CaseRecord& c : s.cases) {
      if (owned_by(c.context_index, s)) merged.cases.push_back(std::move(c));
    }
    for (Divergence& d : s.divergences) {
      if (owned_by(d.context_index, s)) merged.divergences.push_back(std::move(d));
    }
    merged.summary.seconds += s.summary.seconds;
  }
  // The unsharded run's order: context-major, then backend, then repeat; the divergences of one
  // context and backend come from one shard, already in the order they were found.
  auto rank = [&backend_order](int context_index, const std::string& backend) {
    const auto it = backend_order.find(backend);
    return std::pair(context_index, it == backend_order.end() ? backend_order.size() : it->second);
  };
  std::sort(merged.contexts.begin(), merged.contexts.end(),
            [](const Context& a, const Context& b) { return a.index < b.index; });
  std::stable_sort(merged.cases.begin(), merged.cases.end(),
                   [&rank](const CaseRecord& a, const CaseRecord& b) {
                     return std::tuple(rank(a.context_index, a.backend), a.repeat) <
                            std::tuple(rank(b.context_index, b.backend), b.repeat);
                   });
  std::stable_sort(merged.divergences.begin(), merged.divergences.end(),
                   [&rank](const Divergence& a, const Divergence& b) {
                     return rank(a.context_index, a.backend) < rank(b.context_index, b.backend);
                   });
  assign_result_classes(merged);  // over the whole sweep, not each shard's part
  const int contexts = static_cast<int>(owner.size());
  for (size_t b = 0; b < shards[0].backends.size(); ++b) {
    merged.backends.push_back(merged_outcome(shards, b, merged, contexts));
  }
  tally_summary(merged, contexts);
  return merged;
}

std::vector<AuditResult> merge_shard_results(std::vector<AuditResult> results) {
  std::vector<AuditResult> out;
  std::map<std::string, size_t> slot;  // scenario name -> its place in `out`
  std::map<std::string, std::vector<AuditResult>> shards;
  for (AuditResult& r : results) {
    const std::string name = r.scenario.name;
    const bool sharded = r.shard.has_value();
    if (slot.count(name) && sharded != (shards.count(name) > 0)) {
      throw_input_error("cannot merge '" + name +
                        "': both a whole report and shard reports of it were given");
    }
    if (!sharded) {
      if (slot.count(name)) throw_input_error("two reports of scenario '" + name + "' were given");
      slot[name] = out.size();
      out.push_back(std::move(r));
      continue;
    }
    if (!slot.count(name)) {
      slot[name] = out.size();
      out.emplace_back();
    }
    shards[name].push_back(std::move(r));
  }
  for (auto& [name, parts] : shards) out[slot.at(name)] = merge_shards(std::move(parts));
  return out;
}

}  // namespace nvdet
