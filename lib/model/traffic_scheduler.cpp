#include "lib/model/traffic_scheduler.h"

#include <algorithm>
#include <string>

#include "lib/core/error.h"

namespace nvdet {

int32_t StepPlan::decode_rows() const {
  int32_t n = 0;
  for (const ScheduledRows& r : rows) n += r.decode ? r.count : 0;
  return n;
}

int32_t StepPlan::prefill_rows() const {
  int32_t n = 0;
  for (const ScheduledRows& r : rows) n += r.decode ? 0 : r.count;
  return n;
}

TrafficScheduler::TrafficScheduler(const std::vector<TrafficRequest>& requests,
                                   const SchedulerSettings& settings,
                                   const std::vector<int32_t>& eos_tokens, TrafficPages& pages)
    : requests_(requests),
      settings_(settings),
      eos_(eos_tokens),
      pages_(pages),
      states_(requests.size()) {
  if (settings_.max_num_batched_tokens < settings_.max_num_seqs) {
    throw_input_error("max_num_batched_tokens " + std::to_string(settings_.max_num_batched_tokens) +
                      " is less than max_num_seqs " + std::to_string(settings_.max_num_seqs) +
                      ": every running request's decode token must fit one step");
  }
  for (size_t r = 0; r < requests_.size(); ++r) {
    const TrafficRequest& q = requests_[r];
    if (q.prompt.empty() || q.max_new_tokens < 1)
      throw_input_error("request " + q.label + " of the replay has no prompt or no token to make");
    if (r > 0 && q.arrival < requests_[r - 1].arrival)
      throw_runtime_error("the replay's requests are not in order of arrival");
    if (!settings_.chunked_prefill &&
        static_cast<int64_t>(q.prompt.size()) > settings_.max_num_batched_tokens) {
      throw_input_error("with chunked_prefill off, the prompt of " + q.label + " (" +
                        std::to_string(q.prompt.size()) +
                        " tokens) cannot fit a step of max_num_batched_tokens " +
                        std::to_string(settings_.max_num_batched_tokens) +
                        " when the prefix cache does not hold it");
    }
  }
}

void TrafficScheduler::arrive(int64_t step) {
  while (next_arrival_ < requests_.size() && requests_[next_arrival_].arrival <= step) {
    states_[next_arrival_].status = RequestStatus::kWaiting;
    waiting_.push_back(next_arrival_++);
  }
}

StepPlan TrafficScheduler::schedule() {
  StepPlan plan;
  if (finished_ == static_cast<int64_t>(requests_.size())) return plan;
  arrive(clock_);
  if (running_.empty() && waiting_.empty()) {  // idle until the next request arrives
    clock_ = requests_.at(next_arrival_).arrival;
    arrive(clock_);
  }
  plan.step = clock_++;
  int64_t budget = settings_.max_num_batched_tokens;
  // 1. Decode tokens of the running requests whose prompt is in the cache.
  for (const size_t r : running_) {
    RequestState& st = states_[r];
    if (st.computed < static_cast<int32_t>(requests_[r].prompt.size())) continue;
    pages_.reserve(r, st.computed + 1);
    plan.rows.push_back({r, st.computed, 1, true, true});
    ++st.computed;
    --budget;
  }
  // 2. The next chunks of prompts already being prefilled.
  for (const size_t r : running_) {
    RequestState& st = states_[r];
    const int32_t len = static_cast<int32_t>(requests_[r].prompt.size());
    if (st.computed >= len || budget <= 0) continue;
    const int32_t n = static_cast<int32_t>(std::min<int64_t>(len - st.computed, budget));
    pages_.reserve(r, st.computed + n);
    plan.rows.push_back({r, st.computed, n, false, st.computed + n == len});
    st.computed += n;
    budget -= n;
    if (settings_.prefix_caching) pages_.cache_prompt_pages(r, requests_[r].prompt, st.computed);
  }
  // 3. Waiting requests start, oldest first.
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < settings_.max_num_seqs) {
    if (!start(waiting_.front(), budget, plan)) break;
    waiting_.erase(waiting_.begin());
  }
  if (plan.rows.empty()) throw_runtime_error("the traffic scheduler made a step with no rows");
  return plan;
}

bool TrafficScheduler::start(size_t r, int64_t& budget, StepPlan& plan) {
  const TrafficRequest& q = requests_[r];
  RequestState& st = states_[r];
  const int32_t len = static_cast<int32_t>(q.prompt.size());
  // The last prompt token is always computed: its row gives the first token's logits.
  const int32_t cached =
      settings_.prefix_caching
          ? pages_.cached_prefix(q.prompt, std::min(len - 1, q.max_cached_tokens))
          : 0;
  const int32_t rest = len - cached;
  const int32_t n = settings_.chunked_prefill
                        ? static_cast<int32_t>(std::min<int64_t>(rest, budget))
                    : rest <= budget ? rest
                                     : 0;
  if (n == 0) return false;
  if (cached > 0) pages_.take_cached(r, q.prompt, cached);
  pages_.reserve(r, cached + n);
  plan.rows.push_back({r, cached, n, false, cached + n == len});
  st.cached = cached;
  st.computed = cached + n;
  st.status = RequestStatus::kRunning;
  budget -= n;
  if (settings_.prefix_caching) pages_.cache_prompt_pages(r, q.prompt, st.computed);
  running_.push_back(r);
  return true;
}

void TrafficScheduler::commit(const StepPlan& plan, const std::vector<int32_t>& tokens) {
  size_t next = 0;
  for (const ScheduledRows& rows : plan.rows) {
    if (!rows.produces_token) continue;
    RequestState& st = states_[rows.request];
    const int32_t token = tokens.at(next++);
    st.output.push_back(token);
    st.ended_at_eos = std::find(eos_.begin(), eos_.end(), token) != eos_.end();
    if (!st.ended_at_eos &&
        static_cast<int32_t>(st.output.size()) < requests_[rows.request].max_new_tokens)
      continue;
    st.status = RequestStatus::kFinished;
    pages_.release(rows.request);
    running_.erase(std::find(running_.begin(), running_.end(), rows.request));
    ++finished_;
  }
}

}  // namespace nvdet
