#include "lib/runner/result_classes.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace nvdet {

void assign_result_classes(AuditResult& r) {
  std::vector<CaseRecord*> order;
  order.reserve(r.cases.size());
  for (CaseRecord& c : r.cases) order.push_back(&c);
  // Repeat 0 of every context in sweep order, then the other repeats: the baseline's result is
  // the first one seen of its group.
  std::stable_sort(order.begin(), order.end(), [](const CaseRecord* a, const CaseRecord* b) {
    return std::pair(a->repeat > 0, a->context_index) < std::pair(b->repeat > 0, b->context_index);
  });
  std::map<std::tuple<std::string, std::string, int64_t>, std::map<Hash128, int>> classes;
  for (CaseRecord* c : order) {
    const std::string& group = context_of(r, *c).group;
    for (RequestRecord& q : c->requests) {
      std::map<Hash128, int>& of = classes[{c->backend, group, q.request}];
      q.result_class = of.try_emplace(q.hash, static_cast<int>(of.size())).first->second;
    }
  }
}

}  // namespace nvdet
