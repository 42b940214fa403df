#include "lib/runner/shard.h"

#include <cstdlib>

#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/runner/context_selection.h"

namespace nvdet {
namespace {

constexpr int64_t kMaxShardVariable = int64_t{1} << 30;

ShardSpec checked(int64_t index0, int64_t count, const std::string& source) {
  if (count < 1 || count > kMaxShards) {
    throw_input_error(source + " gives " + std::to_string(count) +
                      " shards; the count must be from 1 to " + std::to_string(kMaxShards));
  }
  if (index0 < 0 || index0 >= count) {
    throw_input_error(source + " gives shard index " + std::to_string(index0) + " (0-based), " +
                      "outside 0.." + std::to_string(count - 1));
  }
  return {static_cast<int>(index0) + 1, static_cast<int>(count), source};
}

int64_t env_integer(const EnvLookup& env, const std::string& name) {
  const std::optional<std::string> text = env(name);
  if (!text) {
    throw_input_error("--shard auto found " + name + " unset while its scheduler's index is set");
  }
  const std::optional<int64_t> n = parse_integer<int64_t>(*text);
  // Bounded before any arithmetic (the index is a difference of two of them).
  if (!n || *n < 0 || *n > kMaxShardVariable) {
    throw_input_error(name + "='" + excerpt(*text) + "' is not an integer from 0 to " +
                      std::to_string(kMaxShardVariable) + " (--shard auto)");
  }
  return *n;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

ShardSpec parse_shard(const std::string& text, const EnvLookup& env) {
  if (text == "auto") {
    if (env("SLURM_ARRAY_TASK_ID")) {
      const int64_t min =
          env("SLURM_ARRAY_TASK_MIN") ? env_integer(env, "SLURM_ARRAY_TASK_MIN") : 0;
      return checked(env_integer(env, "SLURM_ARRAY_TASK_ID") - min,
                     env_integer(env, "SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_ID");
    }
    if (env("JOB_COMPLETION_INDEX")) {
      return checked(env_integer(env, "JOB_COMPLETION_INDEX"), env_integer(env, "JOB_COMPLETIONS"),
                     "JOB_COMPLETION_INDEX");
    }
    if (env("GTEST_SHARD_INDEX")) {
      return checked(env_integer(env, "GTEST_SHARD_INDEX"), env_integer(env, "GTEST_TOTAL_SHARDS"),
                     "GTEST_SHARD_INDEX");
    }
    throw_input_error(
        "--shard auto found no shard index in the environment (SLURM_ARRAY_TASK_ID, "
        "JOB_COMPLETION_INDEX or GTEST_SHARD_INDEX)");
  }
  const size_t slash = text.find('/');
  const std::optional<int64_t> i =
      slash == std::string::npos ? std::nullopt : parse_integer<int64_t>(text.substr(0, slash));
  const std::optional<int64_t> n =
      slash == std::string::npos ? std::nullopt : parse_integer<int64_t>(text.substr(slash + 1));
  if (!i || !n) {
    throw_input_error("--shard takes I/N (shard I of N, from 1) or auto, not '" + excerpt(text) +
                      "'");
  }
  if (*i < 1 || *i > *n) {
    throw_input_error("--shard " + excerpt(text) + ": I must be from 1 to N");
  }
  return checked(*i - 1, *n, "--shard " + text);
}

ShardSelection select_shard(std::vector<Context> contexts, const ShardSpec& spec,
                            const std::string& filter) {
  ShardSelection sel;
  sel.info = {spec.index, spec.count, filter, {}};
  std::vector<bool> owned(contexts.size());
  for (size_t p = 0; p < contexts.size(); ++p) {
    owned[p] = static_cast<int>(p % spec.count) == spec.index - 1;
    if (owned[p]) sel.info.owned.push_back(contexts[p].index);
  }
  sel.contexts = keep_with_baselines(std::move(contexts), owned);
  return sel;
}

std::optional<ShardInfo> keep_shard(std::vector<Context>& contexts,
                                    const std::optional<ShardSpec>& spec,
                                    const std::string& filter) {
  if (!spec) return std::nullopt;
  ShardSelection sel = select_shard(std::move(contexts), *spec, filter);
  contexts = std::move(sel.contexts);
  return std::move(sel.info);
}

}  // namespace nvdet
