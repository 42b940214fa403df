#pragma once
// The distinct results of each request within each group of contexts, numbered: the analysis
// the HTML heat map draws, done once on the result model (by the audit, after a shard merge and
// when a JSON report is read back) rather than again by each writer.
#include "lib/runner/audit_result.h"

namespace nvdet {

// Sets every RequestRecord::result_class: per backend, request and group, the outputs' distinct
// hashes numbered by first appearance in sweep order (repeat 0 of each context first, then the
// other repeats), so that class 0 is the group's baseline result.
void assign_result_classes(AuditResult& r);

}  // namespace nvdet
