#pragma once
// The transformers oracle of tests/fixtures/checkpoints (made by make_fixtures.py there): for
// each tiny checkpoint, the prompt, transformers' greedy tokens and its fp32 logits
// ([steps, vocab]: row 0 after the prompt, row t after t greedy tokens). Shared by the CPU
// oracle test and the GPU one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lib/model/decoder.h"
#include "lib/tensorio/npy.h"
#include "tests/test_support.h"

namespace nvdet::testing {

// Every fixture: each architecture in both config formats (t4: top-level rope_theta and
// rope_scaling; t5: rope_parameters), RoPE default / llama3 / linear, tied and untied heads.
inline const std::vector<std::string> kOracleFixtures = {
    "llama-t4",   "llama-t5", "llama31-t4", "llama31-t5", "llama-linear-t4", "mistral-t4",
    "mistral-t5", "qwen2-t4", "qwen2-t5",   "qwen3-t4",   "qwen3-t5"};

inline std::filesystem::path fixture_dir(const std::string& name) {
  return source_dir() / "tests/fixtures/checkpoints" / name;
}

struct Oracle {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;  // transformers' greedy choice at each step
  int64_t steps = 0, vocab = 0;
  std::vector<float> logits;  // [steps, vocab]

  const float* row(int64_t t) const { return logits.data() + t * vocab; }
};

inline Oracle load_oracle(const std::string& name) {
  const nlohmann::json j = nlohmann::json::parse(read_file(fixture_dir(name) / "oracle.json"));
  Oracle o;
  o.prompt = j.at("prompt").get<std::vector<int32_t>>();
  o.tokens = j.at("tokens").get<std::vector<int32_t>>();
  const AnyTensor t = read_npy(fixture_dir(name) / "logits.npy");
  o.steps = t.shape.at(0);
  o.vocab = t.shape.at(1);
  for (int64_t i = 0; i < t.numel(); ++i) o.logits.push_back(static_cast<float>(t.value(i)));
  return o;
}

// What one decode gave against the oracle.
struct OracleMatch {
  double max_error = 0;  // largest |logit - oracle| over the compared steps, in units of scale
  int32_t compared_steps = 0;
  bool ended_at_near_tie = false;  // the tokens parted where the oracle's margin was within 2 tol
};

// The scale of step t's logits: errors of fp32 arithmetic grow with the logits' size, so the
// tolerance is relative to the step's largest |logit| (at least 1).
inline double logit_scale(const Oracle& o, int64_t t) {
  double m = 1.0;
  for (int64_t v = 0; v < o.vocab; ++v) m = std::max(m, std::abs(static_cast<double>(o.row(t)[v])));
  return m;
}

// Compares nvdet's logits and tokens with the oracle step by step: every logit within
// tol * scale; the tokens equal wherever the oracle's top-1/top-2 margin exceeds 2 tol * scale
// (logits off by at most tol each cannot swap two values further apart). Where the tokens part
// at a near tie, the sequences differ from there on and the comparison stops.
inline OracleMatch compare_with_oracle(const SequenceResult& r, const Oracle& o, double tol,
                                       const std::string& what) {
  OracleMatch m;
  EXPECT_EQ(r.logits.dim(1), o.vocab) << what;
  EXPECT_GE(r.logits.dim(0), o.steps) << what;
  if (r.logits.dim(1) != o.vocab || r.logits.dim(0) < o.steps) return m;
  for (int64_t t = 0; t < o.steps; ++t) {
    const float* got = r.logits.data_as<float>() + t * o.vocab;
    const double scale = logit_scale(o, t);
    double err = 0;
    for (int64_t v = 0; v < o.vocab; ++v)
      err = std::max(err, std::abs(double{got[v]} - o.row(t)[v]));
    m.max_error = std::max(m.max_error, err / scale);
    m.compared_steps = static_cast<int32_t>(t + 1);
    EXPECT_LE(err, tol * scale) << what << ": step " << t << " logits differ from transformers' by "
                                << err << " (scale " << scale << ")";
    std::vector<float> sorted(o.row(t), o.row(t) + o.vocab);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    const double margin = double{sorted[0]} - sorted[1];
    if (r.completion[t] != o.tokens[t]) {
      EXPECT_LE(margin, 2 * tol * scale)
          << what << ": step " << t << " chose token " << r.completion[t] << ", transformers "
          << o.tokens[t] << " with a margin of " << margin;
      m.ended_at_near_tie = true;
      break;
    }
  }
  return m;
}

}  // namespace nvdet::testing
