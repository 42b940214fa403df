#pragma once
// Checked text -> number conversions for everything nvdet reads from input (files, flags,
// environment). Unlike std::stoi and friends they never throw and never accept a partial match:
// the whole text must be the number and it must fit the type, or the answer is nullopt and the
// caller says what was wrong in its own words.
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace nvdet {

// Decimal (or `base`) integer of type T, optionally with one leading '+'; nullopt on an empty
// text, a stray character, or a value outside T.
template <class T>
std::optional<T> parse_integer(std::string_view text, int base = 10) {
  static_assert(std::is_integral_v<T>);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+')
    return std::nullopt;  // "++1"; from_chars refuses
                          // '-' for unsigned T itself
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace nvdet
