// What is wrong with the options of a subcommand's command line, in one sentence: a mistyped
// option (CLI11 reports an option a subcommand does not have as an extra argument; the hint
// compares it with the subcommand's own option names) or an option given an empty value.
#include <string>
#include <vector>

#include "lib/core/text_excerpt.h"
#include "lib/scenario/typo_hint.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

std::vector<std::string> option_names(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

}  // namespace

std::string option_error(const CLI::App& sub, const CLI::ParseError& e, int argc, char** argv) {
  const std::vector<std::string> names = option_names(sub);
  for (int i = 2; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") break;
    if (word.size() < 2 || word[0] != '-' || (word[1] >= '0' && word[1] <= '9')) continue;
    word = word.substr(0, word.find('='));
    bool known = false;
    for (const std::string& n : names) known = known || n == word;
    // A cluster of short flags ("-qx") is CLI11's to parse; only a lone unknown name is a typo.
    if (known || (word[1] != '-' && word.size() > 2)) continue;
    return "unknown option '" + excerpt(word) + "'" + typo_hint(word, names);
  }
  return e.what();
}

std::string empty_option_value(const CLI::App& sub) {
  for (const CLI::Option* o : sub.get_options()) {
    if (o->get_items_expected_max() == 0) continue;  // a flag takes no value
    for (const std::string& value : o->results()) {
      if (!value.empty()) continue;
      const std::string name =
          o->get_lnames().empty()
              ? (o->get_snames().empty() ? o->get_name() : "-" + o->get_snames()[0])
              : "--" + o->get_lnames()[0];
      return (o->nonpositional() ? name : "argument '" + o->get_name() + "'") +
             " needs a value, got an empty one (an unset variable?)";
    }
  }
  return "";
}

}  // namespace nvdet::cli
