#include "lib/scenario/scenario.h"

#include "lib/core/error.h"

namespace nvdet {

std::string_view expectation_name(Expectation e) {
  switch (e) {
    case Expectation::kInvariant: return "invariant";
    case Expectation::kVariant: return "variant";
    case Expectation::kReport: return "report";
  }
  return "?";
}

std::string_view parity_expectation_name(ParityExpectation e) {
  switch (e) {
    case ParityExpectation::kBitwise: return "bitwise";
    case ParityExpectation::kTolerance: return "tolerance";
    case ParityExpectation::kReport: break;
  }
  return "report";
}

std::string_view sampler_name(SamplerKind k) {
  return k == SamplerKind::kBatchStream ? "batch_stream" : "per_request";
}

}  // namespace nvdet
