#pragma once
// A context is one point of the sweep: one value per axis. Contexts are the cartesian product of
// the scenario's axes, in the order the axes appear in the file (the last axis varies fastest);
// the first context is the baseline every other context is compared with.
#include <string>
#include <vector>

#include "lib/scenario/scenario.h"

namespace nvdet {

struct Context {
  int index = 0;   // position in the full (unfiltered) expansion
  std::string id;  // "gemm(batch=8,position=last)"
  std::vector<std::pair<std::string, AxisValue>> values;
  // The values of the axes that define the request ("kv_len=255"; "" when none): contexts of
  // one group compute the same requests and are compared with the group's first context.
  std::string group;

  bool has(const std::string& axis) const;
  // The axis value, or `fallback` when the scenario does not sweep that axis.
  int64_t get_int(const std::string& axis, int64_t fallback) const;
  std::string get_string(const std::string& axis, const std::string& fallback) const;
};

// All contexts of a scenario (a scenario with no sweep has one context, named after its op).
std::vector<Context> expand_contexts(const Scenario& s);

// Keeps the contexts whose id matches `filter` (RE2, lib/scenario/context_filter.h),
// and the baseline (first context) of each group that has a match, so that every kept context
// has something to compare with. Throws kBadInput for an invalid regex or when nothing matches.
std::vector<Context> filter_contexts(std::vector<Context> contexts, const std::string& filter);

}  // namespace nvdet
