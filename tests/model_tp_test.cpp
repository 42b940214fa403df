// The tensor-parallel decoder (lib/model/tp_engine.h) on the transformers-made fixture
// checkpoints: in fp32 (fp32 wire, so sharding only reorders fp32 sums) tp 2 must give the logits
// of tp 1 within 1e-4 of their scale and the same tokens, through the per-head q/k norms (qwen3),
// q/k/v biases (qwen2) and attention and MLP biases (llama-t5); a wrong head, bias or KV shard
// would move them far more.
#include <gtest/gtest.h>

#include <cmath>

#include "lib/backend/backend.h"
#include "lib/loader/scenario_loader.h"
#include "lib/model/model_runner.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

TEST(ModelTp, TpTwoMatchesTpOneOnTheFixtures) {
  auto backend = make_backend("cpu-reference");
  for (const char* fixture : {"qwen3-t5", "qwen2-t5", "llama-t5"}) {
    SCOPED_TRACE(fixture);
    const std::string path =
        (testing::source_dir() / "tests/fixtures/checkpoints" / fixture).string();
    const Scenario s = parse_scenario(
        "name: t\nop: model\ndtype: fp32\nmodel: {checkpoint: " + path +
            ", prompt_len: 6, num_prompts: 3, max_new_tokens: 4}\nseed: 3\nrequests: [0, 2]\n"
            "sweep:\n  tp: [1, 2]\n  allreduce: ring\n  batch: [3]\n"
            "backends: {cpu-reference: report}\n",
        "t.yaml");
    const ModelRunner runner(s);
    const std::vector<Context> contexts = expand_contexts(s);
    ASSERT_EQ(contexts.size(), 2u);
    RunNotes notes;
    const auto one = runner.run(*backend, contexts[0], s.requests, nullptr, nullptr);
    const auto two = runner.run(*backend, contexts[1], s.requests, nullptr, &notes);
    EXPECT_NE(notes["decoder"].find("tensor parallel over 2"), std::string::npos);
    EXPECT_NE(notes["prefill.o_proj.allreduce"].find("ring"), std::string::npos);
    ASSERT_EQ(one.size(), two.size());
    for (size_t r = 0; r < one.size(); ++r) {
      EXPECT_EQ(one[r].completion, two[r].completion);
      double scale = 0, diff = 0;
      for (int64_t i = 0; i < one[r].logits.numel(); ++i) {
        scale = std::max(scale, std::fabs(double(one[r].logits.get(i))));
        diff = std::max(diff, std::fabs(double(one[r].logits.get(i)) - two[r].logits.get(i)));
      }
      EXPECT_GT(scale, 0.1);
      EXPECT_LT(diff, 1e-4 * scale) << "request " << r;
    }
  }
}

}  // namespace
}  // namespace nvdet
