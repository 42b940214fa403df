#include "lib/runner/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>

#include "lib/core/checked_parse.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/runner/context_selection.h"
#include "lib/scenario/context_filter.h"

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
                            const std::string& filter, std::vector<int> selection) {
  ShardSelection sel;
  std::vector<int> indices;
  for (const Context& c : contexts) indices.push_back(c.index);
  sel.info = {spec.index, spec.count, filter, std::move(selection),
              owned_by_shard(indices, spec.index, spec.count)};
  std::vector<bool> owned(contexts.size());
  for (size_t p = 0; p < contexts.size(); ++p) {
    owned[p] = std::binary_search(sel.info.owned.begin(), sel.info.owned.end(), contexts[p].index);
  }
  sel.contexts = keep_with_baselines(std::move(contexts), owned);
  return sel;
}

std::vector<int> owned_by_shard(const std::vector<int>& contexts, int index, int count) {
  std::vector<int> out;
  for (size_t p = static_cast<size_t>(index - 1); p < contexts.size();
       p += static_cast<size_t>(count)) {
    out.push_back(contexts[p]);
  }
  return out;
}

std::vector<int> partitioned_contexts(const ScenarioSummary& s, const ShardInfo& shard) {
  const std::string where = "the sweep of '" + excerpt(s.name) + "'";
  const OpSpec* op = find_op(s.op);
  if (!op) throw_input_error(where + " names no known op ('" + excerpt(s.op) + "')");
  // The axes' values as the reports record them, typed and checked by their rules.
  std::vector<std::pair<const AxisSpec*, std::vector<AxisValue>>> axes;
  double product = 1;
  for (const auto& [name, values] : s.axes) {
    const AxisSpec* a = find_axis(name);
    if (!a) throw_input_error(where + " has an unknown axis '" + excerpt(name) + "'");
    std::vector<AxisValue> typed;
    for (const std::string& v : values) typed.push_back(axis_value_from_text(*a, v));
    product *= static_cast<double>(typed.size());
    axes.emplace_back(a, std::move(typed));
  }
  if (!(product >= 1 && product <= std::numeric_limits<int>::max())) {
    throw_input_error(where + " has no context or more than one run can number");
  }
  const int total = static_cast<int>(product);
  if (!shard.selection.empty()) {
    for (size_t i = 0; i < shard.selection.size(); ++i) {
      const int c = shard.selection[i];
      if (c < 0 || c >= total || (i > 0 && shard.selection[i - 1] >= c)) {
        throw_input_error(where + ": the --last-failed selection names context " +
                          std::to_string(c) + ", outside its " + std::to_string(total) +
                          " contexts or out of order");
      }
    }
    return shard.selection;
  }
  std::vector<int> all(static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) all[static_cast<size_t>(i)] = i;
  const ContextFilter filter(shard.filter);
  if (filter.empty()) return all;
  if (total > kMaxPartitionedSweep) {
    throw_input_error(
        fmt::format("{} has {} contexts; a filtered sweep of more than {} cannot be "
                    "checked when merged",
                    where, total, kMaxPartitionedSweep));
  }
  // As select_contexts keeps them: the matches and the first context of each matched group,
  // with each context made (and checked) one at a time rather than all held at once.
  std::vector<bool> keep(static_cast<size_t>(total));
  std::map<std::string, int> group_first;
  std::vector<size_t> digit(axes.size(), 0);
  for (int i = 0; i < total; ++i) {
    std::vector<std::pair<std::string, AxisValue>> values;
    for (size_t a = 0; a < axes.size(); ++a) {
      values.emplace_back(axes[a].first->name, axes[a].second[digit[a]]);
    }
    const Context c = make_context(op->kind, i, std::move(values), nullptr, where);
    const int first = group_first.try_emplace(c.group, i).first->second;
    if (filter.matches(c.id))
      keep[static_cast<size_t>(i)] = keep[static_cast<size_t>(first)] = true;
    for (size_t a = axes.size(); a > 0; --a) {  // odometer, last axis fastest
      if (++digit[a - 1] < axes[a - 1].second.size()) break;
      digit[a - 1] = 0;
    }
  }
  std::vector<int> kept;
  for (int i = 0; i < total; ++i) {
    if (keep[static_cast<size_t>(i)]) kept.push_back(i);
  }
  return kept;
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
