// The `cudnn` backend (cuDNN SDPA over the paged KV cache) against cpu-reference, its run notes,
// and what it refuses. Skips without a GPU; without a loadable cuDNN it skips too, unless
// NVDET_TEST_REQUIRE_CUDNN=1 (set it where cuDNN is meant to be found).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

// The backend, or null with the reason in `why` (no GPU, no cuDNN).
std::unique_ptr<Backend> cudnn_backend(std::string& why) {
  if (!gpu_available()) {
    why = "no GPU";
    return nullptr;
  }
  try {
    return make_backend("cudnn");
  } catch (const Error& e) {
    why = e.what();
    const char* req = std::getenv("NVDET_TEST_REQUIRE_CUDNN");
    if (req && std::string(req) == "1") ADD_FAILURE() << "cudnn backend required: " << why;
    return nullptr;
  }
}

#define CUDNN_OR_SKIP(var)             \
  std::string why_##var;               \
  auto var = cudnn_backend(why_##var); \
  if (!var) GTEST_SKIP() << why_##var

// Tolerance against cpu-reference (double accumulation, rounded to the same 16-bit dtype), per
// output row (one token and head): cuDNN's flash kernels round the softmax probabilities to the
// input dtype before the P·V product (bf16: 8 significant bits, relative error <= 2^-9 each) and
// round the output once more, so each element stays within ~1% of its row's largest value and
// the row's mean error within 0.3%. A wrong page, length or mask moves a row by a whole key's
// weight (~1/kv_len of the row) systematically, which the mean bound catches for the lengths
// used here.
constexpr double kRowMaxRel = 1.5e-2, kRowMeanRel = 3e-3;

void expect_rows_close(const HostTensor& got, const HostTensor& ref, int64_t head_dim,
                       const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  ASSERT_EQ(got.dtype(), ref.dtype()) << what;
  const int64_t rows = got.numel() / head_dim;
  int64_t bad = 0, first_bad = -1;
  double worst_max = 0.0, worst_mean = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double scale = 0.0, max_diff = 0.0, sum_diff = 0.0;
    for (int64_t e = r * head_dim; e < (r + 1) * head_dim; ++e) {
      scale = std::max(scale, std::abs(static_cast<double>(ref.get(e))));
      const double d = std::abs(static_cast<double>(got.get(e)) - ref.get(e));
      max_diff = std::max(max_diff, d);
      sum_diff += d;
    }
    scale = std::max(scale, 1e-6);
    const double rel_max = max_diff / scale, rel_mean = sum_diff / head_dim / scale;
    worst_max = std::max(worst_max, rel_max);
    worst_mean = std::max(worst_mean, rel_mean);
    if ((rel_max > kRowMaxRel || rel_mean > kRowMeanRel) && bad++ == 0) first_bad = r;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << rows << " rows out of tolerance, first "
                    << first_bad << "; worst row max error " << worst_max << ", mean " << worst_mean
                    << " (relative to the row's largest value)";
  std::cout << "[ cudnn    ] " << what << ": worst row max error " << worst_max << ", mean "
            << worst_mean << "\n";
}

struct Geometry {
  DType dtype;
  int32_t heads, kv_heads, head_dim, page_size;
};

const Geometry kGeometries[] = {
    {DType::kBF16, 32, 8, 128, 16},  // Llama-3-8B attention, the scenarios' geometry
    {DType::kFP16, 32, 8, 128, 16},
    {DType::kBF16, 8, 8, 64, 32},  // MHA, head 64, larger pages
};

std::string label(const char* op, const Geometry& g) {
  return std::string(op) + " " + std::string(dtype_name(g.dtype)) + " H" + std::to_string(g.heads) +
         "/KVH" + std::to_string(g.kv_heads) + " D" + std::to_string(g.head_dim) + " page " +
         std::to_string(g.page_size);
}

TEST(GpuCudnnAttention, DecodeMatchesReference) {
  CUDNN_OR_SKIP(cudnn);
  auto ref = make_backend("cpu-reference");
  const std::vector<SeqSpec> seqs = {{1, 1000}, {2, 1}, {3, 257}, {4, 4096}, {5, 77}};
  for (const Geometry& g : kGeometries) {
    const auto batch =
        make_attention_batch(g.dtype, seqs, g.heads, g.kv_heads, g.head_dim, false, 7, g.page_size);
    const AttentionDecodeArgs args = batch->decode(g.dtype);
    RunNotes notes;
    expect_rows_close(cudnn->run(args, &notes), ref->run(args, nullptr), g.head_dim,
                      label("decode", g));
    EXPECT_EQ(notes["kernel"], "cudnn_sdpa_fprop");
    EXPECT_EQ(notes["cudnn_version"].substr(0, 2), "9.");
    EXPECT_FALSE(notes["engine"].empty());
    EXPECT_EQ(notes["q_layout"], "padded");
    EXPECT_EQ(notes["mask"], "padding");
    std::cout << "[ cudnn    ] cuDNN " << notes["cudnn_version"] << ", engine " << notes["engine"]
              << ", " << notes["kv_layout"] << "\n";
  }
}

TEST(GpuCudnnAttention, PrefillMatchesReference) {
  CUDNN_OR_SKIP(cudnn);
  auto ref = make_backend("cpu-reference");
  // Unequal chunks (ragged queries), with cached prefixes, a 1-token chunk and a whole prompt.
  const std::vector<SeqSpec> ragged = {
      {1, 300, 300, 0}, {2, 1000, 64, 512}, {3, 77, 1, 0}, {4, 2048, 512, 1536}};
  // Equal chunks on top of different cache lengths (the audit's chunked prefill).
  const std::vector<SeqSpec> equal = {{5, 600, 128, 472}, {6, 128, 128, 0}, {7, 1111, 128, 983}};
  for (const Geometry& g : kGeometries) {
    for (const auto* seqs : {&ragged, &equal}) {
      const bool is_ragged = seqs == &ragged;
      const auto batch = make_attention_batch(g.dtype, *seqs, g.heads, g.kv_heads, g.head_dim, true,
                                              5, g.page_size);
      const AttentionPrefillArgs args = batch->prefill(g.dtype);
      RunNotes notes;
      expect_rows_close(cudnn->run(args, &notes), ref->run(args, nullptr), g.head_dim,
                        label(is_ragged ? "prefill ragged" : "prefill equal chunks", g));
      EXPECT_EQ(notes["q_layout"], is_ragged ? "ragged" : "padded");
      EXPECT_EQ(notes["mask"], "padding + causal (bottom-right)");
    }
  }
}

// The same request decoded twice in the same batch gives the same bits (cuDNN is run-to-run
// deterministic for one configuration); a request's bits across batches are the audit's job.
TEST(GpuCudnnAttention, RepeatedRunsAreIdentical) {
  CUDNN_OR_SKIP(cudnn);
  const auto batch =
      make_attention_batch(DType::kBF16, {{1, 5000}, {2, 33}, {3, 700}}, 32, 8, 128, false);
  const AttentionDecodeArgs args = batch->decode(DType::kBF16);
  const HostTensor a = cudnn->run(args, nullptr);
  const HostTensor b = cudnn->run(args, nullptr);
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.bits(i), b.bits(i)) << "element " << i;
}

TEST(GpuCudnnAttention, RefusesWhatItCannotCompute) {
  CUDNN_OR_SKIP(cudnn);
  const DeviceFacts device = device_facts();
  EXPECT_EQ(backend_supports("cudnn", OpKind::kGemm, DType::kBF16, device).status,
            Support::Status::kUnsupportedOp);
  EXPECT_EQ(backend_supports("cudnn", OpKind::kAttentionDecode, DType::kFP32, device).status,
            Support::Status::kUnsupportedOp);
  EXPECT_TRUE(backend_supports("cudnn", OpKind::kAttentionPrefill, DType::kFP16, device).ok());
  const auto batch = make_attention_batch(DType::kBF16, {{1, 100}, {2, 30}}, 32, 8, 128, false);
  auto expect_bad_input = [&](const AttentionDecodeArgs& args, const std::string& word) {
    try {
      cudnn->run(args, nullptr);
      ADD_FAILURE() << "expected a refusal naming " << word;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  expect_bad_input(batch->decode(DType::kFP32), "out_dtype");
  AttentionDecodeArgs split = batch->decode(DType::kBF16);
  split.splits.num_splits = 4;
  expect_bad_input(split, "num_splits");
  split = batch->decode(DType::kBF16);
  split.splits.split_size = 256;
  expect_bad_input(split, "split_size");
}

}  // namespace
}  // namespace nvdet::testing
