#include "lib/report/merge_reports.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/runner/recount.h"
#include "lib/runner/result_classes.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/runner/shard.h"

namespace nvdet {
namespace {

std::string list_text(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return "[" + out + "]";
}
template <class T>
std::string numbers_text(const std::vector<T>& v) {
  std::vector<std::string> words;
  for (const T& x : v) words.push_back(std::to_string(x));
  return list_text(words);
}
std::string axes_text(const ScenarioSummary& s) {
  std::vector<std::string> words;
  for (const auto& [name, values] : s.axes) words.push_back(name + "=" + list_text(values));
  return list_text(words);
}

std::vector<std::string> backend_names(const AuditResult& r) {
  std::vector<std::string> names;
  for (const BackendOutcome& o : r.backends)
    names.push_back(o.name + ":" + std::string(expectation_name(o.expect)));
  return names;
}

// What the sweep itself is, besides the fingerprint: the first field in which `s` differs from
// `first`, "name (a in shard 1, b in shard 3)"; "" when none does. The scenario's path may differ
// (the shards may have run from different checkouts).
std::string sweep_difference(const AuditResult& first, const AuditResult& s) {
  const auto differ = [&](const std::string& field, const std::string& a, const std::string& b) {
    return a == b ? std::string()
                  : fmt::format("{} ({} in shard {}, {} in shard {})", field, excerpt(a, 200),
                                first.shard->index, excerpt(b, 200), s.shard->index);
  };
  const ScenarioSummary &a = first.scenario, &b = s.scenario;
  for (const std::string& d :
       {differ("op", a.op, b.op), differ("dtype", a.dtype, b.dtype),
        differ("out_dtype", a.out_dtype, b.out_dtype),
        differ("seed", std::to_string(a.seed), std::to_string(b.seed)),
        differ("requests", numbers_text(a.requests), numbers_text(b.requests)),
        differ("repeat", std::to_string(a.repeat), std::to_string(b.repeat)),
        differ("sweep axes", axes_text(a), axes_text(b)),
        differ("backends", list_text(backend_names(first)), list_text(backend_names(s))),
        differ("--filter", "'" + first.shard->filter + "'", "'" + s.shard->filter + "'"),
        differ("--last-failed selection", numbers_text(first.shard->selection),
               numbers_text(s.shard->selection))}) {
    if (!d.empty()) return d;
  }
  return "";
}

// Each shard's claim against the partition of the sweep: shard I owns exactly the positions p
// with p % N == I - 1 of the contexts the shards partitioned, each context once.
void check_ownership(const std::vector<AuditResult>& shards,
                     const std::function<void(const std::string&)>& refuse) {
  const std::vector<int> sweep = partitioned_contexts(shards[0].scenario, *shards[0].shard);
  const std::set<int> in_sweep(sweep.begin(), sweep.end());
  const int count = shards[0].shard->count;
  std::map<int, int> claimed;  // context index -> the shard claiming it
  for (const AuditResult& s : shards) {
    const std::vector<int> due = owned_by_shard(sweep, s.shard->index, count);
    for (const int c : s.shard->owned) {
      if (!in_sweep.count(c)) {
        refuse(
            fmt::format("shard {} claims context {}, which is not one of the {} contexts the "
                        "sweep partitions",
                        s.shard->index, c, sweep.size()));
      }
      if (const auto [it, fresh] = claimed.emplace(c, s.shard->index); !fresh) {
        refuse(
            fmt::format("context {} is owned by shards {} and {}", c, it->second, s.shard->index));
      }
      if (!std::binary_search(due.begin(), due.end(), c)) {
        refuse(fmt::format(
            "shard {} claims context {}, which the partition gives to shard {}", s.shard->index, c,
            static_cast<int>(std::lower_bound(sweep.begin(), sweep.end(), c) - sweep.begin()) %
                    count +
                1));
      }
      if (!find_context(s, c)) {
        refuse(fmt::format("shard {} claims context {} but did not run it", s.shard->index, c));
      }
    }
  }
  for (size_t p = 0; p < sweep.size(); ++p) {
    if (!claimed.count(sweep[p])) {
      refuse(
          fmt::format("context {} of the sweep is owned by no shard (the partition gives it to "
                      "shard {})",
                      sweep[p], static_cast<int>(p) % count + 1));
    }
  }
}

// A context run by several shards (a group's baseline, which every shard that owns a context of
// the group runs) must have given every shard the same bits: another machine, driver or build
// would have compared that shard's contexts with another baseline.
void check_shared_cases(const std::vector<AuditResult>& shards,
                        const std::function<void(const std::string&)>& refuse) {
  std::map<std::tuple<std::string, int, int>, std::pair<int, const CaseRecord*>> seen;
  for (const AuditResult& s : shards) {
    for (const CaseRecord& c : s.cases) {
      const auto [it, fresh] =
          seen.try_emplace({c.backend, c.context_index, c.repeat}, s.shard->index, &c);
      if (fresh) continue;
      const CaseRecord& other = *it->second.second;
      bool same = other.requests.size() == c.requests.size();
      for (size_t q = 0; same && q < c.requests.size(); ++q) {
        same = other.requests[q].hash == c.requests[q].hash &&
               other.requests[q].completion == c.requests[q].completion;
      }
      if (!same) {
        refuse(fmt::format(
            "shards {} and {} both ran {} on backend '{}' (a baseline) and got different bits: "
            "they ran on different machines or builds, or the backend is not deterministic",
            it->second.first, s.shard->index, context_of(s, c).id, excerpt(c.backend)));
      }
    }
  }
}

// The first shard's outcome of backend `b`, or the reason the shards cannot be merged: a backend
// skipped in some shards and run in others. The counts and verdicts are decided again over the
// merged cases (recount_result); the parity expectation is carried by any shard that scored.
BackendOutcome merged_outcome(const std::vector<AuditResult>& shards, size_t b,
                              const std::function<void(const std::string&)>& refuse) {
  int skipped = 0;
  for (const AuditResult& s : shards) skipped += s.backends[b].skipped ? 1 : 0;
  BackendOutcome o = shards[0].backends[b];
  if (skipped > 0 && skipped < static_cast<int>(shards.size())) {
    refuse(fmt::format("backend '{}' was skipped in {} of {} shards and run in the others", o.name,
                       skipped, shards.size()));
  }
  for (const AuditResult& s : shards) {
    if (s.backends[b].parity) {
      o.parity_expect = s.backends[b].parity_expect;
      o.parity_tolerance = s.backends[b].parity_tolerance;
      o.parity = s.backends[b].parity;  // folded again from the merged records
      break;
    }
  }
  return o;
}

}  // namespace

AuditResult merge_shards(std::vector<AuditResult> shards) {
  const std::string name = shards.empty() ? std::string() : shards[0].scenario.name;
  const auto refuse = [&name](const std::string& why) {
    throw_input_error("cannot merge the shards of '" + excerpt(name) + "': " + why);
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
  for (size_t i = 0; i < shards.size(); ++i) {
    const AuditResult& s = shards[i];
    if (s.shard->index != static_cast<int>(i) + 1 || s.shard->count != count) {
      refuse(fmt::format("shard {} of {} is given twice or belongs to another split",
                         s.shard->index, s.shard->count));
    }
    // Every shard states what it computed; they must have computed one thing.
    if (s.fingerprint.empty()) {
      refuse(
          fmt::format("shard {}'s report has no fingerprint of what it ran (written by an "
                      "older nvdet); run the shards again with this build",
                      s.shard->index));
    }
    const std::string fingerprint =
        fingerprint_difference(shards[0].fingerprint, s.fingerprint, "in shard 1",
                               "in shard " + std::to_string(s.shard->index));
    if (!fingerprint.empty()) refuse("the shards ran different things: " + fingerprint);
    const auto server = [](const AuditResult& r) {
      return r.probe ? r.probe->url + " " + r.probe->model : std::string();
    };
    if (server(s) != server(shards[0])) {
      refuse(fmt::format("shard {} probed another server ({})", s.shard->index, server(s)));
    }
    if (const std::string d = sweep_difference(shards[0], s); !d.empty()) {
      refuse("the shards ran different sweeps: " + d);
    }
    if (s.verify) {
      refuse(
          fmt::format("shard {} carries a manifest verification; verify the merged report "
                      "(nvdet report ... --verify MANIFEST)",
                      s.shard->index));
    }
  }
  check_ownership(shards, refuse);
  check_shared_cases(shards, refuse);

  AuditResult merged;
  merged.schema_version = shards[0].schema_version;
  merged.scenario = shards[0].scenario;
  merged.fingerprint = shards[0].fingerprint;
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
  for (AuditResult& s : shards) {
    const std::set<int> owned(s.shard->owned.begin(), s.shard->owned.end());
    for (Context& c : s.contexts) {
      if (owned.count(c.index)) merged.contexts.push_back(std::move(c));
    }
    for (CaseRecord& c : s.cases) {
      if (owned.count(c.context_index)) merged.cases.push_back(std::move(c));
    }
    for (Divergence& d : s.divergences) {
      if (owned.count(d.context_index)) merged.divergences.push_back(std::move(d));
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
  for (size_t b = 0; b < shards[0].backends.size(); ++b) {
    merged.backends.push_back(merged_outcome(shards, b, refuse));
  }
  // Counts and verdicts over the whole sweep, from the merged cases, as the audit decides them.
  recount_result(merged, "the merged shards of '" + name + "'");
  assign_result_classes(merged);
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
