// Sharded sweeps, below the CLI: --shard's value and the schedulers' environment variables
// (Slurm job arrays, Kubernetes Indexed Jobs, GoogleTest sharding), and the partition of a sweep's
// contexts (disjoint, complete, each shard with the baselines its contexts are compared with).
#include "lib/runner/shard.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "lib/core/error.h"
#include "lib/runner/context_selection.h"

namespace nvdet {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string refusal(const std::string& text, std::map<std::string, std::string> vars = {}) {
  try {
    (void)parse_shard(text, env_of(std::move(vars)));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(Shard, ParsesOneBasedIndexOfCount) {
  const ShardSpec s = parse_shard("2/3", env_of({}));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(parse_shard("1/1", env_of({})).count, 1);
  EXPECT_NE(refusal("0/3").find("I must be from 1 to N"), std::string::npos);
  EXPECT_NE(refusal("4/3").find("I must be from 1 to N"), std::string::npos);
  EXPECT_NE(refusal("1/0").find("I must be from 1 to N"), std::string::npos);
  EXPECT_NE(refusal("1/99999").find("from 1 to 4096"), std::string::npos);
  EXPECT_NE(refusal("a/b").find("takes I/N"), std::string::npos);
  EXPECT_NE(refusal("2").find("takes I/N"), std::string::npos);
  EXPECT_NE(refusal("1/2/3").find("takes I/N"), std::string::npos);
  // Input is quoted as an excerpt: no control byte reaches the terminal.
  EXPECT_EQ(refusal("1\x1b[2J/3").find('\x1b'), std::string::npos);
}

TEST(Shard, AutoReadsSlurmArrays) {
  // --array=0-2: ids 0, 1, 2; --array=5-7: ids 5..7 with SLURM_ARRAY_TASK_MIN=5.
  ShardSpec s =
      parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  s = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "7"},
                                  {"SLURM_ARRAY_TASK_MIN", "5"},
                                  {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID");
  EXPECT_NE(refusal("auto", {{"SLURM_ARRAY_TASK_ID", "3"}}).find("SLURM_ARRAY_TASK_COUNT unset"),
            std::string::npos);
  EXPECT_NE(refusal("auto", {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})
                .find("outside 0..2"),
            std::string::npos);
  EXPECT_NE(refusal("auto", {{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})
                .find("is not an integer"),
            std::string::npos);
  EXPECT_NE(refusal("auto", {{"SLURM_ARRAY_TASK_ID", "-9223372036854775808"},
                             {"SLURM_ARRAY_TASK_MIN", "9223372036854775807"},
                             {"SLURM_ARRAY_TASK_COUNT", "3"}})
                .find("is not an integer from 0 to"),
            std::string::npos);
}

TEST(Shard, AutoReadsKubernetesIndexedJobsAndGoogleTest) {
  ShardSpec s =
      parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "0"}, {"JOB_COMPLETIONS", "4"}}));
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 4);
  EXPECT_NE(refusal("auto", {{"JOB_COMPLETION_INDEX", "0"}}).find("JOB_COMPLETIONS unset"),
            std::string::npos);
  s = parse_shard("auto", env_of({{"GTEST_SHARD_INDEX", "4"}, {"GTEST_TOTAL_SHARDS", "5"}}));
  EXPECT_EQ(s.index, 5);
  EXPECT_EQ(s.count, 5);
  // Slurm first, then Kubernetes, then GoogleTest.
  s = parse_shard("auto", env_of({{"GTEST_SHARD_INDEX", "0"},
                                  {"GTEST_TOTAL_SHARDS", "2"},
                                  {"JOB_COMPLETION_INDEX", "2"},
                                  {"JOB_COMPLETIONS", "3"}}));
  EXPECT_EQ(s.index, 3);
  EXPECT_NE(refusal("auto").find("no shard index in the environment"), std::string::npos);
}

// Seeded random sweeps: contexts in groups of random sizes; every split of them into N shards.
TEST(Shard, PartitionIsCompleteDisjointAndCarriesBaselines) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Context> contexts;
    const int n = 1 + static_cast<int>(rng() % 40);
    const int groups = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      Context c;
      c.index = i * 2 + static_cast<int>(rng() % 2);  // indices of a filtered sweep: ascending
      c.id = "gemm(i=" + std::to_string(c.index) + ")";
      c.group = "kv_len=" + std::to_string(rng() % groups);
      contexts.push_back(c);
    }
    std::map<std::string, int> first_of_group;
    for (const Context& c : contexts) first_of_group.try_emplace(c.group, c.index);
    const int shards = 1 + static_cast<int>(rng() % 6);
    std::map<int, int> owner;
    for (int s = 1; s <= shards; ++s) {
      const ShardSelection sel = select_shard(contexts, {s, shards, ""}, "f");
      EXPECT_EQ(sel.info.index, s);
      EXPECT_EQ(sel.info.filter, "f");
      std::set<int> ran;
      int last = -1;
      for (const Context& c : sel.contexts) {
        EXPECT_GT(c.index, last);  // sweep order kept
        last = c.index;
        ran.insert(c.index);
      }
      for (int o : sel.info.owned) {
        EXPECT_TRUE(owner.emplace(o, s).second) << "context " << o << " owned twice";
        EXPECT_TRUE(ran.count(o));
      }
      for (const Context& c : sel.contexts) {
        const bool owned = std::count(sel.info.owned.begin(), sel.info.owned.end(), c.index) > 0;
        // A context run but not owned is the baseline of a group this shard owns a context of.
        if (!owned) EXPECT_EQ(first_of_group.at(c.group), c.index);
        EXPECT_TRUE(ran.count(first_of_group.at(c.group)));
      }
    }
    EXPECT_EQ(owner.size(), contexts.size());  // every context owned once
  }
}

TEST(Shard, SelectContextIdsKeepsBaselines) {
  std::vector<Context> contexts(6);
  for (int i = 0; i < 6; ++i) {
    contexts[i].index = i;
    contexts[i].id = "c" + std::to_string(i);
    contexts[i].group = i < 3 ? "a" : "b";
  }
  const std::vector<Context> kept = select_context_ids(contexts, {"c4", "c2"});
  std::vector<std::string> ids;
  for (const Context& c : kept) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"c0", "c2", "c3", "c4"}));
  EXPECT_TRUE(select_context_ids(contexts, {"nope"}).empty());
}

}  // namespace
}  // namespace nvdet
