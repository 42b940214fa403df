#pragma once
// Merging the manifests of a sharded sweep (`nvdet audit --shard I/N --record M`): every shard
// recorded the hashes of the contexts it ran, its groups' baselines included, so the union of
// the shards' entries is the unsharded run's manifest. An entry recorded by two shards (a
// baseline) must carry the same hashes in both.
#include <string>
#include <vector>

#include "lib/manifest/manifest.h"

namespace nvdet {

// `names` name the manifests in messages. The first manifest's system is the merged one's.
// Throws Error(kBadInput) for manifests of one scenario name with another op, dtype, seed,
// requests or backends, a context with two indices, or an entry with two hashes.
Manifest merge_manifests(const std::vector<Manifest>& manifests,
                         const std::vector<std::string>& names);

}  // namespace nvdet
