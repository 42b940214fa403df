#include "lib/report/format_registry.h"

#include <absl/strings/ascii.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include <algorithm>

#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"

namespace nvdet::format_registry_detail {
namespace {

bool chosen_by_name(const OutputFormat& f) { return f.written_with().empty(); }

}  // namespace

const OutputFormat* find(const View& all, std::string_view name) {
  const std::string wanted = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  for (const OutputFormat* f : all) {
    if (f->name() == wanted) return f;
    const auto aliases = f->aliases();
    if (std::find(aliases.begin(), aliases.end(), wanted) != aliases.end()) return f;
  }
  return nullptr;
}

void check_addable(const View& all, const OutputFormat& format, std::string_view noun) {
  const std::string kind(noun);
  std::vector<std::string_view> names = format.aliases();
  names.push_back(format.name());
  for (const std::string_view n : names) {
    if (n.empty() || find(all, n)) {
      throw_input_error(kind + " format name '" + std::string(n) + "' is empty or taken");
    }
  }
  // The suffix names the file the format is written to (and tells a reader which one it is).
  if (format.extension().empty()) {
    throw_input_error(kind + " format '" + std::string(format.name()) + "' has no file suffix");
  }
  if (!chosen_by_name(format) && !find(all, format.written_with())) {
    throw_input_error(kind + " writer '" + std::string(format.name()) +
                      "' is written with an unknown format '" +
                      std::string(format.written_with()) + "'");
  }
}

std::string names(const View& all) {
  std::vector<std::string> out;
  for (const OutputFormat* f : all) {
    if (chosen_by_name(*f)) out.emplace_back(f->name());
  }
  return absl::StrJoin(out, ", ");
}

std::string help(const View& all) {
  // Only the names --format takes; a companion is described beside the format it comes with,
  // never as a name of its own (which the parser would refuse).
  std::vector<std::string> lines;
  for (const OutputFormat* f : all) {
    if (!chosen_by_name(*f)) continue;
    std::string line = std::string(f->name()) + ": " + std::string(f->description());
    for (const OutputFormat* c : all) {
      if (chosen_by_name(*c) || c->written_with() != f->name()) continue;
      line += " (also " + std::string(c->extension()) + ": " + std::string(c->description()) + ")";
    }
    lines.push_back(line);
  }
  return absl::StrJoin(lines, "; ");
}

View parse(const View& all, const std::string& csv, std::string_view noun) {
  const std::string kind(noun);
  View formats;
  for (const absl::string_view part : absl::StrSplit(csv, ',')) {
    const std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (name.empty()) continue;  // tolerate "md,,json" and a trailing comma
    const OutputFormat* f = find(all, name);
    if (!f || !chosen_by_name(*f)) {
      throw_input_error("unknown " + kind + " format '" + excerpt(name) + "' (known formats: " +
                        names(all) + ")");
    }
    if (std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
  }
  if (formats.empty()) {
    throw_input_error("no " + kind + " format given (known formats: " + names(all) + ")");
  }
  return formats;
}

View with_companions(const View& all, const View& selected) {
  View out;
  for (const OutputFormat* f : selected) {
    out.push_back(f);
    for (const OutputFormat* c : all) {
      if (!chosen_by_name(*c) && c->written_with() == f->name()) out.push_back(c);
    }
  }
  return out;
}

}  // namespace nvdet::format_registry_detail
