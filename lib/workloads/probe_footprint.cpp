// op probe's memory estimate: nvdet holds the prompts and, at worst, every response in flight at
// its size limit (the client refuses a larger one before it is stored).
#include <algorithm>

#include "lib/workloads/footprint.h"

namespace nvdet {

Footprint probe_footprint(const Scenario& s) {
  const ProbeSpec& p = s.probe;
  Footprint f;
  for (const std::string& prompt : p.probe.prompts) f.inputs += static_cast<double>(prompt.size());
  const double fillers = axis_max(s, Axis::kConcurrency, p.fillers.concurrency);
  // A filler word is at most 16 bytes with its separator (lib/probe/filler_prompts.h).
  f.inputs += fillers * axis_max(s, Axis::kFillerWords, p.fillers.words) * 16.0;
  f.outputs = (fillers + 1.0) * static_cast<double>(p.endpoint.max_response_bytes);
  return f;
}

}  // namespace nvdet
