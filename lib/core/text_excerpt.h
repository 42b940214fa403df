#pragma once
// The only way input bytes reach an error message: a short excerpt in which every byte that is not
// printable ASCII is shown as \xNN (so no newline, terminal escape or other control byte from a
// file ever reaches a terminal or a CI log) and anything past `max_chars` is cut with "...".
#include <cstddef>
#include <string>
#include <string_view>

namespace nvdet {

constexpr size_t kExcerptChars = 32;

// "ab\x1b[2J..." for at most `max_chars` bytes of `bytes`; a backslash is shown as \\ .
std::string excerpt(std::string_view bytes, size_t max_chars = kExcerptChars);

}  // namespace nvdet
