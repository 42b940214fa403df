#pragma once
// The manifest verification (`--verify`) for people and machines: the console text and the
// `verify` object of the JSON report (also written alone as `<scenario>.verify.json`).
#include <nlohmann/json.hpp>
#include <string>

#include "lib/runner/verify_result.h"

namespace nvdet {

std::string render_verify_text(const VerifyResult& v);
nlohmann::ordered_json verify_to_json(const VerifyResult& v);

}  // namespace nvdet
