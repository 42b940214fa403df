#pragma once
// The manifest verification (`--verify`) for people and machines: the console text and the
// `verify` object of the JSON report (also written alone as `<scenario>.verify.json`).
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "lib/runner/verify_result.h"

namespace nvdet {

// The two hashes, shortened to 12 hex digits or, when they agree that far, to just past their
// first differing digit, so that a changed hash never reads as "abc → abc".
std::pair<std::string, std::string> short_hashes(const Hash128& recorded, const Hash128& now);

std::string render_verify_text(const VerifyResult& v);
nlohmann::ordered_json verify_to_json(const VerifyResult& v);

}  // namespace nvdet
