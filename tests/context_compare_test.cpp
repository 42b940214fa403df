// Sweep expansion into contexts, --filter, batch layouts, and bitwise tensor comparison.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "lib/compare/compare.h"
#include "lib/core/error.h"
#include "lib/scenario/context.h"
#include "lib/scenario/context_filter.h"
#include "lib/workloads/batch_layout.h"

namespace nvdet {
namespace {

Scenario two_axis_scenario() {
  Scenario s;
  s.op = OpKind::kGemm;
  s.requests = {0, 5};
  s.sweep.push_back({Axis::kBatch, {int64_t{2}, int64_t{4}, int64_t{8}}, {}});
  s.sweep.push_back({Axis::kPosition, {std::string("first"), std::string("last")}, {}});
  return s;
}

TEST(Contexts, CartesianProductLastAxisFastest) {
  const auto ctx = expand_contexts(two_axis_scenario());
  ASSERT_EQ(ctx.size(), 6u);
  EXPECT_EQ(ctx[0].id, "gemm(batch=2,position=first)");
  EXPECT_EQ(ctx[1].id, "gemm(batch=2,position=last)");
  EXPECT_EQ(ctx[5].id, "gemm(batch=8,position=last)");
  EXPECT_EQ(ctx[3].integer(Axis::kBatch), 4);
  EXPECT_EQ(ctx[3].word(Axis::kPosition), "last");
  EXPECT_EQ(ctx[3].group, "");  // neither axis defines the request
  // An axis the scenario does not sweep reads the scenario's default (axis_table()).
  EXPECT_EQ(ctx[3].integer(Axis::kTokens), 1);
  EXPECT_EQ(ctx[3].integer(Axis::kTp), 1);
  EXPECT_EQ(ctx[3].word(Axis::kAllreduce), "auto");
}

TEST(Contexts, NoSweepIsOneContext) {
  Scenario s;
  s.op = OpKind::kRmsNorm;
  const auto ctx = expand_contexts(s);
  ASSERT_EQ(ctx.size(), 1u);
  EXPECT_EQ(ctx[0].id, "rmsnorm()");
}

TEST(Contexts, FilterKeepsBaselineAndRejectsBadRegex) {
  const auto ctx = filter_contexts(expand_contexts(two_axis_scenario()), "batch=8");
  ASSERT_EQ(ctx.size(), 3u);
  EXPECT_EQ(ctx[0].id, "gemm(batch=2,position=first)");  // the baseline stays
  EXPECT_EQ(ctx[1].index, 4);
  try {
    filter_contexts(expand_contexts(two_axis_scenario()), "batch=(");
    FAIL() << "an invalid regex must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
  }
  EXPECT_THROW(filter_contexts(expand_contexts(two_axis_scenario()), "kv_len"), Error);
}

// --filter is matched in linear time: '(.+)+X' against ids that almost match (catastrophic for a
// backtracking engine: minutes on ordinary ids) is as quick as a literal, and a pattern nested
// 100000 deep is refused with one sentence instead of overflowing the stack.
TEST(Contexts, FilterIsLinearTimeAndBoundedInNesting) {
  Scenario s;
  s.op = OpKind::kGemm;
  s.requests = {0};
  std::vector<AxisValue> batch;
  for (int64_t b = 1; b <= 2000; ++b) batch.emplace_back(std::in_place_type<int64_t>, b);
  s.sweep.push_back({Axis::kBatch, batch, {}});
  SweepAxis position{Axis::kPosition, {}, {}};
  for (const char* w : {"first", "middle", "last"}) position.values.emplace_back(std::string(w));
  s.sweep.push_back(std::move(position));
  const std::vector<Context> all = expand_contexts(s);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(select_contexts(all, ContextFilter("(.+)+X")).empty());
  EXPECT_TRUE(select_contexts(all, ContextFilter("^(([a-z]|[0-9]|=|,|\\(|\\))+)+X$")).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  const std::vector<Context> kept =
      select_contexts(all, ContextFilter("batch=1999,position=(middle|last)"));
  ASSERT_EQ(kept.size(), 3u);  // the baseline and the two matches
  EXPECT_EQ(kept[1].id, "gemm(batch=1999,position=middle)");
  const std::string nested = std::string(100000, '(') + "a" + std::string(100000, ')');
  try {
    ContextFilter f(nested);
    FAIL() << "a 200 KB pattern was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("more than the limit of 4096"), std::string::npos)
        << e.what();
  }
  // Nesting 2000 deep within the length limit: RE2 parses it without recursing on the stack.
  const std::string deep = std::string(2000, '(') + "batch=7," + std::string(2000, ')');
  EXPECT_EQ(select_contexts(all, ContextFilter(deep)).size(), 4u);  // baseline and batch=7's three
  try {
    ContextFilter f("batch=(");
    FAIL() << "an unbalanced group was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(
                  "--filter 'batch=(' is not a valid regular expression (missing )"),
              std::string::npos)
        << e.what();
  }
}

TEST(BatchLayout, ProbesSitWhereThePositionSays) {
  const Scenario s = two_axis_scenario();
  const auto ctx = expand_contexts(s);
  const BatchLayout first = make_batch_layout(s, ctx[4]);  // batch 8, first
  EXPECT_EQ(first.probe_slot, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(first.slots[1].probed);
  EXPECT_EQ(first.slots[1].request, 5);
  const BatchLayout last = make_batch_layout(s, ctx[5]);  // batch 8, last
  EXPECT_EQ(last.probe_slot, (std::vector<int64_t>{6, 7}));
  EXPECT_FALSE(last.slots[0].probed);
  const AxisSettings defaults = axis_defaults(s);
  const Context c =
      make_context(s.op, 0, {{"batch", int64_t{4}}, {"position", int64_t{3}}}, &defaults, "test");
  EXPECT_THROW(make_batch_layout(s, c), Error);  // slots 3 and 4 of a batch of 4
}

HostTensor make(DType t, std::vector<int64_t> shape, uint64_t stream) {
  HostTensor x(t, std::move(shape));
  fill_normal(x, 99, stream);
  return x;
}

TEST(Compare, IdenticalTensors) {
  const HostTensor a = make(DType::kBF16, {3, 16}, 1);
  const TensorComparison c = compare_tensors(a, a);
  EXPECT_TRUE(c.identical);
  EXPECT_FALSE(c.first.has_value());
  EXPECT_EQ(c.mismatch_count, 0);
}

TEST(Compare, FindsFirstMismatchBitsAndUlp) {
  const HostTensor a = make(DType::kBF16, {3, 16}, 2);
  HostTensor b = a;
  // Bump element (1, 5) and (2, 0) by one ULP (the raw pattern + 1 is the next value up in
  // magnitude, one ULP away whatever the sign).
  auto* raw = b.mutable_data_as<uint16_t>();
  raw[1 * 16 + 5] += 1;
  raw[2 * 16 + 0] += 1;
  const TensorComparison c = compare_tensors(a, b);
  ASSERT_FALSE(c.identical);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.first->flat_index, 21);
  EXPECT_EQ(c.first->coords, (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(c.first->ulp, 1u);
  EXPECT_EQ(c.first->a_bits, bits_hex(a.bits(21), DType::kBF16));
  EXPECT_EQ(c.first->b_bits.size(), 6u);  // "0x" + 4 hex digits
  EXPECT_EQ(c.mismatch_count, 2);
  EXPECT_EQ(c.first_mismatch_row, 1);
  EXPECT_EQ(c.mismatched_rows, 2);
  EXPECT_GT(c.max_abs_diff, 0.0);
  EXPECT_DOUBLE_EQ(c.max_abs_diff,
                   std::max(std::fabs(a.get(21) - b.get(21)), std::fabs(a.get(32) - b.get(32))));
}

TEST(Compare, RefusesDifferentShapesOrDtypes) {
  const HostTensor a = make(DType::kFP32, {2, 4}, 3);
  EXPECT_THROW(compare_tensors(a, make(DType::kFP32, {4, 2}, 3)), Error);
  EXPECT_THROW(compare_tensors(a, make(DType::kBF16, {2, 4}, 3)), Error);
}

}  // namespace
}  // namespace nvdet
