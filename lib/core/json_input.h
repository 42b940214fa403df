#pragma once
// JSON from input files (manifests, safetensors headers, checkpoint config.json and index files),
// parsed with limits: nesting at most kMaxJsonDepth deep, no key twice in one object (which would
// silently keep the last value: a second tensor of one name), and every failure (syntax, a number
// outside double such as 1e999, nesting, a duplicate key) one sentence naming the file and the
// byte, with at most a short escaped excerpt of the text (lib/core/text_excerpt.h). No nlohmann
// exception escapes.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace nvdet {

constexpr int kMaxJsonDepth = 64;

// `what` starts the message ("manifest 'm.json'", "model.safetensors: the header"). Throws
// Error(kBadInput).
nlohmann::json parse_json_input(std::string_view text, const std::string& what);

// `v` as T when it is a JSON integer within T's range; nullopt for anything else (a float even
// when integral, such as 1e89, a string, or an integer T cannot hold). Readers use this instead of
// nlohmann's get<T>(), which converts a float to an integer (undefined when out of range) and
// wraps a large integer.
template <class T>
std::optional<T> json_integer(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (std::in_range<T>(u)) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (std::in_range<T>(i)) return static_cast<T>(i);
  }
  return std::nullopt;
}

}  // namespace nvdet
