// One attention plan for decode and prefill on the GPU (kernels/attention_tc.cuh): a token's
// output row from cuda-invariant and cuda-portable has the same bits whether it is decoded (one
// query token over kv_len = position + 1), prefilled with the whole prompt, prefilled in a chunk
// after a prefix (chunk starts at residues 1, 63, 64, 127 and 129 of the 128-key tile), packed
// beside other sequences or alone; with the tensor-core kernel's CTAs folding the splits
// themselves or running them in parallel with the merge kernel after (or the last CTA of each
// row folding it), with one or two warpgroups of query rows per CTA, and with blocks of up to 8
// query rows in the swapped or the 64-row tensor-core form, with K and V pages by TMA or every
// tile by cp.async, and with the merge kernel loading 16 or 64 splits at a time
// (NVDET_ATTENTION_TC_*);
// and unchanged when every KV slot the sequences do not own holds NaN. Shapes: head_dim 64, 128
// and 256, bf16 and fp16, GQA groups 1, 3, 4 and 8, page sizes 1, 7, 8, 16, 32 and 128, split
// sizes 512 (the default), 256, 200 (a split end inside a tile) and 32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

struct PlanCase {
  DType dtype;
  int32_t heads, kv_heads, head_dim, page_size, split_size;
};

const PlanCase kCases[] = {
    {DType::kBF16, 32, 8, 128, 16, 0},   // Llama-3-8B's attention, the default split
    {DType::kFP16, 12, 4, 128, 7, 200},  // 3 heads per KV head, pages of 7, splits of 200
    {DType::kBF16, 8, 8, 64, 32, 0},     // MHA, head 64
    {DType::kFP16, 16, 2, 256, 1, 0},    // 8 heads per KV head, head 256, pages of one token
};

std::string name_of(const PlanCase& c) {
  return std::string(dtype_name(c.dtype)) + " H" + std::to_string(c.heads) + "/KVH" +
         std::to_string(c.kv_heads) + " D" + std::to_string(c.head_dim) + " page " +
         std::to_string(c.page_size) + " split " + std::to_string(c.split_size);
}

// Sets an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

// A prompt of `len` tokens prefilled whole: the pool, page table and every token's query.
struct Prompt {
  std::unique_ptr<AttentionBatch> batch;
  int32_t len = 0;
};

Prompt make_prompt(const PlanCase& c, int32_t len, uint64_t stream) {
  Prompt p;
  p.len = len;
  p.batch = make_attention_batch(c.dtype, {{stream, len, len, 0}}, c.heads, c.kv_heads, c.head_dim,
                                 true, stream, c.page_size);
  return p;
}

AttentionPrefillArgs whole(const Prompt& p, const PlanCase& c) {
  AttentionPrefillArgs a = p.batch->prefill(DType::kFP32);
  a.splits.split_size = c.split_size;
  return a;
}

// Tokens [begin, end) as one chunk after a prefix of `begin` tokens (the cache holds [0, end)).
struct Chunk {
  HostTensor q;
  AttentionPrefillArgs args;
};
std::unique_ptr<Chunk> chunk(const Prompt& p, const PlanCase& c, int32_t begin, int32_t end) {
  auto ch = std::make_unique<Chunk>();
  ch->q = p.batch->q.slice_rows(begin, end - begin);
  ch->args = whole(p, c);
  ch->args.q = &ch->q;
  ch->args.q_start = {0, end - begin};
  ch->args.prefix_len = {begin};
  ch->args.kv.kv_lens = {end};
  return ch;
}

// The prompt's last token decoded.
struct LastToken {
  HostTensor q;
  AttentionDecodeArgs args;
};
std::unique_ptr<LastToken> last_token_decoded(const Prompt& p, const PlanCase& c) {
  auto d = std::make_unique<LastToken>();
  d->q = p.batch->q.slice_rows(p.len - 1, 1);
  d->args = p.batch->decode(DType::kFP32);
  d->args.q = &d->q;
  d->args.splits.split_size = c.split_size;
  return d;
}

// Every token decoded: one sequence per position p with kv_len = p + 1 over the prompt's pages.
AttentionDecodeArgs every_token_decoded(const Prompt& p, const PlanCase& c) {
  AttentionDecodeArgs a = p.batch->decode(DType::kFP32);
  a.splits.split_size = c.split_size;
  const std::vector<int32_t> pages = p.batch->kv.page_table;
  a.kv.page_table.clear();
  a.kv.kv_lens.clear();
  for (int32_t t = 0; t < p.len; ++t) {
    a.kv.page_table.insert(a.kv.page_table.end(), pages.begin(), pages.end());
    a.kv.kv_lens.push_back(t + 1);
  }
  return a;
}

// Rows [first, first + count) of `a` against rows [0, count) of `b`, bit for bit; names the first
// row that differs.
void expect_same_rows(const HostTensor& a, int64_t first, const HostTensor& b, int64_t count,
                      const std::string& what) {
  ASSERT_GE(a.dim(0), first + count) << what;
  ASSERT_GE(b.dim(0), count) << what;
  const size_t row = static_cast<size_t>(a.row_elems()) * dtype_size(a.dtype());
  for (int64_t r = 0; r < count; ++r) {
    if (std::memcmp(a.data() + (first + r) * row, b.data() + r * row, row) != 0) {
      ADD_FAILURE() << what << ": token " << first + r << " differs";
      return;
    }
  }
}

bool all_finite(const HostTensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get(i))) return false;
  return true;
}

TEST(GpuAttentionPlan, DecodeEqualsPrefillWholeAndChunkedAtAnyLength) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for (const char* backend : {"cuda-invariant", "cuda-portable"}) {
    std::unique_ptr<Backend> b = make_backend(backend);
    for (const PlanCase& c : kCases) {
      for (const int32_t len : {700, 3000}) {
        if (std::string(backend) == "cuda-portable" && len > 700) continue;  // slow CUDA cores
        SCOPED_TRACE(std::string(backend) + " " + name_of(c) + " len " + std::to_string(len));
        const Prompt p = make_prompt(c, len, 40 + len);
        RunNotes notes;
        const HostTensor full = b->run(whole(p, c), &notes);
        ASSERT_TRUE(all_finite(full));
        if (std::string(backend) == "cuda-invariant") {
          EXPECT_EQ(notes["kernel"], "attention_tc_wgmma") << "the tensor-core kernels ran";
        }
        expect_same_rows(full, 0, b->run(every_token_decoded(p, c), nullptr), len,
                         "decode against whole prefill");
        for (const int32_t start : {1, 63, 64, 127, 129, 513, 640}) {
          for (const int32_t n : {1, 17, 200}) {
            const int32_t end = std::min(len, start + n);
            const auto ch = chunk(p, c, start, end);
            expect_same_rows(full, start, b->run(ch->args, nullptr), end - start,
                             "chunk [" + std::to_string(start) + ", " + std::to_string(end) + ")");
          }
        }
      }
    }
  }
}

// The same prompt beside other sequences in one call: its rows do not move.
TEST(GpuAttentionPlan, PrefillRowsIgnoreTheOtherSequences) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  const PlanCase& c = kCases[0];
  const Prompt alone = make_prompt(c, 900, 77);
  const HostTensor want = b->run(whole(alone, c), nullptr);
  // The probe third of four, with its own pages among the others'.
  auto batch = make_attention_batch(
      c.dtype, {{5, 300, 300, 0}, {6, 2000, 64, 1936}, {77, 900, 900, 0}, {8, 40, 1, 39}}, c.heads,
      c.kv_heads, c.head_dim, true, 99, c.page_size);
  const HostTensor got = b->run(batch->prefill(DType::kFP32), nullptr);
  expect_same_rows(got, 300 + 64, want, 900, "the probe packed with three others");
}

// Fused splits against split-parallel units with the merge kernel, one warpgroup against two, the
// merge as a dependent launch or after the grid: the same bits, and the notes say which ran.
TEST(GpuAttentionPlan, ExecutionAndWarpgroupChoicesGiveTheSameBits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  for (const PlanCase& c : kCases) {
    SCOPED_TRACE(name_of(c));
    const Prompt p = make_prompt(c, 1500, 12);
    const auto ch = chunk(p, c, 1100, 1500);
    const AttentionDecodeArgs dec = every_token_decoded(p, c);
    HostTensor base_prefill, base_chunk, base_decode;
    bool first = true;
    for (const char* execution : {"fused", "split"}) {
      for (const char* consumers : {"1", "2"}) {
        const ScopedEnv e("NVDET_ATTENTION_TC_EXECUTION", execution);
        const ScopedEnv w("NVDET_ATTENTION_TC_CONSUMERS", consumers);
        const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", "dependent");
        const std::string what = std::string(execution) + " x" + consumers;
        RunNotes notes;
        HostTensor pf = b->run(whole(p, c), &notes);
        EXPECT_EQ(notes["splits_run"], std::string(execution) == "split"
                                           ? "split-parallel, merged in split order"
                                           : "fused in each block's CTA")
            << what;
        HostTensor ck = b->run(ch->args, nullptr);
        HostTensor dc = b->run(dec, nullptr);
        if (first) {
          base_prefill = std::move(pf);
          base_chunk = std::move(ck);
          base_decode = std::move(dc);
          first = false;
          continue;
        }
        expect_same_rows(pf, 0, base_prefill, p.len, what + " prefill");
        expect_same_rows(ck, 0, base_chunk, 400, what + " chunk");
        expect_same_rows(dc, 0, base_decode, p.len, what + " decode");
      }
    }
    // The merge launched after the attention grid instead of as its programmatic dependent.
    const ScopedEnv e("NVDET_ATTENTION_TC_EXECUTION", "split");
    const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", "after");
    RunNotes notes;
    expect_same_rows(b->run(whole(p, c), &notes), 0, base_prefill, p.len, "merge after, prefill");
    EXPECT_EQ(notes["splits_run"],
              "split-parallel, merged in split order by a launch after the grid");
    expect_same_rows(b->run(ch->args, nullptr), 0, base_chunk, 400, "merge after, chunk");
    expect_same_rows(b->run(dec, nullptr), 0, base_decode, p.len, "merge after, decode");
  }
}

// Blocks of at most 8 query rows (every decode here; a chunk of one or two tokens) in the swapped
// form against the 64-row form, fused and split-parallel, the merge kernel or the last CTA
// folding: the same bits, and the notes say which form ran.
TEST(GpuAttentionPlan, SwappedAndWideSmallBlocksGiveTheSameBits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  for (const PlanCase& c : kCases) {
    SCOPED_TRACE(name_of(c));
    const Prompt p = make_prompt(c, 1300, 31);
    const AttentionDecodeArgs dec = every_token_decoded(p, c);
    const auto one = chunk(p, c, 1100, 1101);
    const auto two = chunk(p, c, 1227, 1229);
    for (const char* execution : {"fused", "split"}) {
      for (const char* merge : {"dependent", "last"}) {
        if (std::string(execution) == "fused" && std::string(merge) == "last") continue;
        const ScopedEnv e("NVDET_ATTENTION_TC_EXECUTION", execution);
        const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", merge);
        const std::string what = std::string(execution) + ", merge " + merge;
        HostTensor wide_dec, wide_one, wide_two;
        {
          const ScopedEnv f("NVDET_ATTENTION_TC_SMALL_BLOCKS", "wide");
          RunNotes notes;
          wide_dec = b->run(dec, &notes);
          EXPECT_EQ(notes["small_blocks"], "every block in the 64-row form") << what;
          wide_one = b->run(one->args, nullptr);
          wide_two = b->run(two->args, nullptr);
        }
        const ScopedEnv f("NVDET_ATTENTION_TC_SMALL_BLOCKS", "swapped");
        RunNotes notes;
        expect_same_rows(b->run(dec, &notes), 0, wide_dec, p.len, what + " decode");
        EXPECT_EQ(notes["small_blocks"],
                  "blocks of at most 8 query rows swapped (keys and head_dim on wgmma's 64 rows)")
            << what;
        expect_same_rows(b->run(one->args, nullptr), 0, wide_one, 1, what + " chunk of 1");
        expect_same_rows(b->run(two->args, nullptr), 0, wide_two, 2, what + " chunk of 2");
      }
    }
  }
}

// Split-parallel rows folded by the CTA that writes each row's last split, in place of the merge
// kernel: the same bits with one warpgroup and two. Its counters must read zero again after every
// launch (else the next launch folds no row and leaves its output unwritten): another prompt
// decoded between two runs of the first must match the merge kernel's result for it.
TEST(GpuAttentionPlan, RowsFoldedByTheirLastCtaGiveTheMergeKernelsBits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  for (const PlanCase& c : kCases) {
    SCOPED_TRACE(name_of(c));
    const Prompt p = make_prompt(c, 1500, 21);
    const Prompt other = make_prompt(c, 1500, 22);
    const auto ch = chunk(p, c, 1100, 1500);
    const AttentionDecodeArgs dec = every_token_decoded(p, c);
    const AttentionDecodeArgs other_dec = every_token_decoded(other, c);
    const ScopedEnv e("NVDET_ATTENTION_TC_EXECUTION", "split");
    HostTensor base_prefill, base_chunk, base_decode, base_other;
    {
      const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", "after");
      base_prefill = b->run(whole(p, c), nullptr);
      base_chunk = b->run(ch->args, nullptr);
      base_decode = b->run(dec, nullptr);
      base_other = b->run(other_dec, nullptr);
    }
    // attention_tc_fold_in_kernel's limit with one warpgroup: else the merge kernel runs.
    const bool folds = (c.heads / c.kv_heads) * c.head_dim <= 1024;
    const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", "last");
    for (const char* consumers : {"1", "2"}) {
      const ScopedEnv w("NVDET_ATTENTION_TC_CONSUMERS", consumers);
      const std::string what = std::string("folded by the last CTA x") + consumers;
      RunNotes notes;
      expect_same_rows(b->run(dec, &notes), 0, base_decode, p.len, what + " decode");
      if (folds) {
        EXPECT_EQ(notes["splits_run"],
                  "split-parallel, folded in split order by each row's last CTA")
            << what;
      }
      expect_same_rows(b->run(other_dec, nullptr), 0, base_other, other.len,
                       what + " other decode");
      expect_same_rows(b->run(dec, nullptr), 0, base_decode, p.len, what + " decode again");
      expect_same_rows(b->run(whole(p, c), nullptr), 0, base_prefill, p.len, what + " prefill");
      expect_same_rows(b->run(ch->args, nullptr), 0, base_chunk, 400, what + " chunk");
    }
  }
}

// The persistent CTAs' items in stride order or in balanced lists, over several CTA counts: the
// same bits, and the notes say which ran.
TEST(GpuAttentionPlan, CtaCountsAndItemSchedulesGiveTheSameBits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  for (const PlanCase& c : kCases) {
    SCOPED_TRACE(name_of(c));
    const Prompt p = make_prompt(c, 1500, 13);
    const auto ch = chunk(p, c, 1100, 1500);
    const AttentionDecodeArgs dec = every_token_decoded(p, c);
    const HostTensor base_prefill = b->run(whole(p, c), nullptr);
    const HostTensor base_chunk = b->run(ch->args, nullptr);
    const HostTensor base_decode = b->run(dec, nullptr);
    for (const char* schedule : {"stride", "balanced"}) {
      for (const char* ctas : {"1", "5", "131", "auto"}) {
        const ScopedEnv e("NVDET_ATTENTION_TC_SCHEDULE", schedule);
        const ScopedEnv n("NVDET_ATTENTION_TC_CTAS", ctas);
        const std::string what = std::string(schedule) + " over " + ctas + " CTAs";
        RunNotes notes;
        const HostTensor pf = b->run(whole(p, c), &notes);
        // Lists only where there are more items than CTAs; the prompt always has more than 5.
        if (std::string(schedule) == "stride" || std::string(ctas) == "5") {
          EXPECT_NE(notes["ctas"].find(std::string(schedule) == "stride" ? "stride order"
                                                                         : "balanced lists"),
                    std::string::npos)
              << what << ": " << notes["ctas"];
        }
        expect_same_rows(pf, 0, base_prefill, p.len, what + " prefill");
        expect_same_rows(b->run(ch->args, nullptr), 0, base_chunk, 400, what + " chunk");
        expect_same_rows(b->run(dec, nullptr), 0, base_decode, p.len, what + " decode");
      }
    }
  }
}

// K and V tiles by TMA (whole pages, where the page size divides the tile width and the split
// size) against every tile by cp.async: the same bits for prefill whole and chunked and for
// every token decoded, and the notes say which copy ran. Page sizes 8 to 128 (the tile width of
// head_dim 64 and 128), head_dim 256's 64-key tiles, a split of 256; pages of 7 stay on cp.async.
TEST(GpuAttentionPlan, KvPagesByTmaOrCpAsyncGiveTheSameBits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const PlanCase cases[] = {
      kCases[0],
      kCases[1],
      kCases[2],
      {DType::kFP16, 32, 8, 128, 8, 256},
      {DType::kBF16, 8, 8, 64, 128, 0},
      {DType::kBF16, 16, 2, 256, 16, 0},
  };
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  for (const PlanCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    const Prompt p = make_prompt(c, 1400, 41);
    const auto ch = chunk(p, c, 1029, 1400);
    const AttentionDecodeArgs dec = every_token_decoded(p, c);
    const bool tma = c.page_size % 8 == 0;
    RunNotes notes_cp, notes_tma;
    HostTensor cp_prefill, cp_chunk, cp_decode;
    {
      const ScopedEnv k("NVDET_ATTENTION_TC_KV_COPY", "cp_async");
      cp_prefill = b->run(whole(p, c), &notes_cp);
      cp_chunk = b->run(ch->args, nullptr);
      cp_decode = b->run(dec, nullptr);
    }
    const ScopedEnv k("NVDET_ATTENTION_TC_KV_COPY", "auto");
    expect_same_rows(b->run(whole(p, c), &notes_tma), 0, cp_prefill, p.len, "prefill");
    expect_same_rows(b->run(ch->args, nullptr), 0, cp_chunk, 1400 - 1029, "chunk");
    expect_same_rows(b->run(dec, nullptr), 0, cp_decode, p.len, "decode");
    EXPECT_EQ(notes_cp["kv_copy"], "cp.async");
    EXPECT_EQ(notes_tma["kv_copy"].rfind("TMA", 0) == 0, tma) << notes_tma["kv_copy"];
  }
}

// The merge kernel (launched after the grid or as its programmatic dependent) against the fold
// inside the attention kernel and against fused execution: the same bits, at 157 and 79 splits a
// row (two of the merge kernel's chunks of staged states at head_dim 128 and 256), 13 and the
// default 5.
TEST(GpuAttentionPlan, TheMergeKernelFoldsAsTheAttentionKernelDoes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const PlanCase cases[] = {
      {DType::kBF16, 8, 2, 128, 16, 16},
      {DType::kFP16, 12, 4, 128, 7, 200},
      {DType::kBF16, 16, 2, 256, 16, 32},
      {DType::kFP16, 8, 8, 64, 16, 0},
  };
  std::unique_ptr<Backend> b = make_backend("cuda-invariant");
  for (const PlanCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    const Prompt p = make_prompt(c, 2500, 51);
    const auto ch = chunk(p, c, 2300, 2500);
    const auto dec = last_token_decoded(p, c);
    RunNotes notes;
    HostTensor prefill, chunked, decoded;
    {
      const ScopedEnv e("NVDET_ATTENTION_TC_EXECUTION", "split");
      const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", "after");
      prefill = b->run(whole(p, c), &notes);
      chunked = b->run(ch->args, nullptr);
      decoded = b->run(dec->args, nullptr);
    }
    EXPECT_EQ(notes["splits_run"],
              "split-parallel, merged in split order by a launch after the grid");
    expect_same_rows(prefill, p.len - 1, decoded, 1, "decode against prefill");
    for (const char* execution : {"split", "fused"}) {
      for (const char* merge : {"dependent", "last"}) {
        SCOPED_TRACE(std::string(execution) + ", merge " + merge);
        const ScopedEnv e("NVDET_ATTENTION_TC_EXECUTION", execution);
        const ScopedEnv m("NVDET_ATTENTION_TC_MERGE", merge);
        expect_same_rows(b->run(whole(p, c), nullptr), 0, prefill, p.len, "prefill");
        expect_same_rows(b->run(ch->args, nullptr), 0, chunked, 200, "chunk");
        expect_same_rows(b->run(dec->args, nullptr), 0, decoded, 1, "decode");
      }
    }
  }
}

// Every slot no sequence owns (past each sequence's last token in its last page, and the spare
// pages) set to NaN: the outputs keep their bits, so 0 x (unwritten slot) never reaches them.
TEST(GpuAttentionPlan, NaNInFreeKvSlotsChangesNothing) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for (const char* backend : {"cuda-invariant", "cuda-portable"}) {
    std::unique_ptr<Backend> b = make_backend(backend);
    for (const PlanCase& c : kCases) {
      SCOPED_TRACE(std::string(backend) + " " + name_of(c));
      const Prompt p = make_prompt(c, 333, 21);
      const auto ch = chunk(p, c, 129, 333);
      const auto dec = last_token_decoded(p, c);
      const HostTensor clean_prefill = b->run(whole(p, c), nullptr);
      const HostTensor clean_chunk = b->run(ch->args, nullptr);
      const HostTensor clean_decode = b->run(dec->args, nullptr);
      expect_same_rows(clean_prefill, p.len - 1, clean_decode, 1, "decode against prefill");
      // Poison: mark the owned slots, then NaN everything else.
      AttentionBatch& kv = *p.batch;
      const int64_t slot_elems = int64_t{c.kv_heads} * c.head_dim;
      std::vector<bool> owned(static_cast<size_t>(kv.k.dim(0) * kv.k.dim(1)), false);
      for (int32_t t = 0; t < p.len; ++t) {
        owned[static_cast<size_t>(kv.kv.page_table[t / c.page_size]) * c.page_size +
              t % c.page_size] = true;
      }
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (size_t s = 0; s < owned.size(); ++s) {
        if (owned[s]) continue;
        for (int64_t e = 0; e < slot_elems; ++e) {
          kv.k.set(static_cast<int64_t>(s) * slot_elems + e, nan);
          kv.v.set(static_cast<int64_t>(s) * slot_elems + e, nan);
        }
      }
      expect_same_rows(b->run(whole(p, c), nullptr), 0, clean_prefill, p.len, "prefill");
      expect_same_rows(b->run(ch->args, nullptr), 0, clean_chunk, 333 - 129, "chunk");
      expect_same_rows(b->run(dec->args, nullptr), 0, clean_decode, 1, "decode");
    }
  }
}

}  // namespace
}  // namespace nvdet::testing
