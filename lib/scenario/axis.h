#pragma once
// The sweep axes: one declaration per axis (axis.cpp's table), the only place that says what an
// axis is. Its name and help (nvdet list, README), the values it takes (integers from a minimum,
// a few words, or either), whether it defines the request (so groups follow from the table), its
// value when a scenario does not sweep it, and the ops that take it. The scenario loader checks
// sweep values through it, Context (lib/scenario/context.h) checks every value a context is built
// from through it (a scenario's, `nvdet bisect --context`'s, a report's read back), and workloads
// read a context's typed values by Axis, never by name.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/ops/op_kind.h"

namespace nvdet {

struct Scenario;

// A sweep value: an integer (batch sizes, lengths) or a word (position "first", chunk "whole").
using AxisValue = std::variant<int64_t, std::string>;
std::string axis_value_string(const AxisValue& v);

// Every axis, in the order nvdet list and messages show them (the table's order).
enum class Axis : uint8_t {
  kBatch,
  kPosition,
  kTokens,
  kKvLen,
  kFillerKvLen,
  kPromptLen,
  kPrefillChunk,
  kPrefixLen,
  kNumSplits,
  kSplitSize,
  kPageSize,
  kMaxNewTokens,
  kScoreBatch,
  kScoreChunk,
  kSampler,
  kFillerRouting,
  kTp,
  kAllreduce,
  kChannels,
  kTrafficSeed,
  kMaxNumBatchedTokens,
  kMaxNumSeqs,
  kPrefixCaching,
  kChunkedPrefill,
  kFp8Format,
  kActScale,
  kWeightScale,
  kAccumulation,
  kConcurrency,
  kArrival,
  kFillerWords,
  kFillerMaxTokens,
};
inline constexpr size_t kAxisCount = static_cast<size_t>(Axis::kFillerMaxTokens) + 1;

enum class AxisValueType {
  kInteger,        // integers from `min`
  kWords,          // one of `words`
  kIntegerOrWord,  // either ("whole", "same", "first")
};

// The largest integer any axis takes (a per-dimension sanity limit, as the loader's shapes).
inline constexpr int64_t kMaxAxisInteger = int64_t{1} << 24;

struct AxisSpec {
  Axis axis = Axis::kBatch;
  std::string name;
  std::string help;  // one line, for nvdet list and README.md
  AxisValueType type = AxisValueType::kInteger;
  int64_t min = 0;                 // the smallest integer it takes (integer types)
  std::vector<std::string> words;  // the words it takes (word types)
  // True when the axis changes the request itself (its KV length, prompt, token count, the
  // invariant plan's split size): contexts that differ in such an axis are different
  // computations and are never compared with each other. The other axes (batch, position,
  // neighbours, chunking, pages, forced vendor splits) must not change a request's bits.
  bool defines_request = false;
  // The value a context has when the scenario does not sweep the axis, and what it is in words
  // (nvdet list).
  AxisValue (*default_value)(const Scenario&) = nullptr;
  std::string default_help;
  std::vector<OpKind> ops;        // the ops that take it
  int64_t max = kMaxAxisInteger;  // the largest integer it takes (tp and channels: 64)

  bool takes_integers() const { return type != AxisValueType::kWords; }
  bool takes_words() const { return type != AxisValueType::kInteger; }
  bool applies_to(OpKind op) const;
};

const std::vector<AxisSpec>& axis_table();
const AxisSpec& axis_spec(Axis a);
const AxisSpec* find_axis(std::string_view name);  // null when no axis has that name
// The names of the axes `op` takes, in table order.
std::vector<std::string> axes_of_op(OpKind op);

// Why `v` is not a value of axis `a`: "'kv_len' values must be at least 1, got 0"; nullopt when
// it is one. One rule for every source of values (scenario, --axis, bisect, a report).
std::optional<std::string> axis_value_problem(const AxisSpec& a, const AxisValue& v);
// A value written as text ("8", "whole"): the integer when the axis takes integers and the text
// is a decimal integer, else the word. Checked by axis_value_problem.
AxisValue axis_value_from_text(const AxisSpec& a, std::string_view text);

// Every axis's value in one context: the swept values, the scenario's defaults for the others.
using AxisSettings = std::array<AxisValue, kAxisCount>;
AxisSettings axis_defaults(const Scenario& s);

}  // namespace nvdet
