#pragma once
// Checked text -> number conversions for everything nvdet reads from input (files, flags,
// environment): the one parser of each kind of number, so that every option, key and variable
// reads "0x10", "1e3" or "" alike. Unlike std::stoi and friends they never throw and never accept a
// partial match: the whole text must be the number and it must fit the type, or the answer is
// nullopt and the caller says what was wrong in its own words.
#include <charconv>
#include <cmath>
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

// A finite decimal number ("0.8", "1e-4", "+2", "0e0"), the whole text; nullopt on an empty
// text, a stray character, hex ("0x10"), "inf", "nan" or a value outside double's range.
inline std::optional<double> parse_real(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string_view::npos)
    return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

}  // namespace nvdet
