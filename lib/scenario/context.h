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
  // The swept axes' values, in the scenario's axis order: what the id, the group and the reports
  // show.
  std::vector<std::pair<std::string, AxisValue>> values;
  // The values of the axes that define the request ("kv_len=255"; "" when none): contexts of
  // one group compute the same requests and are compared with the group's first context.
  std::string group;
  // Every axis's value: the swept one, else the scenario's default (axis_table()). What
  // workloads read, typed, through integer() and value().
  AxisSettings settings;

  const AxisValue& value(Axis a) const { return settings[static_cast<size_t>(a)]; }
  // An axis that takes only integers (AxisValueType::kInteger).
  int64_t integer(Axis a) const;
  // An axis that takes only words (AxisValueType::kWords).
  const std::string& word(Axis a) const;
};

// The one way a context is made, whatever its values come from (a scenario's sweep, nvdet
// bisect's --context, a report read back): each (axis, value) of `values`, in sweep order, must
// name an axis `op` takes and a value of its rule, else kBadInput "<where>: " + why, naming the
// axis. Formats the id and the group; the axes not in `values` take `defaults` (a context read
// back from a report has no scenario: null leaves them unset, and nothing reads them).
Context make_context(OpKind op, int index, std::vector<std::pair<std::string, AxisValue>> values,
                     const AxisSettings* defaults, const std::string& where);

// All contexts of a scenario (a scenario with no sweep has one context, named after its op).
std::vector<Context> expand_contexts(const Scenario& s);

// Keeps the contexts whose id matches `filter` (RE2, lib/scenario/context_filter.h),
// and the baseline (first context) of each group that has a match, so that every kept context
// has something to compare with. Throws kBadInput for an invalid regex or when nothing matches.
std::vector<Context> filter_contexts(std::vector<Context> contexts, const std::string& filter);

}  // namespace nvdet
