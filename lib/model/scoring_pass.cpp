#include "lib/model/scoring_pass.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "lib/core/error.h"
#include "lib/model/decode_pass.h"
#include "lib/model/prompts.h"
#include "lib/model/tp_engine.h"

namespace nvdet {
namespace {

// The fillers' token streams, apart from the prompts' and the decode fillers' streams.
constexpr uint64_t kScoreFillerStream = uint64_t{3} << 48;

// Passes the scored sequence's rows (sequence 0 of every pass) to the observer, each under the
// decode step whose row it is.
class ScoreTrace final : public PassTrace {
 public:
  ScoreTrace(TensorObserver* observer, size_t watched, int32_t prompt_len)
      : observer_(observer), watched_(watched), prompt_len_(prompt_len) {}

  bool tracing() const override { return observer_ != nullptr; }
  bool watched(size_t seq) const override { return seq == 0; }

  void emit(const Pass& p, int32_t layer, std::string_view op, const RowFetch& rows) override {
    if (!observer_) return;
    const int32_t first = p.row_start[0], count = p.row_start[1] - p.row_start[0];
    const HostTensor mine = rows(first, count);
    int32_t r = 0;
    if (p.positions[first] == 0) {  // the prompt: step 0, all its rows at once
      observer_->observe(watched_, 0, layer, op, mine.slice_rows(0, prompt_len_));
      r = prompt_len_;
    }
    for (; r < count; ++r) {
      observer_->observe(watched_, p.positions[first + r] - prompt_len_ + 1, layer, op,
                         mine.slice_rows(r, 1));
    }
  }

  void emit_head(const Pass& p, std::string_view op, const RowFetch& rows) override {
    if (!observer_) return;
    for (size_t i = 0; i < p.head_rows.size(); ++i) {
      const int32_t step = p.positions[static_cast<size_t>(p.head_rows[i])] - prompt_len_ + 1;
      observer_->observe(watched_, step, -1, op, rows(static_cast<int64_t>(i), 1));
    }
  }

 private:
  TensorObserver* observer_;
  size_t watched_;
  int32_t prompt_len_;
};

}  // namespace

HostTensor score_sequence(Backend& backend, const ModelWeights& weights,
                          const std::vector<int32_t>& prompt,
                          const std::vector<int32_t>& completion, const ScoreOptions& options,
                          TensorObserver* observer, size_t watched, RunNotes* notes) {
  const ModelConfig& c = weights.config;
  if (prompt.empty() || completion.empty())
    throw_input_error("the scoring pass needs a prompt and a completion");
  if (options.batch < 1) throw_input_error("score_batch must be at least 1");
  if (options.chunk < 0) throw_input_error("score_chunk must be at least 1");
  const int32_t len = static_cast<int32_t>(prompt.size());
  const int32_t steps = static_cast<int32_t>(completion.size());
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(options.batch));
  seqs[0] = prompt;
  seqs[0].insert(seqs[0].end(), completion.begin(), completion.end() - 1);
  const int32_t total = static_cast<int32_t>(seqs[0].size());
  for (int32_t f = 1; f < options.batch; ++f) {
    seqs[static_cast<size_t>(f)] = synthetic_prompt(
        options.seed, kScoreFillerStream + options.filler_key * 4096 + static_cast<uint64_t>(f),
        total, c.vocab);
  }
  const std::vector<int32_t> capacity(seqs.size(), total);
  ScoreTrace trace(observer, watched, len);
  std::unique_ptr<PassEngine> engine;
  if (options.tp.tp > 1) {
    DecodeOptions sharded;
    sharded.page_size = options.page_size;
    sharded.tp = options.tp;
    engine = make_tp_engine(backend, weights, capacity, sharded, trace, notes);
  } else {
    engine =
        make_host_engine(backend, weights, capacity, options.page_size, options.fp8, trace, notes);
  }

  HostTensor logits(DType::kFP32, {steps, c.vocab});
  const size_t row_bytes = static_cast<size_t>(c.vocab) * sizeof(float);
  int32_t done = 0;  // positions of every sequence already in the cache
  for (int pass = 0; done < total; ++pass) {
    const int32_t end = options.chunk == 0 ? total
                        : done == 0        ? len
                                           : std::min(total, done + options.chunk);
    Pass p;
    p.prefill = end - done > 1;
    p.step = pass;
    p.row_start.push_back(0);
    for (size_t s = 0; s < seqs.size(); ++s) {
      p.seqs.push_back(s);
      for (int32_t pos = done; pos < end; ++pos) {
        p.tokens.push_back(seqs[s][static_cast<size_t>(pos)]);
        p.positions.push_back(pos);
      }
      p.row_start.push_back(static_cast<int32_t>(p.tokens.size()));
      p.kv_lens.push_back(end);
    }
    for (int32_t pos = std::max(done, len - 1); pos < end; ++pos) {
      p.head_seqs.push_back(0);
      p.head_rows.push_back(pos - done);
    }
    const std::vector<bool> want(p.head_seqs.size(), true);
    const PassOutput out = engine->forward(p, want, pass == 0 ? "score" : nullptr);
    for (size_t i = 0; i < p.head_rows.size(); ++i) {
      const int64_t t = done + p.head_rows[i] - (len - 1);
      std::memcpy(logits.mutable_data() + t * row_bytes, out.logits.at(i).data(), row_bytes);
    }
    done = end;
  }
  return logits;
}

}  // namespace nvdet
