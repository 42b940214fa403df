#include "lib/manifest/manifest_merge.h"

#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/runner/run_fingerprint.h"

namespace nvdet {
namespace {

bool same_entry(const ManifestEntry& a, const ManifestEntry& b) {
  return a.hash == b.hash && a.token_hashes == b.token_hashes && a.completion == b.completion;
}

}  // namespace

Manifest merge_manifests(const std::vector<Manifest>& manifests,
                         const std::vector<std::string>& names) {
  Manifest out;
  if (manifests.empty()) return out;
  out.system = manifests[0].system;
  for (size_t m = 0; m < manifests.size(); ++m) {
    const std::string& name = names.at(m);
    if (out.dump_dir.empty()) out.dump_dir = manifests[m].dump_dir;
    for (const auto& [scenario, ms] : manifests[m].scenarios) {
      auto [it, fresh] = out.scenarios.try_emplace(scenario, ms);
      if (fresh) continue;
      ManifestScenario& into = it->second;
      // A structured binding cannot be captured by a lambda before C++20 in every compiler.
      const std::string& scenario_name = scenario;
      auto refuse = [&](const std::string& why) {
        throw_input_error(
            fmt::format("cannot merge manifest '{}': scenario '{}' {}", name, scenario_name, why));
      };
      if (into.op != ms.op || into.dtype != ms.dtype || into.out_dtype != ms.out_dtype ||
          into.seed != ms.seed || into.requests != ms.requests || into.repeat != ms.repeat ||
          into.backends != ms.backends) {
        refuse("was recorded with another op, dtype, seed, requests, repeat or backends");
      }
      // A manifest recorded before inputs were recorded has none to compare.
      if (const std::string d = fingerprint_difference(into.inputs, ms.inputs, "before", "here");
          !d.empty() && !into.inputs.empty() && !ms.inputs.empty()) {
        refuse("was recorded from other inputs: " + d);
      }
      for (const auto& [id, index] : ms.contexts) {
        const auto [c, added] = into.contexts.emplace(id, index);
        if (!added && c->second != index) {
          refuse(
              fmt::format("has context {} at index {} here and {} before", id, index, c->second));
        }
      }
      for (const auto& [backend, by_context] : ms.entries) {
        for (const auto& [ctx, mc] : by_context) {
          ManifestContext& target = into.entries[backend][ctx];
          target.index = mc.index;
          for (const auto& [repeat, by_request] : mc.repeats) {
            for (const auto& [request, e] : by_request) {
              const auto [slot, added] = target.repeats[repeat].emplace(request, e);
              if (!added && !same_entry(slot->second, e)) {
                refuse(fmt::format("has two different hashes for {} {} repeat {} request {}",
                                   backend, ctx, repeat, request));
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace nvdet
