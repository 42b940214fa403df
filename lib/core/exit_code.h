#pragma once
// Process exit codes: the contract in README.md ("Exit codes"). Every command returns one of these.
namespace nvdet {

enum class ExitCode : int {
  kOk = 0,                 // every expectation held
  kExpectationFailed = 1,  // divergence where `invariant`, none where `variant`, manifest mismatch
  kBadInput = 2,           // bad usage or bad input (scenario, tensor file, manifest)
  kRuntime = 3,            // CUDA error, no device for a GPU backend, out of memory
  kNothingRan = 5,         // nothing was run: every backend skipped, or no context (pytest's 5)
};

}  // namespace nvdet
