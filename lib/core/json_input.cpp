#include "lib/core/json_input.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {

nlohmann::json parse_json_input(std::string_view text, const std::string& what) {
  using Event = nlohmann::json::parse_event_t;
  bool too_deep = false;
  // The keys of each object being parsed: a key given twice would silently keep the last value
  // (a safetensors tensor, a config value), so it is refused instead.
  std::vector<std::unordered_set<std::string>> keys;
  const auto limit_depth = [&](int depth, Event event, nlohmann::json& parsed) {
    if (depth > kMaxJsonDepth && (event == Event::object_start || event == Event::array_start)) {
      too_deep = true;
      throw Error(ExitCode::kBadInput, "");  // unwinds the parser; reported below
    }
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end && !keys.empty()) keys.pop_back();
    if (event == Event::key && !keys.empty() && parsed.is_string() &&
        !keys.back().insert(parsed.get_ref<const std::string&>()).second) {
      throw_input_error(what + " holds the key '" + excerpt(parsed.get_ref<const std::string&>()) +
                        "' twice in one object");
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
