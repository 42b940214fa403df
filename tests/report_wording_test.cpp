// Words the reports must not get wrong: an op outside the layers (the embedding, the final norm,
// the LM head: traced as layer -1) is named without a layer; a sampled token flip shows the
// tokens' probabilities, never a top-1/top-2 logit margin (a drawn token was not the argmax);
// `nvdet info` marks the backends this machine cannot run; `nvdet list` does not say the model
// decodes only greedily.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/report/console_summary.h"
#include "lib/report/report_text.h"
#include "lib/runner/verdict.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

TEST(ReportWording, OpsOutsideTheLayersHaveNoLayer) {
  EXPECT_EQ(describe_op_location(0, -1, "embed"), "step 0, op embed");
  EXPECT_EQ(describe_op_location(3, 1, "down"), "step 3, layer 1, op down");
}

// A model result whose one divergence is a token flip at step 2, first parted at the embedding.
AuditResult flipped(bool sampled) {
  AuditResult r;
  r.scenario.name = "m";
  r.scenario.op = "model";
  r.scenario.coord_names = {"step", "vocab"};
  Context a, b;
  a.index = 0;
  a.id = "model(batch=2)";
  b.index = 1;
  b.id = "model(batch=8)";
  r.contexts = {a, b};
  BackendOutcome o;
  o.name = "cpu-variant";
  o.expect = Expectation::kReport;
  o.max_distinct_completions = 2;
  r.backends = {o};
  Divergence d;
  d.backend = "cpu-variant";
  d.request = 1;
  d.context = b.id;
  d.context_index = 1;
  d.baseline_context = a.id;
  d.tokens = 4;
  CompletionDivergence c;
  c.step = 2;
  c.baseline_token = 10;
  c.token = 11;
  c.baseline_logit_of_baseline_token = 3.5;
  c.baseline_logit_of_token = 3.25;
  c.baseline_margin = 0.25;
  c.sampled = sampled;
  c.baseline_prob_of_baseline_token = 0.4;
  c.baseline_prob_of_token = 0.3;
  d.completion = c;
  d.first_op = OpDivergence{0, -1, "embed"};
  r.divergences = {d};
  r.summary.backends = 1;
  r.summary.contexts = 2;
  r.summary.cases = 2;
  return r;
}

TEST(ReportWording, ASampledFlipHasNoLogitMargin) {
  const std::string greedy = render_console_summary(flipped(false));
  EXPECT_NE(greedy.find("top-1/top-2 margin 0.25"), std::string::npos) << greedy;
  EXPECT_NE(greedy.find("its bits parted first at step 0, op embed"), std::string::npos) << greedy;
  EXPECT_EQ(greedy.find("layer -1"), std::string::npos) << greedy;
  const std::string sampled = render_console_summary(flipped(true));
  EXPECT_EQ(sampled.find("margin 0.25"), std::string::npos) << sampled;
  EXPECT_NE(sampled.find("sampled: baseline probabilities 0.4 vs 0.3"), std::string::npos)
      << sampled;
  EXPECT_EQ(sampled.find("layer -1"), std::string::npos) << sampled;
}

TEST(ReportWording, InfoMarksTheBackendsThisMachineCannotRun) {
  const CommandResult text = run_nvdet("info");
  const CommandResult json = run_nvdet("info --format json");
  ASSERT_EQ(text.exit_code, 0);
  ASSERT_EQ(json.exit_code, 0);
  const nlohmann::json availability = nlohmann::json::parse(json.out).at("backend_availability");
  ASSERT_GT(availability.size(), 4u);
  for (const auto& [name, row] : availability.items()) {
    const size_t at = text.out.find("\n  " + name + " ");
    ASSERT_NE(at, std::string::npos) << name << "\n" << text.out;
    const std::string line = text.out.substr(at + 1, text.out.find('\n', at + 1) - at - 1);
    if (row.at("available").get<bool>()) {
      EXPECT_NE(line.find(" available"), std::string::npos) << line;
    } else {
      EXPECT_NE(line.find("unavailable: " + row.at("unavailable_reason").get<std::string>()),
                std::string::npos)
          << line;
    }
  }
}

TEST(ReportWording, ListSaysTheModelSamplesToo) {
  const CommandResult r = run_nvdet("list");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("decoding greedily or by seeded sampling"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nvdet::testing
