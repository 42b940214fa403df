#pragma once
// Where each request sits in a context's batch. The probed requests occupy consecutive slots
// starting at the context's `position` (first, middle, last or a slot index); seeded filler
// requests take every other slot.
#include <cstdint>
#include <vector>

#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

struct BatchSlot {
  bool probed = false;
  int64_t request = 0;  // probed: the request id; filler: the slot index
};

struct BatchLayout {
  std::vector<BatchSlot> slots;
  std::vector<int64_t> probe_slot;  // slot of each probed request, in scenario order
};

// Throws Error(kBadInput) when the probed requests do not fit in the batch at that position.
BatchLayout make_batch_layout(const Scenario& s, const Context& c);

// Stream ids for seeded data: a probed request's data is seeded by its id, a filler's by its
// slot, weights by fixed tags, so that no two kinds of data ever share a stream.
inline uint64_t request_stream(int64_t request) { return static_cast<uint64_t>(request); }
inline uint64_t filler_stream(int64_t slot) {
  return (uint64_t{1} << 40) + static_cast<uint64_t>(slot);
}
inline constexpr uint64_t kWeightStream = uint64_t{1} << 50;
inline constexpr uint64_t kBiasStream = (uint64_t{1} << 50) + 1;

}  // namespace nvdet
