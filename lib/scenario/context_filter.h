#pragma once
// --filter: which contexts of a scenario run. The pattern is compiled once with RE2 (Perl-like
// syntax, searched anywhere in a context's id): matching takes time linear in the id, with no
// backtracking ('(.+)+X' costs what 'X' costs), and parsing a deeply nested pattern is an error,
// not a stack overflow.
#include <memory>
#include <string>
#include <vector>

#include "lib/scenario/context.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace nvdet {

// An empty pattern matches everything. Throws kBadInput for an invalid pattern (with RE2's
// reason) or one longer than kMaxFilterBytes.
class ContextFilter {
 public:
  static constexpr size_t kMaxFilterBytes = 4096;
  explicit ContextFilter(const std::string& pattern);
  bool empty() const { return !re_; }
  bool matches(const std::string& id) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::shared_ptr<const re2::RE2> re_;
};

// Keeps the contexts whose id matches `filter`, and the baseline (first context) of each group
// that has a match, so that every kept context has something to compare with; empty when none
// matches (a run over several scenarios decides what that means).
std::vector<Context> select_contexts(std::vector<Context> contexts, const ContextFilter& filter);
// "--filter 'X' matches no context (ids look like '...')", for `contexts` (the unfiltered ones).
std::string no_match_text(const ContextFilter& filter, const std::vector<Context>& contexts);

// A filter over several scenarios applies to the run as a whole. Given the names of the scenarios
// it matched nothing of (of `scenarios` in all): "" when there are none; kBadInput naming them
// when it matched nothing anywhere; otherwise the note to print on stderr,
// "--filter 'X' matches no context of scenario 'a': not run".
std::string filter_run_note(const std::string& pattern, const std::vector<std::string>& unmatched,
                            size_t scenarios);

}  // namespace nvdet
