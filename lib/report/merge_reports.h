#pragma once
// Merging a sharded sweep (`nvdet audit --shard I/N`, lib/runner/shard.h): the shards' results of
// one scenario become the result the unsharded run would have produced, cases and divergences in
// its order, each backend's counts and verdict decided again over the whole sweep. Only timings
// differ (each case keeps its own seconds; the summary's are the shards' sum).
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet {

// Merges the shard results of each scenario and passes every unsharded result through, in the
// order of first appearance. Throws Error(kBadInput) with one sentence for shards that do not
// make one sweep: a missing or repeated shard, counts or filters that differ, another scenario
// or backend list under one name, a context owned twice, a backend skipped in some shards and run
// in others, or a shard carrying a manifest verification (verify the merged result instead).
std::vector<AuditResult> merge_shard_results(std::vector<AuditResult> results);

// The shards of one scenario, all of them (any order).
AuditResult merge_shards(std::vector<AuditResult> shards);

}  // namespace nvdet
