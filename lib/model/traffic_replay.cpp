#include "lib/model/traffic_replay.h"

#include <algorithm>
#include <cstring>

#include "lib/core/error.h"

namespace nvdet {
namespace {

// The pages one request can hold: its prompt and generated tokens but the last (whose K and V
// are never needed).
int32_t pages_for(const TrafficRequest& q, int32_t page_size) {
  const int64_t tokens = static_cast<int64_t>(q.prompt.size()) + q.max_new_tokens - 1;
  return static_cast<int32_t>(std::max<int64_t>(1, (tokens + page_size - 1) / page_size));
}

// A step's notes under the names a serving step gives them: a pass of one kind calls its
// attention "attention"; here it is named by the op, as in a step that holds both.
RunNotes serving_note_names(const RunNotes& notes, const Pass& p) {
  RunNotes out;
  const std::string prefix = "step.";
  for (const auto& [key, value] : notes) {
    std::string k = key.rfind(prefix, 0) == 0 ? key.substr(prefix.size()) : key;
    if (k.rfind("attention.", 0) == 0) {
      k = (p.prefill ? "attention_prefill" : "attention_decode") + k.substr(9);
    }
    out[k] = value;
  }
  return out;
}

}  // namespace

TrafficReplay::TrafficReplay(Backend& backend, const ModelWeights& weights,
                             std::vector<TrafficRequest> requests, const TrafficRunOptions& options,
                             const std::vector<size_t>& watched, TensorObserver* observer,
                             RunNotes* notes)
    : backend_(backend),
      w_(weights),
      requests_(std::move(requests)),
      options_(options),
      observer_(observer),
      notes_(notes),
      watch_(requests_.size(), -1) {
  if (requests_.empty()) throw_input_error("the replay holds no request");
  const int32_t vocab = w_.config.vocab;
  for (const TrafficRequest& q : requests_) {
    for (const int32_t id : q.prompt) {
      if (id < 0 || id >= vocab)
        throw_input_error("token id " + std::to_string(id) + " of " + q.label +
                          " is outside the model's vocabulary (0.." + std::to_string(vocab - 1) +
                          ")");
    }
    const int64_t length = static_cast<int64_t>(q.prompt.size()) + q.max_new_tokens - 1;
    if (w_.config.sliding_window > 0 && length > w_.config.sliding_window)
      throw_input_error("the model's 'sliding_window' is " +
                        std::to_string(w_.config.sliding_window) + " tokens but " + q.label +
                        " reaches " + std::to_string(length) +
                        "; only full attention is implemented");
  }
  for (size_t i = 0; i < watched.size(); ++i) {
    bool found = false;
    for (size_t r = 0; r < requests_.size(); ++r) {
      if (requests_[r].probe == static_cast<int64_t>(watched[i])) {
        watch_[r] = static_cast<int>(i);
        found = true;
      }
    }
    if (!found) throw_input_error("the replay has no probe " + std::to_string(watched[i]));
  }
  const int32_t page = options_.page_size;
  int32_t max_pages = 1;
  for (const TrafficRequest& q : requests_) max_pages = std::max(max_pages, pages_for(q, page));
  // Enough pages for the most requests that can run at once, each at its longest: the running
  // requests never run out, so the scheduler never preempts.
  const int64_t concurrent =
      std::min<int64_t>(options_.scheduler.max_num_seqs, static_cast<int64_t>(requests_.size()));
  const int64_t total = concurrent * max_pages;
  if (total > (int64_t{1} << 30)) throw_input_error("the replay's KV pool is too large");
  pages_ = std::make_shared<TrafficPages>(static_cast<int32_t>(total), page, max_pages,
                                          requests_.size());
  scheduler_ = std::make_unique<TrafficScheduler>(requests_, options_.scheduler,
                                                  options_.eos_tokens, *pages_);
  // A step holds at most the budget's rows, and never more than the whole replay's tokens.
  int64_t tokens = 0;
  for (const TrafficRequest& q : requests_)
    tokens += static_cast<int64_t>(q.prompt.size()) + q.max_new_tokens;
  const int64_t max_rows = std::min(options_.scheduler.max_num_batched_tokens, tokens);
  engine_ = make_serving_engine(backend_, w_, pages_, max_rows, concurrent, options_.path, *this,
                                &step_notes_, decoder_);
  pending_.resize(watched.size());
  logits_.resize(watched.size());
  steps_.assign(watched.size(), std::vector<ProbeStep>(1));
}

TrafficReplay::~TrafficReplay() = default;

std::vector<SequenceResult> TrafficReplay::run() {
  int64_t steps = 0, cached = 0;
  while (!all_watched_finished()) {
    const StepPlan plan = scheduler_->schedule();
    if (plan.rows.empty()) break;
    const Pass p = pass_of(plan);
    bool probed = false;
    std::vector<bool> want(p.head_seqs.size());
    for (size_t i = 0; i < p.head_seqs.size(); ++i) want[i] = watch_[p.head_seqs[i]] >= 0;
    for (const size_t r : p.seqs) probed = probed || watch_[r] >= 0;
    step_notes_.clear();
    const PassOutput out = engine_->forward(p, want, probed ? "step" : nullptr);
    const EngineStep step = engine_step(plan, p);
    for (const ScheduledRows& rows : plan.rows) {
      const int w = watch_[rows.request];
      if (w < 0) continue;
      if (rows.decode) {
        steps_[w].push_back(
            {static_cast<int32_t>(scheduler_->state(rows.request).output.size()), 0, {step}});
      } else {
        steps_[w][0].engine_steps.push_back(step);
        steps_[w][0].cached_tokens = scheduler_->state(rows.request).cached;
      }
    }
    for (size_t i = 0; i < p.head_seqs.size(); ++i) {
      const int w = watch_[p.head_seqs[i]];
      if (w >= 0) logits_[w].push_back(out.logits.at(i));
    }
    // A probe whose prompt this step completed: its step 0 goes to the observer, whole.
    for (const ScheduledRows& rows : plan.rows) {
      const int w = watch_[rows.request];
      if (w < 0 || rows.decode || !rows.produces_token || !observer_) continue;
      for (Pending& e : pending_[w]) observer_->observe(w, 0, e.layer, e.op, concat_rows(e.pieces));
      pending_[w].clear();
    }
    for (const ScheduledRows& rows : plan.rows) {
      if (!rows.decode && rows.first == scheduler_->state(rows.request).cached)
        cached += scheduler_->state(rows.request).cached;  // counted once, at its first chunk
    }
    scheduler_->commit(plan, out.tokens);
    generated_ += static_cast<int64_t>(out.tokens.size());
    ++steps;
    if (after_step) after_step(plan);
    if (options_.on_step) {
      options_.on_step(
          {steps, scheduler_->finished(), static_cast<int64_t>(requests_.size()), generated_});
    }
  }
  if (notes_) {
    (*notes_)["decoder"] = decoder_;
    (*notes_)["traffic.steps"] = std::to_string(steps);
    (*notes_)["traffic.cached_prompt_tokens"] = std::to_string(cached);
    if (!options_.eos_tokens.empty()) {
      int64_t at_eos = 0;
      for (size_t r = 0; r < requests_.size(); ++r) at_eos += scheduler_->state(r).ended_at_eos;
      (*notes_)["traffic.ended_at_eos"] = std::to_string(at_eos);
    }
  }
  std::vector<SequenceResult> results(logits_.size());
  for (size_t r = 0; r < requests_.size(); ++r) {
    const int w = watch_[r];
    if (w < 0) continue;
    SequenceResult& out = results[static_cast<size_t>(w)];
    out.completion = scheduler_->state(r).output;
    // [max_new_tokens, vocab] whatever EOS did, so that every replay's output has one shape:
    // the rows past an EOS are zeros (the completions already differ before them).
    out.logits = HostTensor(DType::kFP32, {requests_[r].max_new_tokens, w_.config.vocab});
    copy_rows(concat_rows(logits_[w]), out.logits, 0);
    out.steps = std::move(steps_[w]);
  }
  return results;
}

bool TrafficReplay::all_watched_finished() const {
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (watch_[r] >= 0 && scheduler_->state(r).status != RequestStatus::kFinished) return false;
  }
  return true;
}

Pass TrafficReplay::pass_of(const StepPlan& plan) const {
  Pass p;
  p.step = static_cast<int32_t>(plan.step);
  p.row_start.push_back(0);
  for (const ScheduledRows& rows : plan.rows) {
    const TrafficRequest& q = requests_[rows.request];
    const RequestState& st = scheduler_->state(rows.request);
    p.seqs.push_back(rows.request);
    for (int32_t k = 0; k < rows.count; ++k) {
      p.tokens.push_back(rows.decode ? st.output.back() : q.prompt[rows.first + k]);
      p.positions.push_back(rows.first + k);
    }
    p.row_start.push_back(static_cast<int32_t>(p.tokens.size()));
    p.kv_lens.push_back(rows.first + rows.count);
    p.prefix_lens.push_back(rows.decode ? 0 : st.cached);
    if (rows.decode) {
      ++p.decode_seqs;
    } else {
      p.prefill = true;
    }
    if (rows.produces_token) {
      p.head_seqs.push_back(rows.request);
      p.head_rows.push_back(p.row_start.back() - 1);
    }
  }
  if (!p.prefill) p.decode_seqs = 0;  // all decode rows: a decode pass
  return p;
}

EngineStep TrafficReplay::engine_step(const StepPlan& plan, const Pass& p) {
  EngineStep e;
  e.step = plan.step;
  e.decode_rows = plan.decode_rows();
  e.prefill_rows = plan.prefill_rows();
  for (const ScheduledRows& rows : plan.rows)
    e.requests.push_back({requests_[rows.request].label, rows.count, rows.decode});
  e.notes = serving_note_names(step_notes_, p);
  return e;
}

void TrafficReplay::keep(size_t w, int32_t layer, std::string_view op, HostTensor rows) {
  for (Pending& e : pending_[w]) {
    if (e.layer == layer && e.op == op) {
      e.pieces.push_back(std::move(rows));
      return;
    }
  }
  pending_[w].push_back({layer, std::string(op), {std::move(rows)}});
}

void TrafficReplay::emit(const Pass& p, int32_t layer, std::string_view op, const RowFetch& rows) {
  if (!observer_) return;
  for (size_t i = 0; i < p.seqs.size(); ++i) {
    const int w = watch_[p.seqs[i]];
    if (w < 0) continue;
    const int32_t begin = p.row_start[i], end = p.row_start[i + 1];
    if (!p.prefill || i < p.decode_seqs) {  // a decode row: its step is the token it makes
      const auto step = static_cast<int32_t>(scheduler_->state(p.seqs[i]).output.size());
      observer_->observe(static_cast<size_t>(w), step, layer, op, rows(begin, end - begin));
      continue;
    }
    // A prompt chunk: its rows from the probe's trace_from position on.
    const int32_t skip =
        std::max(0, requests_[p.seqs[i]].trace_from - p.positions[static_cast<size_t>(begin)]);
    if (begin + skip < end)
      keep(static_cast<size_t>(w), layer, op, rows(begin + skip, end - begin - skip));
  }
}

void TrafficReplay::emit_head(const Pass& p, std::string_view op, const RowFetch& rows) {
  if (!observer_) return;
  for (size_t i = 0; i < p.head_seqs.size(); ++i) {
    const size_t r = p.head_seqs[i];
    const int w = watch_[r];
    if (w < 0) continue;
    const RequestState& st = scheduler_->state(r);
    HostTensor row = rows(static_cast<int64_t>(i), 1);
    if (st.output.empty()) {  // the prompt's last row: part of step 0
      keep(static_cast<size_t>(w), -1, op, std::move(row));
    } else {
      observer_->observe(static_cast<size_t>(w), static_cast<int32_t>(st.output.size()), -1, op,
                         row);
    }
  }
}

}  // namespace nvdet
