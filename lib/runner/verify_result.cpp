#include "lib/runner/verify_result.h"

#include <fmt/format.h>

namespace nvdet {

bool change_fails(const ManifestChange& change, bool strict,
                  const std::map<std::string, std::string>& recorded_as) {
  const auto as = recorded_as.find(change.backend);
  return strict || change.expectation == "invariant" ||
         (as != recorded_as.end() && as->second != change.backend);
}

void decide_verify_verdict(VerifyResult& v) {
  int failing = 0;
  for (const ManifestChange& ch : v.changes) failing += ch.fails ? 1 : 0;
  const bool strict_extra = v.strict.value_or(false) && (!v.missing.empty() || !v.added.empty());
  v.passed = failing == 0 && !strict_extra;
  if (v.changes.empty() && v.missing.empty() && v.added.empty()) {
    v.verdict = fmt::format("all {} recorded hashes reproduced bit for bit", v.compared);
  } else {
    v.verdict = fmt::format(
        "{} of {} hashes changed ({} on backends that must not change), {} recorded "
        "entries not run, {} new entries",
        v.changes.size(), v.compared, failing, v.missing.size(), v.added.size());
  }
}

}  // namespace nvdet
