#pragma once
// Running part of a sweep: a context is compared with its group's first context (its baseline),
// so every selection of contexts (a shard, the contexts that failed last time) keeps the baseline
// of each group it keeps a context of.
#include <set>
#include <string>
#include <vector>

#include "lib/scenario/context.h"

namespace nvdet {

// The contexts with `keep[i]` set and their groups' baselines, in sweep order.
std::vector<Context> keep_with_baselines(std::vector<Context> contexts,
                                         const std::vector<bool>& keep);

// The contexts whose id is in `ids`, with their baselines (--last-failed); empty when none is.
std::vector<Context> select_context_ids(std::vector<Context> contexts,
                                        const std::set<std::string>& ids);

}  // namespace nvdet
