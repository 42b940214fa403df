#include "lib/workloads/footprint.h"

#include <algorithm>

namespace nvdet {

double dtype_bytes(DType t) { return static_cast<double>(dtype_size(t)); }

double axis_max(const Scenario& s, Axis axis, double fallback) {
  for (const SweepAxis& a : s.sweep) {
    if (a.axis != axis) continue;
    double best = -1;
    for (const AxisValue& v : a.values)
      if (const auto* i = std::get_if<int64_t>(&v)) best = std::max(best, static_cast<double>(*i));
    return best < 0 ? fallback : std::max(best, fallback);
  }
  return fallback;
}

double batch_max(const Scenario& s) {
  const double probed = static_cast<double>(std::max<size_t>(s.requests.size(), 1));
  for (const SweepAxis& a : s.sweep)
    if (a.axis == Axis::kBatch) return axis_max(s, Axis::kBatch, probed);
  return probed;
}

}  // namespace nvdet
