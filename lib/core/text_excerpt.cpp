#include "lib/core/text_excerpt.h"

#include <cstdio>

namespace nvdet {

std::string excerpt(std::string_view bytes, size_t max_chars) {
  std::string out;
  const size_t n = bytes.size() < max_chars ? bytes.size() : max_chars;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (bytes.size() > n) out += "...";
  return out;
}

std::string printable_message(std::string_view message, size_t max_chars) {
  std::string out;
  size_t i = 0;
  for (; i < message.size() && out.size() < max_chars; ++i) {
    const unsigned char c = static_cast<unsigned char>(message[i]);
    if (c < 0x20 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < message.size()) out += "...";
  return out;
}

}  // namespace nvdet
