#pragma once
// The sweeps shared by the cpu-invariant (must find one result) and cpu-variant (must find
// several) tests. Each builds the probe's request from fixed seeded data, surrounds it with
// other seeded requests, runs the backend and records the probe's output bits per context.
#include <string>
#include <vector>

#include "tests/cpu_kernel_fixtures.h"

namespace nvdet::testing {

inline std::unique_ptr<Backend> make_cpu_backend(const std::string& name) {
  for (auto& r : cpu_backend_registrations()) {
    if (r.info.name == name) return r.make();
  }
  ADD_FAILURE() << "no CPU backend " << name;
  return nullptr;
}

inline constexpr uint64_t kProbe = 7;

// GEMM: bf16 a[batch, 1000] (probe row = stream 7) times a fixed bf16 w[72, 1000], fp32 out.
inline DistinctResults sweep_gemm(Backend& backend, const std::vector<SweepPoint>& points) {
  std::vector<uint64_t> w_streams(72);
  for (size_t j = 0; j < w_streams.size(); ++j) w_streams[j] = 5000 + j;
  const HostTensor w = seeded_rows(DType::kBF16, 1000, w_streams, 0.05f);
  DistinctResults r;
  for (const SweepPoint& p : points) {
    const int64_t idx = probe_index(p.batch, p.where);
    const HostTensor a = seeded_rows(DType::kBF16, 1000, batch_streams(p.batch, idx, kProbe));
    r.add(p.label(), row_bits(backend.run(GemmArgs{&a, &w, nullptr, DType::kFP32}, nullptr), idx));
  }
  return r;
}

// Row-op requests: the probe is a block of kProbeRows consecutive rows (a request of several
// tokens: per row, a different reduction plan changes the bits only 10-20% of the time, because
// the vendor trees are accurate; a block makes the variant canary reliable); fillers are one row.
inline constexpr int64_t kProbeRows = 8;

// Rows of a batch of `batch` requests with the probe at `index`, and the probe's first row.
inline std::vector<uint64_t> row_streams(int64_t batch, int64_t index, int64_t* probe_row) {
  std::vector<uint64_t> rows;
  for (uint64_t s : batch_streams(batch, index, kProbe)) {
    if (s == kProbe) {
      *probe_row = static_cast<int64_t>(rows.size());
      for (int64_t r = 0; r < kProbeRows; ++r) rows.push_back(kProbe * 100 + r);
    } else {
      rows.push_back(s);
    }
  }
  return rows;
}

// RMSNorm over rows of 4096 (bf16 in, fp32 out).
inline DistinctResults sweep_rmsnorm(Backend& backend, const std::vector<SweepPoint>& points) {
  const HostTensor weight = seeded_vector(DType::kBF16, 4096, 77);
  DistinctResults r;
  for (const SweepPoint& p : points) {
    int64_t row = 0;
    const auto streams = row_streams(p.batch, probe_index(p.batch, p.where), &row);
    const HostTensor x = seeded_rows(DType::kBF16, 4096, streams, 2.0f);
    r.add(p.label(), row_bits(backend.run(RmsNormArgs{&x, &weight, 1e-6f, DType::kFP32}, nullptr),
                              row, kProbeRows));
  }
  return r;
}

// Log-softmax over rows of 5000 (bf16 in, fp32 out).
inline DistinctResults sweep_log_softmax(Backend& backend, const std::vector<SweepPoint>& points) {
  DistinctResults r;
  for (const SweepPoint& p : points) {
    int64_t row = 0;
    const auto streams = row_streams(p.batch, probe_index(p.batch, p.where), &row);
    const HostTensor x = seeded_rows(DType::kBF16, 5000, streams, 3.0f);
    r.add(p.label(),
          row_bits(backend.run(LogSoftmaxArgs{&x, DType::kFP32}, nullptr), row, kProbeRows));
  }
  return r;
}

// A filler's KV length in [1, max_len], a function of its stream.
inline int32_t filler_len(uint64_t stream, int32_t max_len) {
  return 1 + static_cast<int32_t>((stream * 2654435761ull >> 7) % static_cast<uint64_t>(max_len));
}

// Decode: 16 query heads on 8 KV heads, head_dim 32, bf16; the probe has 700 cached tokens, the
// fillers 1..300. fp32 out.
inline DistinctResults sweep_decode(Backend& backend, const std::vector<SweepPoint>& points,
                                    AttentionSplits splits) {
  DistinctResults r;
  for (const SweepPoint& p : points) {
    const int64_t idx = probe_index(p.batch, p.where);
    std::vector<SeqSpec> seqs;
    for (uint64_t s : batch_streams(p.batch, idx, kProbe)) {
      seqs.push_back({s, s == kProbe ? 700 : filler_len(s, 300)});
    }
    const auto batch = make_attention_batch(DType::kBF16, seqs, 16, 8, 32, false,
                                            /*layout_seed=*/p.batch * 3 + p.where);
    AttentionDecodeArgs args = batch->decode(DType::kFP32);
    args.splits = splits;
    r.add(p.label(), row_bits(backend.run(args, nullptr), idx));
  }
  return r;
}

// Prefill in a batch: the probe brings 60 new tokens after 140 cached ones (40 of them from a
// prefix cache); fillers bring 1..16 new tokens on 1..48 cached. 4 query heads on 2 KV heads.
inline DistinctResults sweep_prefill_batch(Backend& backend,
                                           const std::vector<SweepPoint>& points) {
  DistinctResults r;
  for (const SweepPoint& p : points) {
    const int64_t idx = probe_index(p.batch, p.where);
    std::vector<SeqSpec> seqs;
    for (uint64_t s : batch_streams(p.batch, idx, kProbe)) {
      if (s == kProbe) {
        seqs.push_back({s, 200, 60, 40});
      } else {
        const int32_t kv = filler_len(s, 48);
        seqs.push_back({s, kv, std::min(kv, filler_len(s + 1, 16)), 0});
      }
    }
    const auto batch = make_attention_batch(DType::kBF16, seqs, 4, 2, 32, true,
                                            /*layout_seed=*/p.batch * 3 + p.where);
    const HostTensor out = backend.run(batch->prefill(DType::kFP32), nullptr);
    r.add(p.label(), row_bits(out, batch->q_start[idx], 60));
  }
  return r;
}

// Chunked prefill of a 300-token prompt (4 query heads on 2 KV heads, bf16, fp32 out): for each
// prefix length P and chunk size C (0 = the whole remainder at once), tokens [0, P) come from the
// prefix cache and [P, 300) are prefilled C at a time; the result recorded is the output of
// positions [200, 300), which every (P, C) pair computes.
inline DistinctResults sweep_prefill_chunking(Backend& backend, const std::vector<int32_t>& chunks,
                                              const std::vector<int32_t>& prefixes) {
  constexpr int32_t kPrompt = 300, kFrom = 200;
  DistinctResults r;
  for (int32_t prefix : prefixes) {
    for (int32_t chunk : chunks) {
      std::vector<uint64_t> bits;
      const int32_t step = chunk == 0 ? kPrompt : chunk;
      for (int32_t begin = prefix; begin < kPrompt; begin += step) {
        const int32_t end = std::min(kPrompt, begin + step);
        const auto batch = make_attention_batch(DType::kBF16, {{kProbe, end, end - begin, prefix}},
                                                4, 2, 32, true, /*layout_seed=*/begin);
        const HostTensor out = backend.run(batch->prefill(DType::kFP32), nullptr);
        for (int32_t pos = std::max(begin, kFrom); pos < end; ++pos) {
          const auto row = row_bits(out, pos - begin);
          bits.insert(bits.end(), row.begin(), row.end());
        }
      }
      r.add("prefix " + std::to_string(prefix) + ", chunk " +
                (chunk == 0 ? std::string("whole") : std::to_string(chunk)),
            std::move(bits));
    }
  }
  return r;
}

}  // namespace nvdet::testing
