#pragma once
// A pre-parse check of scenario text, run before yaml-cpp sees it. yaml-cpp 0.7 loops allocating
// without bound on some malformed input (a ',' that starts a node outside any [ ] or { }, e.g. a
// file holding just ","; tags and complex keys in several shapes), and a fuzzer keeps finding new
// shapes of the same family. So the guard does not chase loops one by one: it admits only the
// part of YAML that scenarios are written in, where every line outside [ ] and { } starts a
// 'key:' or a '- ' list item, and refuses tags, complex keys ('? ') and directives wherever they
// appear. It also bounds what the parser may be asked to build: the document size, control
// bytes, flow nesting, indentation and aliases. It is a tokenizer, not a parser: it understands
// quotes, comments, plain and block scalars well enough to know where a node may start, and
// leaves every other judgement to yaml-cpp.
#include <string>
#include <string_view>

namespace nvdet {

constexpr size_t kMaxYamlFlowDepth = 64;  // [ [ [ ... ] ] ]
constexpr size_t kMaxYamlIndent = 256;    // columns of leading spaces on one line
constexpr size_t kMaxYamlAliases = 64;    // *name references (a scenario needs none)

// Throws Error(kBadInput) "path:line:column: ..." for the first problem found.
void check_yaml_guard(std::string_view text, const std::string& path);

}  // namespace nvdet
