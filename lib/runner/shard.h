#pragma once
// Sharded sweeps: `--shard I/N` runs the I-th of N disjoint parts of every scenario's contexts,
// so that N machines (a CI matrix, a Slurm job array, a Kubernetes Indexed Job) or N GPUs of one
// host split one audit; `nvdet report` merges the shards' JSON reports into the report the
// unsharded run would have written (lib/report/merge_reports.h).
//
// The partition is over the contexts left after --filter, by position: shard I (1-based, as in
// Jest's and Playwright's --shard) owns the contexts at positions p with p % N == I - 1, so that
// the expensive end of a sweep (the largest batch) is spread over every shard. A context is
// compared with its group's first context, so a shard also runs the baseline of every group it
// owns a context of, without owning it: the merge keeps each case from its owner only.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/runner/audit_result.h"
#include "lib/scenario/context.h"

namespace nvdet {

struct ShardSpec {
  int index = 1;  // 1..count
  int count = 1;
  std::string source;  // where it came from, for messages: "--shard 2/3", "SLURM_ARRAY_TASK_ID"
};

// Environment lookup (getenv by default; tests pass their own). nullopt: not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// Parses --shard's value: "I/N" (1 <= I <= N <= kMaxShards) or "auto", which reads the index and
// count from the first scheduler found, in this order:
//   Slurm job array:        SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (0 when unset) of
//                           SLURM_ARRAY_TASK_COUNT
//   Kubernetes Indexed Job: JOB_COMPLETION_INDEX of JOB_COMPLETIONS (Kubernetes does not put
//                           .spec.completions in the pod's environment: the Job sets it)
//   GoogleTest sharding:    GTEST_SHARD_INDEX of GTEST_TOTAL_SHARDS
// (each 0-based index becomes I = index + 1). Throws Error(kBadInput) with one sentence for
// anything else, naming the variable or the text.
inline constexpr int kMaxShards = 4096;
ShardSpec parse_shard(const std::string& text, const EnvLookup& env = process_environment());

// The contexts shard `spec` runs, in sweep order: those it owns and the baselines they need
// (the contexts not in info.owned), and the shard's record for its report.
struct ShardSelection {
  std::vector<Context> contexts;
  ShardInfo info;
};
// `selection`: the --last-failed cut the contexts are (empty: none), recorded for the merge.
ShardSelection select_shard(std::vector<Context> contexts, const ShardSpec& spec,
                            const std::string& filter, std::vector<int> selection = {});

// The context indices the shards of a sweep partitioned, in sweep order: the --last-failed
// selection they recorded, else the contexts of the sweep (the scenario's axes as the reports
// record them) that their --filter kept, each with its group's baseline. What the merge checks
// each shard's claim against. Throws kBadInput for axes or a selection that make no sweep, or a
// filtered sweep of more than kMaxPartitionedSweep contexts (too many to enumerate).
inline constexpr int64_t kMaxPartitionedSweep = int64_t{1} << 22;
std::vector<int> partitioned_contexts(const ScenarioSummary& s, const ShardInfo& shard);

// The positions of `contexts` that shard `index` (1-based) of `count` owns: p % count == index-1.
std::vector<int> owned_by_shard(const std::vector<int>& contexts, int index, int count);
// The same in place, for a command that may or may not run a shard: `contexts` cut to the
// shard's (and nullopt returned, the contexts left whole) when `spec` is nullopt.
std::optional<ShardInfo> keep_shard(std::vector<Context>& contexts,
                                    const std::optional<ShardSpec>& spec,
                                    const std::string& filter);

}  // namespace nvdet
