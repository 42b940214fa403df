#include "lib/core/env_setting.h"

#include <charconv>
#include <cstdlib>
#include <system_error>

namespace nvdet {

std::string_view env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}

int env_int_setting(const char* name, int lo, int hi, int automatic) {
  const std::string_view v = env_text(name);
  if (v.empty() || v == "auto") return automatic;
  int value = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec != std::errc() || end != v.data() + v.size() || value < lo || value > hi) {
    throw_input_error(std::string(name) + " must be auto or an integer from " + std::to_string(lo) +
                      " to " + std::to_string(hi) + ", got '" + std::string(v) + "'");
  }
  return value;
}

}  // namespace nvdet
