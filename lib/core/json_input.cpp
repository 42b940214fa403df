#include "lib/core/json_input.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {

namespace {

// nlohmann's DOM parser behind a nesting limit. The limit is not the parser callback: with a
// callback nlohmann's end_object scans the enclosing object for discarded members, so a header
// of n tensors took O(n^2) (209 s for 10^5); this forwards every event and stays linear. It also
// refuses a key given twice in one object, which the DOM would resolve silently to the last value
// (a second tensor of one name in a safetensors header, a second config value).
class DepthLimitedParser {
 public:
  using json = nlohmann::json;
  explicit DepthLimitedParser(json& out) : dom_(out) {}
  bool too_deep() const { return too_deep_; }
  // The key given twice, when parsing stopped for one.
  const std::optional<std::string>& duplicate_key() const { return duplicate_; }

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool key(json::string_t& v) {
    if (!keys_.empty() && !keys_.back().insert(v).second) {
      duplicate_ = v;
      return false;
    }
    return dom_.key(v);
  }
  bool start_object(std::size_t n) {
    if (!enter()) return false;
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool end_object() {
    if (!keys_.empty()) keys_.pop_back();
    return --depth_, dom_.end_object();
  }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() { return --depth_, dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t at, const std::string& token, const Exception& e) {
    return dom_.parse_error(at, token, e);  // throws e
  }

 private:
  // `depth_` counts the enclosing lists and objects, as the callback's depth did.
  bool enter() {
    if (depth_ > kMaxJsonDepth) return too_deep_ = true, false;
    ++depth_;
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int depth_ = 0;
  bool too_deep_ = false;
  std::vector<std::unordered_set<std::string>> keys_;  // of each object being parsed
  std::optional<std::string> duplicate_;
};

}  // namespace

nlohmann::json parse_json_input(std::string_view text, const std::string& what) {
  try {
    nlohmann::json out;
    DepthLimitedParser parser(out);
    const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &parser);
    if (parser.too_deep())
      throw_input_error(what + " nests objects and lists more than " +
                        std::to_string(kMaxJsonDepth) + " deep");
    if (parser.duplicate_key()) {
      throw_input_error(what + " holds the key '" + excerpt(*parser.duplicate_key()) +
                        "' twice in one object");
    }
    if (!ok) throw_input_error(what + " is not valid JSON");
    return out;
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() quotes the raw token; show a bounded, escaped excerpt instead.
    const size_t at = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, text.size());
    const size_t from = at > 8 ? at - 8 : 0;
    throw_input_error(what + " is not valid JSON (truncated or corrupt at byte " +
                      std::to_string(e.byte) + ", near \"" + excerpt(text.substr(from, 24)) +
                      "\")");
  } catch (const nlohmann::json::out_of_range&) {
    throw_input_error(what + " holds a number outside the range of a double (such as 1e999)");
  } catch (const nlohmann::json::exception&) {
    throw_input_error(what + " is not valid JSON");
  }
}

}  // namespace nvdet
