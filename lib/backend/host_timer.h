#pragma once
// Timing by the host's wall clock, where no device timer covers the work.
#include <functional>

#include "lib/backend/backend.h"

namespace nvdet {

// The median, minimum and maximum wall time (steady clock) of opts.repetitions calls of `run`
// after opts.warmup: the GPU backends' time() for the MoE block, whose host steps sit between
// device GEMMs (host steps and transfers included; CUDA events would time only the GEMMs), and
// nvdet bench's timer for the CPU backends. `before_each`, where given, runs before each timed
// call, outside the timed region (a GPU backend's L2 flush under opts.flush_l2).
Timing time_host_driven(const std::function<void()>& run, const TimingOptions& opts,
                        const std::function<void()>& before_each = {});

}  // namespace nvdet
