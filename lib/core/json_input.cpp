#include "lib/core/json_input.h"

#include <algorithm>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {

nlohmann::json parse_json_input(std::string_view text, const std::string& what) {
  bool too_deep = false;
  const auto limit_depth = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (depth > kMaxJsonDepth && (event == nlohmann::json::parse_event_t::object_start ||
                                  event == nlohmann::json::parse_event_t::array_start)) {
      too_deep = true;
      throw Error(ExitCode::kBadInput, "");  // unwinds the parser; reported below
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), limit_depth);
  } catch (const Error&) {
    if (too_deep)
      throw_input_error(what + " nests objects and lists more than " +
                        std::to_string(kMaxJsonDepth) + " deep");
    throw;
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() quotes the raw token; show a bounded, escaped excerpt instead.
    const size_t at = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, text.size());
    const size_t from = at > 8 ? at - 8 : 0;
    throw_input_error(what + " is not valid JSON (truncated or corrupt at byte " + std::to_string(e.byte) + ", near \"" +
                      excerpt(text.substr(from, 24)) + "\")");
  } catch (const nlohmann::json::out_of_range&) {
    throw_input_error(what + " holds a number outside the range of a double (such as 1e999)");
  } catch (const nlohmann::json::exception&) {
    throw_input_error(what + " is not valid JSON");
  }
}

}  // namespace nvdet
