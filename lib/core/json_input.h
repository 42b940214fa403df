#pragma once
// JSON from input files (manifests, safetensors headers, checkpoint config.json and index files),
// parsed with limits: nesting at most kMaxJsonDepth deep, and every failure (syntax, a number
// outside double such as 1e999, nesting) one sentence naming the file and the byte, with at most a
// short escaped excerpt of the text (lib/core/text_excerpt.h). No nlohmann exception escapes.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nvdet {

constexpr int kMaxJsonDepth = 64;

// `what` starts the message ("manifest 'm.json'", "model.safetensors: the header"). Throws
// Error(kBadInput).
nlohmann::json parse_json_input(std::string_view text, const std::string& what);

}  // namespace nvdet
