#pragma once
// Model scenarios under serving traffic (README "Serving traffic"): what each step of the engine
// held, as a probed request saw it, so that a report can say what shared the step where two
// replays of the probe parted: how many decode and prefill rows (the row count every GEMM of the
// step saw), from which requests, and the plans the backend chose for them.
#include <cstdint>
#include <string>
#include <vector>

#include "lib/backend/backend.h"

namespace nvdet {

// One request's rows in an engine step.
struct StepRows {
  std::string request;  // "probe 0" (a probed request, by id) or "r12" (co-traffic request 12)
  int32_t rows = 0;
  bool decode = false;  // a decode token (attention_decode), else a prompt chunk
};

// One step of the replay's engine: one pass over all its rows (decode rows first).
struct EngineStep {
  int64_t step = 0;  // the replay's step number (from 0)
  int32_t decode_rows = 0, prefill_rows = 0;
  std::vector<StepRows> requests;  // in row order
  // Layer 0's backend notes of this step's calls ("qkv.split_k", "attention_decode.split_len").
  RunNotes notes;
  int32_t rows() const { return decode_rows + prefill_rows; }
};

// One step of a probed request, in its own count: 0 is its prompt (every chunk of it, with the
// tokens it took from the prefix cache), t > 0 the pass that produced its t-th generated token.
struct ProbeStep {
  int32_t step = 0;
  int32_t cached_tokens = 0;  // step 0: prompt tokens served from the prefix cache
  std::vector<EngineStep> engine_steps;
};

}  // namespace nvdet
