#pragma once
// One kind of registry for the output formats of every command: audit's (and report's) reports,
// bench's tables and bisect's output. A format is a name `--format` takes (with any aliases), a
// file suffix, a one-line description and a writer from the command's result to the bytes of
// the output. Each command keeps one FormatRegistry of its own writers; `--format`'s parser,
// its help text, `nvdet list` and the writing loops all read it, so that a format exists once.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nvdet {

// What every format states about itself, whatever it renders.
class OutputFormat {
 public:
  virtual ~OutputFormat() = default;
  virtual std::string_view name() const = 0;         // what --format takes: "md"
  virtual std::string_view extension() const = 0;    // after the output's base name: ".md"
  virtual std::string_view description() const = 0;  // a few words for --help
  // Other names --format accepts for this format ("markdown" for md).
  virtual std::vector<std::string_view> aliases() const { return {}; }
  // A companion is not chosen by name: it is written whenever the format it names here is
  // selected (audit's verify report, with json). "" for formats chosen by name.
  virtual std::string_view written_with() const { return {}; }
};

// A format of one command: the output as text, in memory, from that command's result alone.
template <class Result>
class Writer : public OutputFormat {
 public:
  using ResultType = Result;
  virtual std::string render(const Result& result) const = 0;
};

// The parts of a registry that do not depend on what its writers render, written once.
namespace format_registry_detail {
using View = std::vector<const OutputFormat*>;
const OutputFormat* find(const View& all, std::string_view name);
void check_addable(const View& all, const OutputFormat& format, std::string_view noun);
View parse(const View& all, const std::string& csv, std::string_view noun);
std::string names(const View& all);
std::string help(const View& all);
View with_companions(const View& all, const View& selected);
}  // namespace format_registry_detail

// The formats of one command, in the order --help lists them. `noun` names them in messages:
// "unknown <noun> format 'pdf' (known formats: md, json, csv)".
template <class W>
class FormatRegistry {
 public:
  explicit FormatRegistry(std::string noun) : noun_(std::move(noun)) {}

  const std::string& noun() const { return noun_; }
  const std::vector<std::unique_ptr<W>>& writers() const { return writers_; }

  // Throws Error(kBadInput) when the name or an alias is empty or taken, the suffix is empty,
  // or the format is the companion of one that does not exist.
  void add(std::unique_ptr<W> writer) {
    format_registry_detail::check_addable(view(), *writer, noun_);
    writers_.push_back(std::move(writer));
  }

  // The format --format calls `name` (a name or an alias, any case); null when none.
  const W* find(std::string_view name) const {
    return static_cast<const W*>(format_registry_detail::find(view(), name));
  }

  // A comma-separated list of names ("md,json"; aliases accepted, spaces around names ignored,
  // duplicates collapse). Throws Error(kBadInput) naming the unknown format and the known ones,
  // or for an empty list.
  std::vector<const W*> parse(const std::string& csv) const {
    return typed(format_registry_detail::parse(view(), csv, noun_));
  }

  // The formats chosen by name, comma separated ("md, json, csv"), and one "name: description"
  // per format for --help (each companion beside the format it comes with).
  std::string names() const { return format_registry_detail::names(view()); }
  std::string help() const { return format_registry_detail::help(view()); }

  // Each selected format followed by its companions.
  std::vector<const W*> with_companions(const std::vector<const W*>& selected) const {
    const format_registry_detail::View chosen(selected.begin(), selected.end());
    return typed(format_registry_detail::with_companions(view(), chosen));
  }

 private:
  format_registry_detail::View view() const {
    format_registry_detail::View v;
    for (const auto& w : writers_) v.push_back(w.get());
    return v;
  }
  static std::vector<const W*> typed(const format_registry_detail::View& formats) {
    std::vector<const W*> out;
    for (const OutputFormat* f : formats) out.push_back(static_cast<const W*>(f));
    return out;
  }

  std::string noun_;
  std::vector<std::unique_ptr<W>> writers_;
};

// A format made of its facts and a render function: how the built-in formats are registered.
template <class W>
class FunctionWriter : public W {
 public:
  using Result = typename W::ResultType;
  using RenderFn = std::string (*)(const Result&);
  struct Facts {
    std::string_view name, extension, description;
    std::vector<std::string_view> aliases = {};
    std::string_view written_with = {};
  };
  FunctionWriter(Facts facts, RenderFn render) : f_(std::move(facts)), render_(render) {}
  std::string_view name() const override { return f_.name; }
  std::string_view extension() const override { return f_.extension; }
  std::string_view description() const override { return f_.description; }
  std::vector<std::string_view> aliases() const override { return f_.aliases; }
  std::string_view written_with() const override { return f_.written_with; }
  std::string render(const Result& result) const override { return render_(result); }

 private:
  Facts f_;
  RenderFn render_;
};

}  // namespace nvdet
