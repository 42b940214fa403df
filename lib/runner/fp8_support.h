#pragma once
// Which FP8 schemes a scenario computes (README "FP8") and whether a backend computes them: asked
// with the op and dtype support before anything runs, so that a backend that computes no FP8
// (every GPU backend so far) or not this scheme (fast accumulation on the CPU) is refused with
// exit 2, naming the key and the backend.
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

struct ScenarioFp8 {
  std::vector<Fp8Scheme> schemes;  // empty: the scenario computes no FP8
  std::string key;                 // what asks for FP8: "the key 'fp8'", "'model.checkpoint' ..."
};

// The key 'fp8' and the FP8 axes; for op model, an FP8 checkpoint (its config.json is read).
ScenarioFp8 scenario_fp8(const Scenario& s);

// kUnsupportedOp with "does not compute ..." naming the key, or ok.
Support fp8_support(const Scenario& s, const std::string& backend);

}  // namespace nvdet
