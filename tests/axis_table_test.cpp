// The axis table (lib/scenario/axis.h): every axis declared once, complete, and the one rule
// every context value is checked by, wherever it comes from: a scenario's sweep, nvdet bisect's
// --context, and a JSON report read back by nvdet report. Each refusal exits 2 and names the axis.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "lib/core/error.h"
#include "lib/loader/op_table.h"
#include "lib/scenario/axis.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

std::string scenario(const std::string& name) {
  return (source_dir() / "scenarios" / name).string();
}

TEST(AxisTable, EveryAxisIsDeclaredOnceInItsPlaceWithHelpDefaultAndOps) {
  ASSERT_EQ(axis_table().size(), kAxisCount);
  std::set<std::string> names;
  for (size_t i = 0; i < axis_table().size(); ++i) {
    const AxisSpec& a = axis_table()[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(static_cast<size_t>(a.axis), i);  // axis_spec(Axis) indexes the table
    EXPECT_EQ(&axis_spec(a.axis), &a);
    EXPECT_EQ(find_axis(a.name), &a);
    EXPECT_TRUE(names.insert(a.name).second);
    EXPECT_FALSE(a.help.empty());
    EXPECT_FALSE(a.default_help.empty());
    ASSERT_NE(a.default_value, nullptr);
    EXPECT_FALSE(a.ops.empty());
    // Word axes list their words; integer axes none.
    EXPECT_EQ(a.takes_words(), !a.words.empty());
    EXPECT_GE(a.min, 0);
  }
  EXPECT_EQ(find_axis("no_such_axis"), nullptr);
}

TEST(AxisTable, EveryOpTakesBatchAndPositionAndItsAxesComeFromTheTable) {
  for (const OpSpec& op : op_table()) {
    SCOPED_TRACE(std::string(op.name()));
    const std::vector<std::string> axes = axes_of_op(op.kind);
    EXPECT_FALSE(axes.empty());
    if (op.server) {  // a server's load: the fillers in flight and when the probe arrives
      EXPECT_EQ(axes.at(0), "concurrency");
      EXPECT_EQ(axes.at(1), "arrival");
    } else {
      EXPECT_EQ(axes.at(0), "batch");
      EXPECT_EQ(axes.at(1), "position");
    }
    for (const AxisSpec& a : axis_table())
      EXPECT_EQ(op.accepts_axis(a.name), a.applies_to(op.kind)) << a.name;
  }
}

// What a context reads for an axis it does not sweep is the scenario's own setting, and obeys
// the axis's rule.
TEST(AxisTable, DefaultsFollowTheScenarioAndObeyTheRules) {
  Scenario s;
  s.requests = {0, 1, 2};
  s.tokens = 5;
  s.attention.kv_len = 77;
  s.model.page_size = 32;
  s.attention.page_size = 8;
  s.model.score_chunk = 3;
  for (const OpSpec& op : op_table()) {
    s.op = op.kind;
    for (const AxisSpec& a : axis_table()) {
      SCOPED_TRACE(a.name + " / " + std::string(op.name()));
      EXPECT_EQ(axis_value_problem(a, a.default_value(s)), std::nullopt);
    }
  }
  s.op = OpKind::kModel;
  const AxisSettings model = axis_defaults(s);
  EXPECT_EQ(model[static_cast<size_t>(Axis::kBatch)], AxisValue(int64_t{3}));
  EXPECT_EQ(model[static_cast<size_t>(Axis::kPosition)], AxisValue(std::string("first")));
  EXPECT_EQ(model[static_cast<size_t>(Axis::kPageSize)], AxisValue(int64_t{32}));
  EXPECT_EQ(model[static_cast<size_t>(Axis::kPrefillChunk)], AxisValue(std::string("whole")));
  EXPECT_EQ(model[static_cast<size_t>(Axis::kScoreChunk)], AxisValue(int64_t{3}));
  EXPECT_EQ(model[static_cast<size_t>(Axis::kSampler)], AxisValue(std::string("per_request")));
  s.op = OpKind::kAttentionDecode;
  const AxisSettings decode = axis_defaults(s);
  EXPECT_EQ(decode[static_cast<size_t>(Axis::kPageSize)], AxisValue(int64_t{8}));
  EXPECT_EQ(decode[static_cast<size_t>(Axis::kKvLen)], AxisValue(int64_t{77}));
  EXPECT_EQ(decode[static_cast<size_t>(Axis::kFillerKvLen)], AxisValue(std::string("same")));
  EXPECT_EQ(decode[static_cast<size_t>(Axis::kTokens)], AxisValue(int64_t{5}));
}

TEST(AxisTable, RulesRefuseValuesOutsideThemNamingTheAxis) {
  const auto problem = [](Axis a, const AxisValue& v) {
    return axis_value_problem(axis_spec(a), v).value_or("");
  };
  EXPECT_EQ(problem(Axis::kBatch, int64_t{0}), "'batch' values must be at least 1, got 0");
  EXPECT_EQ(problem(Axis::kNumSplits, int64_t{-1}),
            "'num_splits' values must be non-negative, got -1");
  EXPECT_EQ(problem(Axis::kTokens, kMaxAxisInteger + 1),
            "'tokens' value 16777217 is more than the limit 16777216");
  EXPECT_EQ(problem(Axis::kKvLen, std::string("same")),
            "'kv_len' values must be integers, got 'same'");
  EXPECT_EQ(problem(Axis::kSampler, int64_t{1}),
            "'sampler' values must be 'per_request', 'batch_stream', got 1");
  EXPECT_EQ(
      problem(Axis::kPrefillChunk, std::string("hole")),
      "'prefill_chunk' values must be integers or 'whole', got 'hole' (did you mean 'whole'?)");
  EXPECT_EQ(problem(Axis::kPosition, int64_t{0}), "");
  EXPECT_EQ(problem(Axis::kFillerKvLen, std::string("same")), "");
  EXPECT_EQ(problem(Axis::kAllreduce, std::string("ring")), "");
  // Text reads as an integer only where the axis takes integers.
  EXPECT_EQ(axis_value_from_text(axis_spec(Axis::kPrefillChunk), "8"), AxisValue(int64_t{8}));
  EXPECT_EQ(axis_value_from_text(axis_spec(Axis::kPrefillChunk), "whole"),
            AxisValue(std::string("whole")));
  EXPECT_EQ(axis_value_from_text(axis_spec(Axis::kSampler), "1"), AxisValue(std::string("1")));
}

TEST(AxisTable, MakeContextFormatsIdAndGroupAndRefusesWhatTheOpDoesNotTake) {
  Scenario s;
  s.op = OpKind::kAttentionDecode;
  s.requests = {0};
  const AxisSettings d = axis_defaults(s);
  const Context c =
      make_context(s.op, 3, {{"kv_len", int64_t{255}}, {"batch", int64_t{4}}}, &d, "x");
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.id, "attention_decode(kv_len=255,batch=4)");
  EXPECT_EQ(c.group, "kv_len=255");
  EXPECT_EQ(c.integer(Axis::kKvLen), 255);
  EXPECT_EQ(c.integer(Axis::kBatch), 4);
  EXPECT_EQ(c.integer(Axis::kPageSize), s.attention.page_size);
  const auto refused = [&](std::vector<std::pair<std::string, AxisValue>> v) -> std::string {
    try {
      make_context(s.op, 0, std::move(v), &d, "where");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refused({{"tp", int64_t{2}}}),
            "where: axis 'tp' does not apply to op 'attention_decode' (its axes: batch, position, "
            "kv_len, filler_kv_len, num_splits, split_size, page_size)");
  EXPECT_NE(
      refused({{"kv_lne", int64_t{2}}}).find("unknown axis 'kv_lne' (did you mean 'kv_len'?)"),
      std::string::npos);
  EXPECT_EQ(refused({{"kv_len", int64_t{0}}}), "where: 'kv_len' values must be at least 1, got 0");
  EXPECT_EQ(refused({{"batch", int64_t{2}}, {"batch", int64_t{3}}}),
            "where: axis 'batch' is given twice");
}

// Refusal 1 of 3: a scenario's sweep value, at its line, exit 2.
TEST(AxisTable, ScenarioValueOutsideTheRuleIsRefusedNamingTheAxis) {
  const auto dir = make_temp_dir("axis-scenario");
  write_file(dir / "s.yaml",
             "name: s\nop: model\ndtype: bf16\nseed: 1\nmodel: {hidden: 64, layers: 1, heads: 2, "
             "kv_heads: 1, "
             "intermediate: 64, vocab: 64, prompt_len: 4, num_prompts: 2, max_new_tokens: 2}\n"
             "requests: [0]\nsweep:\n  max_new_tokens: [2, 0]\n"
             "backends: {cpu-invariant: invariant}\n");
  const CommandResult r = run_nvdet("audit " + (dir / "s.yaml").string() + " -q");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("s.yaml:8:23: 'max_new_tokens' values must be at least 1, got 0"),
            std::string::npos)
      << r.err;
}

// Refusal 2 of 3: nvdet bisect --context, checked by the same rule before anything runs.
TEST(AxisTable, BisectContextOutsideTheRuleIsRefusedNamingTheAxis) {
  struct Case {
    std::string context, says;
  };
  for (const Case& c : std::vector<Case>{
           {"max_new_tokens=0",
            "--context max_new_tokens=0: 'max_new_tokens' values must be at least 1, got 0"},
           {"prefill_chunk=hole",
            "'prefill_chunk' values must be integers or 'whole', got 'hole' (did you mean "
            "'whole'?)"},
           {"sampler=7", "'sampler' values must be 'per_request', 'batch_stream', got '7'"},
           {"kv_len=8", "axis 'kv_len' does not apply to op 'model'"},
           {"bach=2", "unknown axis 'bach' (did you mean 'batch'?)"},
       }) {
    SCOPED_TRACE(c.context);
    const CommandResult r =
        run_nvdet("bisect " + scenario("model-cpu.yaml") + " --context " + c.context);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

// Refusal 3 of 3: a report read back (nvdet report) whose context value its axis cannot take,
// or whose id does not match its values.
TEST(AxisTable, ReportContextOutsideTheRuleIsRefusedNamingTheAxis) {
  const auto dir = make_temp_dir("axis-report");
  const CommandResult audit = run_nvdet("audit " + scenario("quickstart.yaml") +
                                        " -q --format json --report-dir " + dir.string());
  ASSERT_EQ(audit.exit_code, 0) << audit.out << audit.err;
  const nlohmann::json good = nlohmann::json::parse(read_file(dir / "quickstart.json"));
  // The context values as the report holds them: each context's value of `axis` replaced.
  const auto with_value = [&](const std::string& axis, const nlohmann::json& value) {
    nlohmann::json j = good;
    if (j.contains("contexts")) {
      for (auto& c : j.at("contexts")) c.at("values")[axis] = value;
    } else {
      for (auto& c : j.at("cases")) c.at("context_values")[axis] = value;
    }
    return j;
  };
  struct Case {
    std::string name;
    nlohmann::json report;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"batch0", with_value("batch", 0), "'batch' values must be at least 1, got 0"},
           {"batch-text", with_value("batch", "0"), "'batch' values must be at least 1, got 0"},
           {"position", with_value("position", "nowhere"),
            "'position' values must be integers or 'first', 'middle', 'last', got 'nowhere'"},
           {"float", with_value("batch", 2.5),
            "context value of 'batch' must be an integer or a word"},
           {"mismatch", with_value("batch", 5), "does not match its values"},
       }) {
    SCOPED_TRACE(c.name);
    write_file(dir / (c.name + ".json"), c.report.dump());
    const CommandResult r = run_nvdet("report " + (dir / (c.name + ".json")).string() +
                                      " --report-dir " + (dir / "out").string() + " --format md");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("cannot read audit report"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace nvdet::testing
