// nvdet bisect --format html: a self-contained page with the first op, the first flip and the
// growth of the difference as a table and a plot.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/report/bisect_html.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(BisectHtml, ShippedScenarioRendersEverySection) {
  const CommandResult r = run_nvdet("bisect " + (source_dir() / "scenarios/model-cpu.yaml").string() +
                                    " --backend cpu-variant --request 1 --format html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* id : {"id=\"summary\"", "id=\"first-op\"", "id=\"first-flip\"", "id=\"growth\"",
                         "id=\"growth-plot\""}) {
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
  }
  // One line per column of the growth table (embed, 2 layers, final_norm, logits).
  EXPECT_EQ(count(r.out, "<polyline class=\"series\""), 5u);
  EXPECT_NE(r.out.find("first argmax flip"), std::string::npos);  // the flip marker's title
  EXPECT_EQ(count(r.out, "http://"), 1u);  // the SVG namespace only: nothing is fetched
  EXPECT_EQ(r.out.find("https://"), std::string::npos);
}

TEST(BisectHtml, IdenticalContextsSaySoAndEscapeNames) {
  const nlohmann::json b = {{"scenario", "a<b"},
                            {"backend", "cpu-invariant"},
                            {"request", 0},
                            {"context_a", "model(batch=2)"},
                            {"context_b", nullptr},
                            {"first_op", nullptr},
                            {"first_flip", nullptr},
                            {"completion_a", {1, 2}},
                            {"completion_b", {1, 2}},
                            {"columns", {"embed", "logits"}},
                            {"growth", {{{"step", 0}, {"max_abs_diff", {0.0, 0.0}}}}}};
  const std::string h = render_bisect_html(b);
  EXPECT_NE(h.find("No op differs"), std::string::npos);
  EXPECT_NE(h.find("No flip"), std::string::npos);
  EXPECT_NE(h.find("Every difference is zero"), std::string::npos);
  EXPECT_NE(h.find("a&lt;b"), std::string::npos);
  EXPECT_EQ(h.find("a<b"), std::string::npos);
}

TEST(BisectHtml, RejectsAnUnknownFormat) {
  const CommandResult r = run_nvdet("bisect " + (source_dir() / "scenarios/model-cpu.yaml").string() +
                                    " --format pdf");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown bisect format 'pdf' (known formats: text, json, html)"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace nvdet::testing
