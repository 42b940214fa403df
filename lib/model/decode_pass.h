#pragma once
// The pieces the decoder's scheduler (decoder.cpp) shares with the engines that compute its
// passes: on the host through Backend::run (decoder.cpp) or resident on the device
// (device_decoder.cpp). The scheduler decides what each pass holds; an engine computes it and
// hands back only the greedy tokens, the logits rows asked for and, when tracing, the watched
// rows of every op.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/model/decoder.h"
#include "lib/model/kv_cache.h"
#include "lib/model/model_config.h"
#include "lib/model/model_weights.h"
#include "lib/ops/moe_routing.h"

namespace nvdet {

// One forward pass over some rows of some sequences: a prefill chunk or a decode step, or, in a
// serving replay (traffic_replay.h), both in one step.
struct Pass {
  bool prefill = false;  // the pass holds prompt chunks (attention_prefill)
  // A serving step's decode rows go before its prompt chunks: with prefill set, its first
  // `decode_seqs` sequences are decode rows, one row each (attention_decode), and every GEMM and
  // RMSNorm runs over all the pass's rows at once. 0 in a pass that is all one kind.
  size_t decode_seqs = 0;
  int32_t step = 0;
  std::vector<size_t> seqs;        // the sequences in this pass, in batch order
  std::vector<int32_t> row_start;  // [seqs + 1]: each sequence's rows in the pass
  std::vector<int32_t> tokens;     // per row
  std::vector<int32_t> positions;  // per row: absolute position in its sequence
  std::vector<int32_t> kv_lens;    // per sequence: cached tokens once this pass has written
  // Per sequence: its prompt tokens served from the prefix cache (attention_prefill's
  // prefix_len); empty: none.
  std::vector<int32_t> prefix_lens;
  std::vector<size_t> head_seqs;   // sequences whose next-token logits this pass produces
  std::vector<int64_t> head_rows;  // their rows (each one's last row in the pass)
};

// Rows [first, first + count) of one of a pass's tensors, fetched only when asked for.
using RowFetch = std::function<HostTensor(int64_t first, int64_t count)>;

// Where an engine reports the tensors of a pass (the scheduler passes the watched sequences'
// rows on to the TensorObserver). emit: a tensor with one row per pass row; emit_head: one row
// per head sequence.
class PassTrace {
 public:
  virtual ~PassTrace() = default;
  virtual bool tracing() const = 0;
  // Whether sequence `seq`'s rows are traced (the rows emit() will ask for).
  virtual bool watched(size_t seq) const = 0;
  virtual void emit(const Pass& p, int32_t layer, std::string_view op, const RowFetch& rows) = 0;
  virtual void emit_head(const Pass& p, std::string_view op, const RowFetch& rows) = 0;
};

struct PassOutput {
  std::vector<int32_t> tokens;     // per head sequence: its greedy next token
  std::vector<HostTensor> logits;  // per head sequence: fp32 [1, vocab] when asked for, else empty
};

class PassEngine {
 public:
  virtual ~PassEngine() = default;
  // Computes pass p. want_logits[i]: head sequence i's logits row must come back. With a
  // notes tag, layer 0's and the head's backend notes are kept as "<tag>.<op>.<key>".
  virtual PassOutput forward(const Pass& p, const std::vector<bool>& want_logits,
                             const char* notes_tag) = 0;
  // The cached K and V of tokens [0, count) of sequence `seq` in layer `layer`, [count, 2 *
  // kv_dim] (each row K then V): what a test compares bit for bit between a prefix-cache hit and
  // a cold prefill.
  virtual HostTensor cached_kv(int32_t layer, size_t seq, int32_t count) = 0;
};

// A serving step's two parts for the attention ops: its decode rows (the first decode_seqs
// sequences) and its prompt chunks, each a pass of its own kind with rows counted from 0. Only
// what the attention ops read is kept (seqs, row_start, kv_lens, prefix_lens).
struct ServingParts {
  Pass decode, prefill;
};
ServingParts split_serving_pass(const Pass& p);

// The attention ops' arguments for a decode step / a prefill pass of the model (everything but
// q; the KV view's tensors are the caller's).
AttentionDecodeArgs decode_attention_args(const ModelConfig& c, DType dtype, PagedKv kv);
AttentionPrefillArgs prefill_attention_args(const Pass& p, const ModelConfig& c, DType dtype,
                                            PagedKv kv);
// The attention call of pass p over host-resident queries q (the host engines, TP ranks included):
// prefill or decode arguments as the pass asks.
OpArgs attention_op_args(const Pass& p, const ModelConfig& c, DType dtype, PagedKv kv,
                         const HostTensor& q);

// The host engine (one Backend::run call per op, KV cache on the host) over a fresh cache of
// `capacity` tokens per sequence: what the scoring pass (scoring_pass.h) computes with, on every
// backend, so that it never shares a cache with the decode it checks.
// `fp8`: an FP8 checkpoint's activation scheme (DecodeOptions::fp8).
std::unique_ptr<PassEngine> make_host_engine(Backend& backend, const ModelWeights& weights,
                                             const std::vector<int32_t>& capacity,
                                             int32_t page_size, const Fp8Scheme& fp8,
                                             PassTrace& trace, RunNotes* notes);

// The engine a serving replay computes its steps with (traffic_replay.h), over the pages it hands
// out: the device-resident one where the backend offers it and `path` allows (as greedy_decode
// chooses), else the host engine. A pass holds at most max_rows rows and max_heads head rows.
// `decoder` receives the words the case's "decoder" note gives.
std::unique_ptr<PassEngine> make_serving_engine(Backend& backend, const ModelWeights& weights,
                                                std::shared_ptr<const KvPageMap> pages,
                                                int64_t max_rows, int64_t max_heads,
                                                DecodePath path, PassTrace& trace, RunNotes* notes,
                                                std::string& decoder);

// Rows of `t` as a RowFetch (by reference: `t` must outlive the fetch).
RowFetch rows_of(const HostTensor& t);

// The pieces' rows one after another (pieces of one dtype and row shape, at least one).
HostTensor concat_rows(const std::vector<HostTensor>& pieces);

// The end of every host engine's pass: traces the head's fp32 logits [head_seqs, vocab] as
// "logits" and returns each head sequence's greedy token and, where want_logits asks, its row.
PassOutput head_output(const Pass& p, PassTrace& trace, const HostTensor& logits,
                       const std::vector<bool>& want_logits);

// The model's RMSNorm of x by `weight` (the config's epsilon), out in `dtype`.
RmsNormArgs rmsnorm_args(const HostTensor& x, const HostTensor& weight, const ModelConfig& c,
                         DType dtype);

// Runs one backend call of a host engine; with a tag (and `notes`), its notes are kept as
// "<tag>.<name>.<key>".
HostTensor run_noted(Backend& backend, const OpArgs& args, RunNotes* notes, const char* tag,
                     const char* name);

// Runs one backend call's notes into `notes` as "<tag>.<name>.<key>" (nothing without a tag).
void keep_notes(RunNotes* notes, const char* tag, const char* name, const RunNotes& call_notes);

// An MoE layer's experts that a watched sequence's rows of pass p are routed to: the experts whose
// calls' notes are kept, by every engine alike.
std::vector<bool> watched_experts(const Pass& p, const MoeRoute& route, int32_t num_experts,
                                  const PassTrace& trace);

}  // namespace nvdet
