#include "lib/workloads/batch_layout.h"

#include "lib/core/error.h"

namespace nvdet {

BatchLayout make_batch_layout(const Scenario& s, const Context& c) {
  const int64_t probes = static_cast<int64_t>(s.requests.size());
  const int64_t batch = c.integer(Axis::kBatch);
  if (batch < probes) {
    throw_input_error("context " + c.id + ": " + std::to_string(probes) +
                      " probed requests do not fit in a batch of " + std::to_string(batch));
  }
  int64_t start = 0;
  if (const auto* slot = std::get_if<int64_t>(&c.value(Axis::kPosition))) {
    start = *slot;
    if (start < 0 || start + probes > batch) {
      throw_input_error("context " + c.id + ": the probed requests at slot " +
                        std::to_string(start) + " fall outside the batch of " +
                        std::to_string(batch));
    }
  } else if (const std::string& pos = c.word(Axis::kPosition); pos == "last") {
    start = batch - probes;
  } else if (pos == "middle") {
    start = (batch - probes) / 2;
  }  // "first": slot 0
  BatchLayout layout;
  layout.slots.resize(static_cast<size_t>(batch));
  for (int64_t slot = 0; slot < batch; ++slot) layout.slots[slot] = {false, slot};
  for (int64_t p = 0; p < probes; ++p) {
    layout.slots[start + p] = {true, s.requests[p]};
    layout.probe_slot.push_back(start + p);
  }
  return layout;
}

}  // namespace nvdet
