// validate_op_args: valid arguments pass; each kind of inconsistency is rejected as bad input
// (exit code 2) with a sentence naming the op and the numbers that disagree.
#include "lib/ops/op_args.h"

#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "tests/cpu_kernel_fixtures.h"

namespace nvdet {
namespace {

using testing::SeqSpec;

// Expects validate_op_args to throw bad input whose message contains `needle`.
void expect_rejected(const OpArgs& args, const std::string& needle) {
  try {
    validate_op_args(args);
    ADD_FAILURE() << "accepted, expected an error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

TEST(OpArgs, NamesKindsAndInputDtypes) {
  EXPECT_EQ(op_name(OpKind::kGemm), "gemm");
  EXPECT_EQ(op_name(OpKind::kRmsNorm), "rmsnorm");
  EXPECT_EQ(op_name(OpKind::kLogSoftmax), "log_softmax");
  EXPECT_EQ(op_name(OpKind::kAttentionDecode), "attention_decode");
  EXPECT_EQ(op_name(OpKind::kAttentionPrefill), "attention_prefill");
  HostTensor x(DType::kFP16, {2, 8});
  EXPECT_EQ(op_kind(OpArgs{LogSoftmaxArgs{&x}}), OpKind::kLogSoftmax);
  EXPECT_EQ(input_dtype(OpArgs{LogSoftmaxArgs{&x}}), DType::kFP16);
}

TEST(OpArgs, Gemm) {
  HostTensor a(DType::kBF16, {4, 64}), w(DType::kBF16, {32, 64}), bias(DType::kBF16, {32});
  GemmArgs g{&a, &w, &bias};
  EXPECT_NO_THROW(validate_op_args(g));

  HostTensor w_bad_k(DType::kBF16, {32, 63});
  expect_rejected(GemmArgs{&a, &w_bad_k}, "gemm: a.k (64) != w.k (63)");
  HostTensor w_fp16(DType::kFP16, {32, 64});
  expect_rejected(GemmArgs{&a, &w_fp16}, "gemm: w is fp16 but a is bf16");
  HostTensor bias_bad(DType::kBF16, {31});
  expect_rejected(GemmArgs{&a, &w, &bias_bad}, "bias has 31 elements but n is 32");
  expect_rejected(GemmArgs{nullptr, &w}, "gemm: a is missing");
  HostTensor a3(DType::kBF16, {1, 4, 64});
  expect_rejected(GemmArgs{&a3, &w}, "a must have rank 2");
}

TEST(OpArgs, RowOps) {
  HostTensor x(DType::kFP32, {3, 16}), weight(DType::kFP32, {16}), weight15(DType::kFP32, {15});
  EXPECT_NO_THROW(validate_op_args(RmsNormArgs{&x, &weight}));
  expect_rejected(RmsNormArgs{&x, &weight15}, "rmsnorm: weight has 15 elements but rows have 16");
  expect_rejected(RmsNormArgs{&x, &weight, -1.0f}, "eps must be");
  HostTensor flat(DType::kFP32, {16}), empty_rows(DType::kFP32, {0, 16});
  expect_rejected(LogSoftmaxArgs{&flat}, "log_softmax: x must have rank 2");
  expect_rejected(LogSoftmaxArgs{&empty_rows}, "at least one row");
  EXPECT_NO_THROW(validate_op_args(LogSoftmaxArgs{&x}));
}

class AttentionArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    batch = testing::make_attention_batch(DType::kBF16, {{1, 40, 8, 16}, {2, 20, 20, 0}}, 4, 2, 16,
                                          /*prefill=*/true);
    decode_batch = testing::make_attention_batch(DType::kBF16, {{1, 40}, {2, 33}}, 4, 2, 16,
                                                 /*prefill=*/false);
  }
  std::unique_ptr<testing::AttentionBatch> batch, decode_batch;
};

TEST_F(AttentionArgsTest, ValidArgumentsPass) {
  EXPECT_NO_THROW(validate_op_args(decode_batch->decode()));
  EXPECT_NO_THROW(validate_op_args(batch->prefill()));
}

TEST_F(AttentionArgsTest, HeadsAndShapes) {
  AttentionDecodeArgs d = decode_batch->decode();
  d.num_heads = 30;
  d.num_kv_heads = 8;
  expect_rejected(d, "attention_decode: num_heads (30) is not a multiple of num_kv_heads (8)");
  d = decode_batch->decode();
  d.head_dim = 32;
  expect_rejected(d, "q has shape [2, 4, 16] but num_heads is 4 and head_dim is 32");
  d = decode_batch->decode();
  d.num_kv_heads = 4;
  expect_rejected(d, "the K cache has shape");
  d = decode_batch->decode();
  d.scale = 0.0f;
  expect_rejected(d, "scale must be a positive finite number");
  HostTensor q_fp16(DType::kFP16, {2, 4, 16});
  d = decode_batch->decode();
  d.q = &q_fp16;
  expect_rejected(d, "the K cache is bf16 but q is fp16");
}

TEST_F(AttentionArgsTest, PagedCache) {
  AttentionDecodeArgs d = decode_batch->decode();
  d.kv.kv_lens[1] = 0;
  expect_rejected(d, "sequence 1 has kv_len 0");
  d = decode_batch->decode();
  d.kv.page_size = 0;
  expect_rejected(d, "page_size must be positive, got 0");
  d = decode_batch->decode();
  d.kv.page_table.resize(3);
  expect_rejected(d, "the page table has 3 entries but 2 sequences x 3 pages need 6");
  d = decode_batch->decode();
  d.kv.kv_lens[0] = 49;  // 4 pages of 16, max_pages_per_seq is 3
  expect_rejected(d, "which needs 4 pages of 16 but max_pages_per_seq is 3");
  d = decode_batch->decode();
  d.kv.page_table[0] = 999;
  expect_rejected(d, "sequence 0 page 0 maps to page 999");
  d = decode_batch->decode();
  d.kv.kv_lens.pop_back();
  expect_rejected(d, "kv_lens has 1 entries but there are 2 sequences");
}

TEST_F(AttentionArgsTest, PrefillLayout) {
  AttentionPrefillArgs p = batch->prefill();
  p.q_start.back() = 27;
  expect_rejected(p, "q_start ends at 27 but q has 28 tokens");
  p = batch->prefill();
  p.kv.kv_lens[1] = 19;  // 20 new tokens cannot fit in 19 cached ones
  expect_rejected(p, "sequence 1 has 20 new tokens but only 19 cached tokens");
  p = batch->prefill();
  p.prefix_len[0] = 33;  // chunk starts at 40 - 8 = 32
  expect_rejected(p, "sequence 0 has prefix_len 33, outside [0, 32]");
  p = batch->prefill();
  p.q_start = {0};
  expect_rejected(p, "q_start must have num_seqs + 1");
}

}  // namespace
}  // namespace nvdet
