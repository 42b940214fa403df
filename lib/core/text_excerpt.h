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

constexpr size_t kMessageChars = 4096;

// The last line of defence for a whole message about to be printed (what the CLI does with every
// error): control bytes (a NUL, which would cut the sentence, ESC, newlines) are shown as \xNN and
// the message is cut once `max_chars` bytes are printed (an escape may end it up to 3 bytes past
// them), whatever a quoting site may have missed. Unlike excerpt()
// it leaves backslashes and UTF-8 text alone: the message's own quotes are excerpts already.
std::string printable_message(std::string_view message, size_t max_chars = kMessageChars);

}  // namespace nvdet
