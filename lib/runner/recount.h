#pragma once
// A result read back from a file (nvdet report, the shards of a sweep) is judged again from its
// evidence, never from the verdicts written in it: the cases' hashes say which contexts differ
// from their group's baseline and between repeats; the divergences listed must be exactly those;
// each backend's counts and verdict, the parity summary and verdict, the verification's verdict
// and the summary are then decided by the audit's own functions. A file whose summary says pass
// while a backend failed renders as the failure it is.
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

// Checks `r` (from `what`, a file name for messages) and decides it again in place. Throws
// Error(kBadInput) "cannot read audit report '<what>': ..." for a result that contradicts
// itself: a context or case given twice, a case of a skipped or unknown backend, a context a
// running backend has no case of, requests other than the scenario's, or divergences that are not
// what the hashes say.
void recount_result(AuditResult& r, const std::string& what);

}  // namespace nvdet
