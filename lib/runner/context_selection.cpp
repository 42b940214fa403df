#include "lib/runner/context_selection.h"

#include <map>

namespace nvdet {

std::vector<Context> keep_with_baselines(std::vector<Context> contexts,
                                         const std::vector<bool>& keep) {
  std::map<std::string, size_t> group_first;
  std::vector<bool> needed(contexts.size());
  for (size_t p = 0; p < contexts.size(); ++p) {
    group_first.try_emplace(contexts[p].group, p);
    if (keep[p]) needed[p] = needed[group_first.at(contexts[p].group)] = true;
  }
  std::vector<Context> out;
  for (size_t p = 0; p < contexts.size(); ++p) {
    if (!needed[p]) continue;
    out.push_back(std::move(contexts[p]));
  }
  return out;
}

std::vector<Context> select_context_ids(std::vector<Context> contexts,
                                        const std::set<std::string>& ids) {
  std::vector<bool> keep(contexts.size());
  bool any = false;
  for (size_t p = 0; p < contexts.size(); ++p) {
    keep[p] = ids.count(contexts[p].id) > 0;
    any = any || keep[p];
  }
  if (!any) return {};
  return keep_with_baselines(std::move(contexts), keep);
}

}  // namespace nvdet
