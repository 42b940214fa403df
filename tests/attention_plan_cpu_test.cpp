// One attention plan for decode and prefill on the CPU's invariant backends: a token's output row
// from cpu-invariant and cpu-portable has the same bits whether it is decoded (one query token
// over kv_len = position + 1) or prefilled, whole or in a chunk after a prefix, at any length:
// past one split (512 tokens by default) and with a split size that does not divide the tile.
// The GPU half is gpu_attention_plan_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/cpu_sweeps.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

constexpr int32_t kLen = 700;

// Rows [first, first + count) of `a` against rows [0, count) of `b`, bit for bit.
void expect_same_rows(const HostTensor& a, int64_t first, const HostTensor& b, int64_t count,
                      const std::string& what) {
  const size_t row = static_cast<size_t>(a.row_elems()) * dtype_size(a.dtype());
  ASSERT_GE(a.dim(0), first + count) << what;
  ASSERT_GE(b.dim(0), count) << what;
  for (int64_t r = 0; r < count; ++r) {
    if (std::memcmp(a.data() + (first + r) * row, b.data() + r * row, row) != 0) {
      ADD_FAILURE() << what << ": token " << first + r << " differs";
      return;
    }
  }
}

TEST(AttentionPlanCpu, DecodeRowEqualsPrefillRowAtAnyLength) {
  for (const char* name : {"cpu-invariant", "cpu-portable"}) {
    std::unique_ptr<Backend> b = make_cpu_backend(name);
    for (const int32_t split : {0, 200}) {
      SCOPED_TRACE(std::string(name) + " split " + std::to_string(split));
      const auto prompt =
          make_attention_batch(DType::kBF16, {{31, kLen, kLen, 0}}, 4, 2, 32, true, 7, 16);
      AttentionPrefillArgs whole = prompt->prefill(DType::kFP32);
      whole.splits.split_size = split;
      const HostTensor full = b->run(whole, nullptr);

      // Every token decoded: one sequence per position over the prompt's pages.
      AttentionDecodeArgs dec = prompt->decode(DType::kFP32);
      dec.splits.split_size = split;
      dec.kv.page_table.clear();
      dec.kv.kv_lens.clear();
      for (int32_t t = 0; t < kLen; ++t) {
        dec.kv.page_table.insert(dec.kv.page_table.end(), prompt->kv.page_table.begin(),
                                 prompt->kv.page_table.end());
        dec.kv.kv_lens.push_back(t + 1);
      }
      expect_same_rows(full, 0, b->run(dec, nullptr), kLen, "decode against whole prefill");

      // A chunk that starts inside a tile and crosses the split boundary, after its prefix.
      const HostTensor chunk_q = prompt->q.slice_rows(450, 130);
      AttentionPrefillArgs chunk = whole;
      chunk.q = &chunk_q;
      chunk.q_start = {0, 130};
      chunk.prefix_len = {450};
      chunk.kv.kv_lens = {580};
      expect_same_rows(full, 450, b->run(chunk, nullptr), 130, "chunk [450, 580)");
    }
  }
}

}  // namespace
}  // namespace nvdet::testing
