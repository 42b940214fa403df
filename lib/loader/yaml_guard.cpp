#include "lib/loader/yaml_guard.h"

#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {
namespace {

constexpr const char* kComplexKeys =
    "complex keys ('? ') are not used in scenarios; write 'key: value'";

class Guard {
 public:
  Guard(std::string_view text, const std::string& path) : t_(text), path_(path) {}

  void run() {
    if (t_.size() > kMaxScenarioBytes)
      throw_input_error(SourceLocation{path_, 0, 0},
                        "the scenario is " + std::to_string(t_.size()) +
                            " bytes, more than the limit of " + std::to_string(kMaxScenarioBytes));
    check_bytes();
    while (i_ < t_.size()) line();
  }

 private:
  // -- positions
  char at(size_t i) const { return i < t_.size() ? t_[i] : '\0'; }
  static bool blank(char c) { return c == ' ' || c == '\t' || c == '\0' || c == '\n' || c == '\r'; }
  static bool flow_indicator(char c) {
    return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
  }
  [[noreturn]] void fail(size_t i, const std::string& message) const {
    int line = 1, column = 1;
    for (size_t k = 0; k < i && k < t_.size(); ++k) {
      if (t_[k] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw_input_error(SourceLocation{path_, line, column}, message);
  }

  // Only tab, LF and CR among the control bytes (YAML allows no others outside escapes).
  void check_bytes() const {
    for (size_t k = 0; k < t_.size(); ++k) {
      const unsigned char c = static_cast<unsigned char>(t_[k]);
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
        fail(k, "control byte " + excerpt(t_.substr(k, 1)) +
                    " in the scenario (YAML text holds "
                    "none; write it as an escape inside double quotes)");
    }
  }

  // One physical line (or, for quoted scalars, as many as the quotes span).
  void line() {
    const size_t line_start = i_;
    size_t indent = 0;
    while (at(i_) == ' ') ++i_, ++indent;
    if (indent > kMaxYamlIndent)
      fail(i_, "the line is indented " + std::to_string(indent) + " columns, more than the limit " +
                   std::to_string(kMaxYamlIndent));
    // A block scalar's content lines (indented deeper than the line that opened it, or blank)
    // are text, whatever they hold.
    if (block_indent_ >= 0) {
      const bool is_blank = at(i_) == '\n' || at(i_) == '\r' || i_ >= t_.size();
      if (is_blank || static_cast<long>(indent) > block_indent_) {
        skip_to_eol();
        return;
      }
      block_indent_ = -1;
    }
    bool after_marker = false;
    if (flow_depth_ == 0 && i_ == line_start && i_ < t_.size() &&
        (t_.substr(i_, 3) == "---" || t_.substr(i_, 3) == "...") && blank(at(i_ + 3))) {
      i_ += 3;
      after_marker = true;
    } else if (flow_depth_ == 0 && i_ == line_start && at(i_) == '%') {
      fail(i_, "directives ('%YAML', '%TAG') are not used in scenarios; delete the line");
    }
    // Properties (&anchor, !tag) that open a line at the top level: yaml-cpp 0.7 loops when a
    // plain scalar follows them and a later line starts with '?'. A scenario never has a lone
    // value at its top level, so that shape is refused outright.
    root_properties_ = flow_depth_ == 0 && i_ == line_start && (at(i_) == '&' || at(i_) == '!');
    if (flow_depth_ == 0 && !after_marker) {
      if (i_ == line_start) top_level_line();
      else nested_line();
    }
    tokens(static_cast<long>(indent));
  }

  void skip_to_eol() {
    while (i_ < t_.size() && t_[i_] != '\n') ++i_;
    if (i_ < t_.size()) ++i_;
  }

  // The tokens of the rest of the line; returns after its newline.
  void tokens(long indent) {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n') {
        ++i_;
        return;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
        continue;
      }
      if (c == '#') {
        skip_to_eol();
        return;
      }
      const bool after_root_properties = root_properties_ && c != '&' && c != '!';
      if (c != '&' && c != '!') root_properties_ = false;
      // After top-level properties only a plain key may follow: yaml-cpp also loops on a tag
      // followed by quoted scalars ('!t""""K# e' then '? ?'), and a scenario needs neither.
      if (after_root_properties && !starts_plain(c))
        fail(i_, "a value with an anchor or tag at the top level; a scenario is a map of keys");
      if (c == '\'' || c == '"') {
        quoted(c);
        continue;
      }
      if (c == '[' || c == '{') {
        if (++flow_depth_ > kMaxYamlFlowDepth)
          fail(i_, "lists and maps nest more than " + std::to_string(kMaxYamlFlowDepth) + " deep");
        ++i_;
        continue;
      }
      if (c == ']' || c == '}') {
        if (flow_depth_ > 0) --flow_depth_;  // an unmatched one is yaml-cpp's to report
        ++i_;
        continue;
      }
      if (c == ',') {
        if (flow_depth_ == 0)
          fail(i_,
               "',' cannot start a value outside [ ] or { } (quote the text if the comma "
               "belongs to it)");
        ++i_;
        continue;
      }
      const bool indicator = blank(at(i_ + 1)) || (flow_depth_ > 0 && flow_indicator(at(i_ + 1)));
      if (c == '?' && indicator) fail(i_, kComplexKeys);
      if ((c == '-' || c == ':') && indicator) {
        ++i_;
        continue;
      }
      if (c == '*') {
        if (++aliases_ > kMaxYamlAliases)
          fail(i_, "the scenario uses more than " + std::to_string(kMaxYamlAliases) +
                       " aliases (*name)");
        word();
        continue;
      }
      if (c == '&') {
        word();
        continue;
      }
      // Tags are refused wherever they appear: scenarios need none, and yaml-cpp 0.7 loops on
      // several shapes of them (a tag ending at a quote, a tag before a '?' line).
      if (c == '!')
        fail(i_, "tags ('!name') are not used in scenarios; write the value without one");
      if ((c == '|' || c == '>') && flow_depth_ == 0) {
        block_indent_ = indent;
        skip_to_eol();
        return;
      }
      const size_t start = i_;
      plain();
      if (after_root_properties && at(i_) != ':')
        fail(start, "a value with an anchor or tag at the top level; a scenario is a map of keys");
    }
  }

  // A line that starts at column 1 outside any [ ] or { }: in a scenario (a map) it starts a
  // 'key:'. yaml-cpp 0.7 loops on top-level lines that hold a value that is not a key followed
  // by a line starting with '?' ('\'\')' then '? ', 'a b' forms), so the guard refuses a
  // top-level scalar that is not a key, and complex keys ('? '), which scenarios never use. Lines
  // starting with '-' (a list at the top) are left to the parser, which says the scenario must be
  // a map.
  void top_level_line() {
    const char c = at(i_);
    if (c == '?' && blank(at(i_ + 1))) fail(i_, kComplexKeys);
    const bool quoted_key = c == '\'' || c == '"';
    if (!quoted_key &&
        (!starts_plain(c) || c == '\t' || c == '\r' || c == '\n' || c == ' ' || c == '\0'))
      return;
    if (!key_here()) fail(i_, "a line at the top level of a scenario must start a 'key:'");
  }

  // Whether a 'key:' (quoted or plain) starts at i_; i_ is left where it was.
  bool key_here() {
    const size_t save = i_;
    const char k = at(i_);
    bool key = false;
    if (k == '\'' || k == '"') {
      quoted(k);
      while (at(i_) == ' ' || at(i_) == '\t') ++i_;
      key = at(i_) == ':' && blank(at(i_ + 1));
    } else if (starts_plain(k)) {
      plain();
      key = at(i_) == ':';
    }
    i_ = save;
    return key;
  }

  // An indented line outside any [ ] or { }: a scenario's nested lines are 'key: ...' entries
  // (perhaps anchored) and '- ' list items, nothing else. Whitelisting the line starts keeps
  // yaml-cpp 0.7 away from the shapes it loops on, which all begin with a node where a scenario
  // never has one: a value continued on its own line, a complex key, a stray indicator. Such a
  // value is written inside quotes or [ ] instead, which the message says.
  void nested_line() {
    const char c = at(i_);
    if (c == '\n' || c == '\r' || c == '\0' || c == '#' || c == '\t') return;
    if (c == '?' && blank(at(i_ + 1))) fail(i_, kComplexKeys);
    if (c == ',') return;  // the token scan refuses it, with the message for commas
    if (c == '-' && blank(at(i_ + 1))) return;  // a list item: anything may follow
    const size_t save = i_;
    while (at(i_) == '&') {
      word();
      while (at(i_) == ' ') ++i_;
    }
    if (!key_here())
      fail(i_,
           "an indented line of a scenario must start a 'key:' or a '- ' list item (a "
           "value that goes on over several lines goes inside quotes or [ ])");
    i_ = save;
  }

  // Whether `c` at position i_ starts a plain scalar (not an indicator, quote or flow bracket).
  bool starts_plain(char c) const {
    if (std::string_view("'\"[]{},|>*&!#%@`").find(c) != std::string_view::npos) return false;
    if ((c == '-' || c == '?' || c == ':') &&
        (blank(at(i_ + 1)) || (flow_depth_ > 0 && flow_indicator(at(i_ + 1)))))
      return false;
    return true;
  }

  // An anchor or alias: up to a blank or a flow indicator (yaml-cpp reads any other byte as part
  // of its name).
  void word() {
    ++i_;
    while (i_ < t_.size() && !blank(t_[i_]) && !flow_indicator(t_[i_])) ++i_;
  }

  // A quoted scalar, possibly over several lines. An unterminated one is yaml-cpp's to report.
  void quoted(char q) {
    ++i_;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (q == '"' && c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == q) {
        if (q == '\'' && at(i_ + 1) == '\'') {  // '' is an escaped quote
          i_ += 2;
          continue;
        }
        ++i_;
        return;
      }
      ++i_;
    }
  }

  // A plain scalar: to the end of the line, ": ", " #", and in flow context a flow indicator.
  void plain() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n') return;
      if (c == ':' && (blank(at(i_ + 1)) || (flow_depth_ > 0 && flow_indicator(at(i_ + 1)))))
        return;
      if (c == '#' && i_ > 0 && (t_[i_ - 1] == ' ' || t_[i_ - 1] == '\t')) return;
      if (flow_depth_ > 0 && flow_indicator(c)) return;
      ++i_;
    }
  }

  std::string_view t_;
  const std::string& path_;
  size_t i_ = 0;
  size_t flow_depth_ = 0;
  size_t aliases_ = 0;
  long block_indent_ = -1;  // >= 0 while inside a block scalar opened on a line of that indent
  bool root_properties_ = false;  // the line so far holds only top-level &anchor / !tag words
};

}  // namespace

void check_yaml_guard(std::string_view text, const std::string& path) { Guard(text, path).run(); }

}  // namespace nvdet
