// GPU decode and prefill attention: cuda-invariant and cuda-vendor-policy against cpu-reference
// (double accumulation); the invariant kernels bitwise identical across batch sizes, positions,
// co-batched KV lengths, page sizes, prefill chunk sizes and prefix lengths; the vendor policy
// shown to diverge somewhere in the same sweeps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "tests/cpu_kernel_fixtures.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

constexpr int32_t kHeads = 32, kKvHeads = 8, kHeadDim = 128;
constexpr uint64_t kAttnProbe = 11;

// ---- accuracy: mixed batches from the shared fixtures, against cpu-reference
// ---------------------

struct AccuracyCase {
  DType in, out;
  int32_t heads, kv_heads, head_dim, page_size;
};

const AccuracyCase kAccuracyCases[] = {
    {DType::kBF16, DType::kFP32, 32, 8, 128, 16},  // the Llama-style GQA shape
    {DType::kFP16, DType::kFP16, 8, 8, 64, 32},    // MHA, head 64
    {DType::kBF16, DType::kBF16, 16, 2, 256, 16},  // 8 query heads per KV head, head 256
    {DType::kFP16, DType::kFP32, 12, 4, 128, 16},  // 3 query heads per KV head
};

std::string case_name(const char* backend, const AccuracyCase& c) {
  return std::string(backend) + " " + std::string(dtype_name(c.in)) + " H" +
         std::to_string(c.heads) + "/KVH" + std::to_string(c.kv_heads) + " D" +
         std::to_string(c.head_dim) + " page " + std::to_string(c.page_size);
}

// Outputs are convex combinations of V rows (|v| ~ 1); fp32 accumulation over <= 4096 keys keeps
// errors below 1e-5 of the largest output. 16-bit outputs may differ by one rounding step.
constexpr double kAttnRelTol = 2e-5;

// The tensor-core kernels (cuda-invariant on sm_90a) round the softmax weights P to the input
// type before P V, as FlashAttention-style kernels do: each weight carries up to half an ulp of
// bf16 (2^-9) or fp16 (2^-11) of relative error. Against the largest output: 2^-8 and 2^-10.
double tolerance(const RunNotes& notes, DType in) {
  const auto kernel = notes.find("kernel");
  if (kernel == notes.end() || kernel->second != "attention_tc_wgmma") return kAttnRelTol;
  return in == DType::kBF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -10);
}

TEST(GpuAttention, DecodeMatchesReference) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto ref = make_backend("cpu-reference");
  const std::vector<SeqSpec> seqs = {{1, 1000}, {2, 1}, {3, 257}, {4, 4096}, {5, 77}};
  for (const AccuracyCase& c : kAccuracyCases) {
    const auto batch =
        make_attention_batch(c.in, seqs, c.heads, c.kv_heads, c.head_dim, false, 3, c.page_size);
    const AttentionDecodeArgs args = batch->decode(c.out);
    const HostTensor want = ref->run(args, nullptr);
    for (const char* name : {"cuda-invariant", "cuda-vendor-policy"}) {
      RunNotes notes;
      const HostTensor got = make_backend(name)->run(args, &notes);
      expect_close_to_reference(got, want, tolerance(notes, c.in), 1,
                                "decode " + case_name(name, c));
      if (std::string(name) == "cuda-invariant") {
        // Sequence 0 has 1000 tokens: splits of 512 and 488.
        EXPECT_EQ(notes["split_size"], "512");
        EXPECT_EQ(notes["num_splits"], "2");
      }
    }
  }
}

TEST(GpuAttention, DecodeFixedSplitSettingsMatchReference) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const auto batch = make_attention_batch(DType::kBF16, {{1, 1000}, {2, 300}, {3, 5}}, kHeads,
                                          kKvHeads, kHeadDim, false);
  AttentionDecodeArgs args = batch->decode(DType::kFP32);
  const HostTensor want = make_backend("cpu-reference")->run(args, nullptr);
  RunNotes inv_notes, vendor_notes;
  args.splits.split_size = 100;  // invariant: splits of 100 tokens
  args.splits.num_splits = 3;    // vendor: 3 splits per sequence
  const HostTensor inv = make_backend("cuda-invariant")->run(args, &inv_notes);
  expect_close_to_reference(inv, want, tolerance(inv_notes, DType::kBF16), 0,
                            "invariant, split_size 100");
  expect_close_to_reference(make_backend("cuda-vendor-policy")->run(args, &vendor_notes), want,
                            kAttnRelTol, 0, "vendor, num_splits 3");
  EXPECT_EQ(inv_notes["split_size"], "100");
  EXPECT_EQ(inv_notes["num_splits"], "10");
  EXPECT_EQ(vendor_notes["num_splits"], "3");
}

TEST(GpuAttention, PrefillMatchesReference) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto ref = make_backend("cpu-reference");
  // A chunk after a prefix, a whole prompt, and a single token at the end of a long prefix.
  const std::vector<SeqSpec> seqs = {{1, 700, 400, 100}, {2, 65, 65, 0}, {3, 300, 1, 299}};
  for (const AccuracyCase& c : kAccuracyCases) {
    const auto batch =
        make_attention_batch(c.in, seqs, c.heads, c.kv_heads, c.head_dim, true, 5, c.page_size);
    const AttentionPrefillArgs args = batch->prefill(c.out);
    const HostTensor want = ref->run(args, nullptr);
    for (const char* name : {"cuda-invariant", "cuda-vendor-policy"}) {
      RunNotes notes;
      const HostTensor got = make_backend(name)->run(args, &notes);
      expect_close_to_reference(got, want, tolerance(notes, c.in), 1,
                                "prefill " + case_name(name, c));
    }
  }
}

TEST(GpuAttention, UnsupportedShapesAreBadInput) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const auto batch = make_attention_batch(DType::kBF16, {{1, 10}}, 4, 4, 96, false);
  try {
    make_backend("cuda-invariant")->run(batch->decode(), nullptr);
    ADD_FAILURE() << "head_dim 96 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
  }
}

// ---- invariance sweeps: one KV pool, page tables that change per context ---------------------

// A paged K/V pool whose first pages hold the probe sequence in order (token t at flat row t,
// whatever the page size, so its data is the same in every layout); the other pages hold other
// seeded data that fillers point into at random.
struct KvPool {
  HostTensor k, v;
  int32_t page_size = 16;
  int32_t num_pages = 0;
};

KvPool make_pool(int32_t page_size, int32_t tokens) {
  KvPool p;
  p.page_size = page_size;
  p.num_pages = tokens / page_size;
  p.k = HostTensor(DType::kBF16, {p.num_pages, page_size, kKvHeads, kHeadDim});
  p.v = HostTensor(DType::kBF16, {p.num_pages, page_size, kKvHeads, kHeadDim});
  fill_normal(p.k, kSeed, 901);
  fill_normal(p.v, kSeed, 902);
  return p;
}

// Query rows: token t of a sequence with `stream` has the same row in every call.
HostTensor query_rows(uint64_t stream, int32_t first_token, int32_t count) {
  HostTensor all(DType::kBF16, {first_token + count, kHeads, kHeadDim});
  fill_normal(all, kSeed, stream * 8 + 1);
  return all.slice_rows(first_token, count);
}

struct Sequences {
  std::vector<int32_t> page_table, kv_lens;
  int32_t max_pages = 0;
};

// Page tables: the probe (index `probe`) reads pages 0, 1, 2, ... of the pool; the others read
// random pages.
Sequences layout(const KvPool& pool, const std::vector<int32_t>& kv_lens, size_t probe,
                 std::mt19937_64& rng) {
  Sequences s;
  s.kv_lens = kv_lens;
  for (int32_t len : kv_lens)
    s.max_pages = std::max(s.max_pages, (len + pool.page_size - 1) / pool.page_size);
  s.page_table.assign(kv_lens.size() * s.max_pages, 0);
  for (size_t i = 0; i < kv_lens.size(); ++i) {
    for (int32_t j = 0; j < (kv_lens[i] + pool.page_size - 1) / pool.page_size; ++j) {
      s.page_table[i * s.max_pages + j] =
          i == probe ? j : static_cast<int32_t>(rng() % static_cast<uint64_t>(pool.num_pages));
    }
  }
  return s;
}

PagedKv paged(const KvPool& pool, const Sequences& s) {
  PagedKv kv;
  kv.k = &pool.k;
  kv.v = &pool.v;
  kv.page_table = s.page_table;
  kv.max_pages_per_seq = s.max_pages;
  kv.page_size = pool.page_size;
  kv.kv_lens = s.kv_lens;
  return kv;
}

// The probe's decode output bits over batch sizes 1..64 and 96..256, first and last, with random
// co-batched KV lengths (1..4096), on pools of page size 16 and 32.
std::map<std::string, DistinctResults> decode_sweep(int32_t probe_len) {
  std::map<std::string, DistinctResults> out;
  std::vector<std::unique_ptr<Backend>> backends;
  for (const char* name : {"cuda-invariant", "cuda-vendor-policy"})
    backends.push_back(make_backend(name));
  std::mt19937_64 rng(probe_len);
  for (int32_t page_size : {16, 32}) {
    const KvPool pool = make_pool(page_size, 8192);
    for (const SweepPoint& p : batch_sweep({96, 128, 200, 256}, true)) {
      if (p.where == 1) continue;
      const int64_t idx = probe_index(p.batch, p.where);
      std::vector<int32_t> lens(static_cast<size_t>(p.batch));
      for (auto& l : lens) l = 1 + static_cast<int32_t>(rng() % 4096);
      lens[idx] = probe_len;
      const Sequences s = layout(pool, lens, static_cast<size_t>(idx), rng);
      HostTensor q = query_rows(5000 + p.batch * 3 + p.where, 0, static_cast<int32_t>(p.batch));
      copy_rows(query_rows(kAttnProbe, 0, 1), q, idx);
      AttentionDecodeArgs args;
      args.q = &q;
      args.kv = paged(pool, s);
      args.num_heads = kHeads;
      args.num_kv_heads = kKvHeads;
      args.head_dim = kHeadDim;
      args.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
      args.out_dtype = DType::kFP32;
      const std::string label = p.label() + ", page " + std::to_string(page_size);
      for (auto& b : backends) out[b->info().name].add(label, row_bits(b->run(args, nullptr), idx));
    }
  }
  return out;
}

TEST(GpuAttention, DecodeInvariantAcrossBatchesAndPages) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  for (int32_t probe_len : {1000, 4097}) {
    auto r = decode_sweep(probe_len);
    EXPECT_EQ(r["cuda-invariant"].count(), 1u)
        << "kv " << probe_len << ": " << r["cuda-invariant"].contexts();
    EXPECT_GT(r["cuda-vendor-policy"].count(), 1u)
        << "kv " << probe_len << ": the vendor policy gave one result over the whole sweep";
  }
}

// The probe sequence (2600 tokens) computed chunk by chunk after a prefix, next to a filler
// sequence; returns token -> output bits for the tokens the context computed.
using TokenBits = std::map<int32_t, std::vector<uint64_t>>;

TokenBits prefill_context(Backend& backend, const KvPool& pool, const HostTensor& probe_q,
                          int32_t total, int32_t prefix, int32_t chunk, uint64_t filler_stream) {
  TokenBits out;
  std::mt19937_64 rng(filler_stream);
  const int32_t filler_len = 700, filler_new = 64;
  const HostTensor filler_q = query_rows(filler_stream, filler_len - filler_new, filler_new);
  for (int32_t c0 = prefix; c0 < total; c0 += chunk) {
    const int32_t c1 = std::min(total, c0 + chunk), n = c1 - c0;
    const Sequences s = layout(pool, {c1, filler_len}, 0, rng);
    HostTensor q(DType::kBF16, {n + filler_new, kHeads, kHeadDim});
    copy_rows(probe_q.slice_rows(c0, n), q, 0);
    copy_rows(filler_q, q, n);
    AttentionPrefillArgs args;
    args.q = &q;
    args.q_start = {0, n, n + filler_new};
    args.prefix_len = {prefix, 300};
    args.kv = paged(pool, s);
    args.num_heads = kHeads;
    args.num_kv_heads = kKvHeads;
    args.head_dim = kHeadDim;
    args.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    args.out_dtype = DType::kFP32;
    const HostTensor o = backend.run(args, nullptr);
    for (int32_t i = 0; i < n; ++i) out[c0 + i] = row_bits(o, i);
  }
  return out;
}

TEST(GpuAttention, PrefillInvariantAcrossChunksAndPrefixes) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  constexpr int32_t kTotal = 2600;
  struct Context {
    int32_t page_size, prefix, chunk;
  };
  std::vector<Context> contexts;
  for (int32_t prefix : {0, 1, 511, 2048}) {
    for (int32_t chunk : {kTotal, 16, 64, 256, 512}) contexts.push_back({16, prefix, chunk});
  }
  contexts.push_back({32, 0, 64});
  contexts.push_back({32, 511, kTotal});
  std::map<int32_t, KvPool> pools;
  for (int32_t ps : {16, 32}) pools.emplace(ps, make_pool(ps, 4096));
  const HostTensor probe_q = query_rows(kAttnProbe, 0, kTotal);

  for (const char* name : {"cuda-invariant", "cuda-vendor-policy"}) {
    auto backend = make_backend(name);
    TokenBits baseline;
    int64_t compared = 0, differing = 0;
    std::string first_difference;
    for (const Context& c : contexts) {
      const TokenBits got = prefill_context(*backend, pools.at(c.page_size), probe_q, kTotal,
                                            c.prefix, c.chunk, 77 + c.prefix * 13 + c.chunk);
      if (baseline.empty()) {
        baseline = got;  // prefix 0, whole prompt in one chunk, page 16
        continue;
      }
      for (const auto& [token, bits] : got) {
        ++compared;
        if (bits != baseline.at(token)) {
          if (differing++ == 0) {
            first_difference = "token " + std::to_string(token) + " with prefix " +
                               std::to_string(c.prefix) + ", chunk " + std::to_string(c.chunk) +
                               ", page " + std::to_string(c.page_size);
          }
        }
      }
    }
    EXPECT_GT(compared, 20000);
    if (std::string(name) == "cuda-invariant") {
      EXPECT_EQ(differing, 0) << differing << " of " << compared
                              << " tokens differ; first: " << first_difference;
    } else {
      EXPECT_GT(differing, 0) << "the vendor policy gave the same bits for every chunking";
    }
  }
}

}  // namespace
}  // namespace nvdet::testing
