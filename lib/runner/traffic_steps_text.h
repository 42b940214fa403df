#pragma once
// How a probed request's step under serving traffic (lib/workloads/traffic_steps.h) is written,
// for the audit's reports and nvdet bisect alike: in words ("engine step 7: 23 rows = 7 decode
// (r1, ...) + 16 prefill (r9 x10, ...)"), as the plan its calls chose (each note's values over
// the step's passes, with the row count), and as JSON.
#include <nlohmann/json.hpp>
#include <string>

#include "lib/backend/backend.h"
#include "lib/workloads/traffic_steps.h"

namespace nvdet {

std::string probe_step_text(const ProbeStep& p);

// Each note of the step's passes ("down.split_k": "2", or "2/4" over two prompt chunks) and
// "rows", the row count every GEMM of each pass saw.
RunNotes step_plan(const ProbeStep& p);

nlohmann::json probe_step_json(const ProbeStep& p);

}  // namespace nvdet
