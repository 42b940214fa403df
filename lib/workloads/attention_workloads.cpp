// attention_decode and attention_prefill: each request is one sequence with its own paged KV
// cache; the batch is the set of sequences processed together.
#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/workloads/batch_layout.h"
#include "lib/workloads/footprint.h"
#include "lib/workloads/paged_kv_builder.h"
#include "lib/workloads/workload.h"

namespace nvdet {
namespace {

// Host memory one context's KV cache may take: the development and CI machines have 24 GiB.
constexpr double kMaxKvBytes = 16.0 * (1 << 30);

uint64_t slot_stream(const BatchSlot& slot) {
  return slot.probed ? request_stream(slot.request) : filler_stream(slot.request);
}

struct AttentionDims {
  int32_t heads, kv_heads, head_dim, page_size;
  float scale;
  AttentionSplits splits;
};

AttentionDims dims_for(const Scenario& s, const Context& c) {
  const AttentionShape& a = s.attention;
  AttentionDims d;
  d.heads = a.num_heads;
  d.kv_heads = a.num_kv_heads;
  d.head_dim = a.head_dim;
  d.page_size = static_cast<int32_t>(c.integer(Axis::kPageSize));
  d.scale = a.scale.value_or(1.0f / std::sqrt(static_cast<float>(a.head_dim)));
  d.splits.num_splits = static_cast<int32_t>(c.integer(Axis::kNumSplits));
  d.splits.split_size = static_cast<int32_t>(c.integer(Axis::kSplitSize));
  return d;
}

class AttentionDecodeWorkload final : public Workload {
 public:
  explicit AttentionDecodeWorkload(const Scenario& s) : s_(s) {}

  std::vector<std::string> coord_names() const override { return {"token", "head", "dim"}; }

  std::vector<RequestOutput> run(Backend& backend, const Context& c, RunNotes* notes) override {
    if (!cached_ || cached_id_ != c.id) {
      cached_.reset();  // free the previous context's cache before building the next
      cached_ = std::make_unique<Batch>();
      build(c, *cached_);
      cached_id_ = c.id;
    }
    const Batch& b = *cached_;
    const HostTensor out = backend.run(b.args, notes);
    std::vector<RequestOutput> outputs;
    for (size_t p = 0; p < b.layout.probe_slot.size(); ++p) {
      outputs.push_back(
          {s_.requests[p], out.slice_rows(b.layout.probe_slot[p], 1), {}, {}, {}, {}, {}});
    }
    return outputs;
  }

  std::unique_ptr<BenchCase> bench_case(const Context& c) override {
    auto bc = std::make_unique<DecodeBench>();
    build(c, bc->batch);
    bc->args = bc->batch.args;
    double kv_tokens = 0;
    for (int32_t len : bc->batch.kv.view.kv_lens) kv_tokens += len;
    const AttentionDims d = dims_for(s_, c);
    bc->flops = 4.0 * kv_tokens * d.heads * d.head_dim;
    bc->bytes = 2.0 * kv_tokens * d.kv_heads * d.head_dim * dtype_size(s_.dtype) +
                2.0 * static_cast<double>(bc->batch.q.numel()) * dtype_size(s_.dtype);
    return bc;
  }

 private:
  struct Batch {
    BatchLayout layout;
    PagedKvStorage kv;
    HostTensor q;
    AttentionDecodeArgs args;
  };
  struct DecodeBench : BenchCase {
    Batch batch;
  };

  // Builds in place: the arguments point into the batch's own tensors.
  void build(const Context& c, Batch& b) const {
    b.layout = make_batch_layout(s_, c);
    const AttentionDims d = dims_for(s_, c);
    const int32_t kv_len = static_cast<int32_t>(c.integer(Axis::kKvLen));
    const auto* filler = std::get_if<int64_t>(&c.value(Axis::kFillerKvLen));  // null: "same"
    const int32_t filler_len = filler ? static_cast<int32_t>(*filler) : kv_len;
    std::vector<KvSequence> seqs;
    for (const BatchSlot& slot : b.layout.slots) {
      seqs.push_back({slot_stream(slot), slot.probed ? kv_len : filler_len});
    }
    build_paged_kv(seqs, d.page_size, d.kv_heads, d.head_dim, s_.dtype, s_.seed, b.kv, kMaxKvBytes);
    const int64_t batch = static_cast<int64_t>(seqs.size());
    b.q = HostTensor(s_.dtype, {batch, d.heads, d.head_dim});
    for (int64_t i = 0; i < batch; ++i) {
      // The query of the token after the cache: its values depend on the sequence and position.
      fill_token_rows(b.q, i, seqs[i].kv_len, 1, s_.seed, seqs[i].stream);
    }
    b.args.q = &b.q;
    b.args.kv = b.kv.view;
    b.args.num_heads = d.heads;
    b.args.num_kv_heads = d.kv_heads;
    b.args.head_dim = d.head_dim;
    b.args.scale = d.scale;
    b.args.splits = d.splits;
    b.args.out_dtype = s_.out_dtype;
  }

  Scenario s_;
  // The last context's batch: every backend and repeat of a context reuses it (contexts run
  // one after another), so a large KV cache is generated once per context.
  std::unique_ptr<Batch> cached_;
  std::string cached_id_;
};

class AttentionPrefillWorkload final : public Workload {
 public:
  explicit AttentionPrefillWorkload(const Scenario& s) : s_(s) {}

  std::vector<std::string> coord_names() const override { return {"token", "head", "dim"}; }

  std::vector<RequestOutput> run(Backend& backend, const Context& c, RunNotes* notes) override {
    if (!cached_ || cached_id_ != c.id) {
      cached_.reset();
      cached_ = std::make_unique<Setup>();
      setup(c, *cached_);
      cached_id_ = c.id;
    }
    const Setup& st = *cached_;
    // The request's output is every prompt token's attention output. A cached prefix was
    // computed by an earlier pass over the prefix alone (one chunk); the rest of the prompt is
    // then processed in chunks on top of that cache, as a serving engine with a prefix cache
    // does. Neither the chunking nor the prefix may change a token's bits under an invariant
    // backend.
    std::vector<RequestOutput> outputs;
    for (int64_t r : s_.requests) {
      outputs.push_back({r,
                         HostTensor(s_.out_dtype, {st.prompt_len, st.d.heads, st.d.head_dim}),
                         {},
                         {},
                         {},
                         {},
                         {}});
    }
    std::vector<std::pair<int32_t, int32_t>> chunks;  // [start, length)
    if (st.prefix_len > 0) chunks.emplace_back(0, st.prefix_len);
    for (int32_t start = st.prefix_len; start < st.prompt_len; start += st.chunk) {
      chunks.emplace_back(start, std::min(st.chunk, st.prompt_len - start));
    }
    for (const auto& [start, len] : chunks) {
      HostTensor q;
      const int32_t cached_prefix = start >= st.prefix_len ? st.prefix_len : 0;
      AttentionPrefillArgs args = step_args(st, start, len, cached_prefix, q);
      RunNotes step_notes;
      const HostTensor out = backend.run(args, notes ? &step_notes : nullptr);
      if (notes && start == st.prefix_len) *notes = step_notes;  // the first chunk after the prefix
      for (size_t p = 0; p < st.layout.probe_slot.size(); ++p) {
        copy_rows(out.slice_rows(st.layout.probe_slot[p] * len, len), outputs[p].output, start);
      }
    }
    if (notes) (*notes)["chunks"] = std::to_string(chunks.size());
    return outputs;
  }

  std::unique_ptr<BenchCase> bench_case(const Context& c) override {
    auto bc = std::make_unique<PrefillBench>();
    setup(c, bc->setup);
    const Setup& st = bc->setup;
    // The last chunk: the longest KV, the most work per call.
    const int32_t computed = st.prompt_len - st.prefix_len;
    const int32_t start = st.prefix_len + ((computed - 1) / st.chunk) * st.chunk;
    const int32_t len = st.prompt_len - start;
    bc->args = step_args(st, start, len, st.prefix_len, bc->q);
    const double seqs = static_cast<double>(st.layout.slots.size());
    const double pairs = seqs * (static_cast<double>(len) * start + 0.5 * len * (len + 1.0));
    bc->flops = 4.0 * pairs * st.d.heads * st.d.head_dim;
    bc->bytes = 2.0 * seqs * st.prompt_len * st.d.kv_heads * st.d.head_dim * dtype_size(s_.dtype) +
                2.0 * seqs * len * st.d.heads * st.d.head_dim * dtype_size(s_.dtype);
    return bc;
  }

 private:
  struct Setup {
    BatchLayout layout;
    AttentionDims d;
    int32_t prompt_len = 0, prefix_len = 0, chunk = 0;
    std::vector<uint64_t> streams;
    PagedKvStorage kv;
  };
  struct PrefillBench : BenchCase {
    Setup setup;
    HostTensor q;
  };

  // Builds in place: the KV view points into the setup's own tensors.
  void setup(const Context& c, Setup& st) const {
    st.layout = make_batch_layout(s_, c);
    st.d = dims_for(s_, c);
    st.prompt_len = static_cast<int32_t>(c.integer(Axis::kPromptLen));
    st.prefix_len = static_cast<int32_t>(c.integer(Axis::kPrefixLen));
    const auto* chunk = std::get_if<int64_t>(&c.value(Axis::kPrefillChunk));  // null: "whole"
    if (st.prefix_len < 0 || st.prefix_len >= st.prompt_len) {
      throw_input_error("context " + c.id + ": prefix_len (" + std::to_string(st.prefix_len) +
                        ") must be below prompt_len (" + std::to_string(st.prompt_len) + ")");
    }
    st.chunk = chunk ? static_cast<int32_t>(*chunk) : st.prompt_len - st.prefix_len;
    std::vector<KvSequence> seqs;
    for (const BatchSlot& slot : st.layout.slots) {
      st.streams.push_back(slot_stream(slot));
      seqs.push_back({slot_stream(slot), st.prompt_len});
    }
    build_paged_kv(seqs, st.d.page_size, st.d.kv_heads, st.d.head_dim, s_.dtype, s_.seed, st.kv,
                   kMaxKvBytes);
  }

  // The call for the chunk [start, start + len) of every sequence in the batch, on top of a
  // cache whose first `cached_prefix` tokens came from the prefix cache.
  AttentionPrefillArgs step_args(const Setup& st, int32_t start, int32_t len, int32_t cached_prefix,
                                 HostTensor& q) const {
    const int64_t batch = static_cast<int64_t>(st.streams.size());
    q = HostTensor(s_.dtype, {batch * len, st.d.heads, st.d.head_dim});
    AttentionPrefillArgs a;
    a.q_start.push_back(0);
    for (int64_t i = 0; i < batch; ++i) {
      fill_token_rows(q, i * len, start, len, s_.seed, st.streams[i]);
      a.q_start.push_back(static_cast<int32_t>((i + 1) * len));
      a.prefix_len.push_back(cached_prefix);
    }
    a.q = &q;
    a.kv = st.kv.view;
    a.kv.kv_lens.assign(static_cast<size_t>(batch), start + len);
    a.num_heads = st.d.heads;
    a.num_kv_heads = st.d.kv_heads;
    a.head_dim = st.d.head_dim;
    a.scale = st.d.scale;
    a.splits = st.d.splits;
    a.out_dtype = s_.out_dtype;
    return a;
  }

  Scenario s_;
  std::unique_ptr<Setup> cached_;  // as in the decode workload
  std::string cached_id_;
};

}  // namespace

std::unique_ptr<Workload> make_attention_decode_workload(const Scenario& s) {
  return std::make_unique<AttentionDecodeWorkload>(s);
}
std::unique_ptr<Workload> make_attention_prefill_workload(const Scenario& s) {
  return std::make_unique<AttentionPrefillWorkload>(s);
}

Footprint attention_decode_footprint(const Scenario& s) {
  Footprint p;
  const AttentionShape& a = s.attention;
  const double batch = batch_max(s), in = dtype_bytes(s.dtype), out = dtype_bytes(s.out_dtype);
  const double q_row = static_cast<double>(a.num_heads) * a.head_dim;
  const double kv_row = 2.0 * a.num_kv_heads * a.head_dim;  // K and V
  const double kv_len = axis_max(s, Axis::kKvLen, a.kv_len);
  const double filler =
      axis_max(s, Axis::kFillerKvLen, a.filler_kv_len < 0 ? kv_len : a.filler_kv_len);
  const double tokens = std::max(kv_len, filler) * batch;
  p.kv = tokens * kv_row * in;
  p.inputs = batch * q_row * in;
  p.outputs = batch * q_row * out;
  const double splits = std::max(axis_max(s, Axis::kNumSplits, 0), 64.0);
  p.workspace = batch * splits * (q_row + a.num_heads) * 4;  // split partials and their maxima
  // fp32 queries, cpu-reference's double output, and one sequence's K and V gathered in fp32.
  p.cpu_copies = batch * q_row * (4 + 8) + std::max(kv_len, filler) * kv_row * 4;
  return p;
}

Footprint attention_prefill_footprint(const Scenario& s) {
  Footprint p;
  const AttentionShape& a = s.attention;
  const double batch = batch_max(s), in = dtype_bytes(s.dtype), out = dtype_bytes(s.out_dtype);
  const double q_row = static_cast<double>(a.num_heads) * a.head_dim;
  const double kv_row = 2.0 * a.num_kv_heads * a.head_dim;  // K and V
  const double prompt = axis_max(s, Axis::kPromptLen, s.prefill.prompt_len);
  p.kv = batch * prompt * kv_row * in;
  p.inputs = batch * prompt * q_row * in;
  p.outputs = batch * prompt * q_row * out;
  p.workspace = batch * prompt * a.num_heads * 4 * 2;                     // running maxima and sums
  p.cpu_copies = batch * prompt * q_row * (4 + 8) + prompt * kv_row * 4;  // as for decode
  return p;
}

}  // namespace nvdet
