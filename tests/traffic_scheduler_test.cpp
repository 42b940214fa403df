// The serving scheduler (lib/model/traffic_scheduler.h) and its KV pages (traffic_pages.h)
// against schedules worked out by hand: decode tokens first, then the chunks of prompts being
// prefilled, then waiting prompts within the token budget and max_num_seqs; prefix-cache hits
// that share another request's pages; chunked prefill off holding the queue back; EOS; the
// clock moving on to the next arrival; pages returned and evicted in the documented order.
#include "lib/model/traffic_scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/core/error.h"

namespace nvdet {
namespace {

TrafficRequest request(const std::string& label, int64_t arrival, std::vector<int32_t> prompt,
                       int32_t max_new) {
  TrafficRequest q;
  q.label = label;
  q.arrival = arrival;
  q.prompt = std::move(prompt);
  q.max_new_tokens = max_new;
  return q;
}

// A (5 tokens) and B (8 tokens, its first 4 A's) arrive at step 0, C (2) at step 1, D (3) at 5.
std::vector<TrafficRequest> hand_worked_requests() {
  return {request("A", 0, {1, 2, 3, 4, 5}, 3), request("B", 0, {1, 2, 3, 4, 9, 9, 9, 9}, 2),
          request("C", 1, {7, 7}, 2), request("D", 5, {6, 6, 6}, 1)};
}

constexpr int32_t kEos = 99;

// "A p0+5*": request A, prompt rows [0, 5), producing a token; "A d5": A's decode row at 5.
std::string plan_text(const StepPlan& plan, const std::vector<TrafficRequest>& requests) {
  std::string out = "step " + std::to_string(plan.step) + ":";
  for (const ScheduledRows& r : plan.rows) {
    out += " " + requests[r.request].label + (r.decode ? " d" : " p") + std::to_string(r.first);
    if (!r.decode) out += "+" + std::to_string(r.count);
    if (r.produces_token && !r.decode) out += "*";
  }
  return out;
}

// Runs every step, answering each token-producing row with 10 * (request + 1) + its output
// count, except C's first token, which is EOS.
std::vector<std::string> run_all(const std::vector<TrafficRequest>& requests,
                                 const SchedulerSettings& settings, TrafficPages& pages,
                                 TrafficScheduler& scheduler) {
  std::vector<std::string> steps;
  for (int guard = 0; guard < 100; ++guard) {
    const StepPlan plan = scheduler.schedule();
    if (plan.rows.empty()) break;
    EXPECT_LE(plan.decode_rows() + plan.prefill_rows(), settings.max_num_batched_tokens);
    steps.push_back(plan_text(plan, requests));
    std::vector<int32_t> tokens;
    for (const ScheduledRows& r : plan.rows) {
      if (!r.produces_token) continue;
      const RequestState& st = scheduler.state(r.request);
      tokens.push_back(requests[r.request].label == "C"
                           ? kEos
                           : static_cast<int32_t>(10 * (r.request + 1) + st.output.size()));
    }
    scheduler.commit(plan, tokens);
    if (plan.step == 0) {
      // B took A's two cached pages and holds one page of its own for its first chunk.
      EXPECT_EQ(pages.pages_of(1), (std::vector<int32_t>{0, 1, 3}));
      EXPECT_EQ(pages.pages_of(0), (std::vector<int32_t>{0, 1, 2}));
    }
  }
  return steps;
}

TEST(TrafficScheduler, FollowsTheHandWorkedScheduleWithChunkedPrefill) {
  const std::vector<TrafficRequest> requests = hand_worked_requests();
  const SchedulerSettings settings{6, 3, true, true};
  TrafficPages pages(12, 2, 6, requests.size());
  TrafficScheduler scheduler(requests, settings, {kEos}, pages);
  const std::vector<std::string> steps = run_all(requests, settings, pages, scheduler);
  // Step 0: A's whole prompt, then B from its 4 cached tokens for the 1 token of budget left.
  // Step 1: A's decode token first, then the rest of B's prompt, then C (arrived at 1).
  // Step 2: decode tokens only (C ended at EOS). Nothing runs until D arrives at 5.
  const std::vector<std::string> expected = {"step 0: A p0+5* B p4+1",
                                             "step 1: A d5 B p5+3* C p0+2*", "step 2: A d6 B d8",
                                             "step 5: D p0+3*"};
  EXPECT_EQ(steps, expected);
  EXPECT_EQ(scheduler.state(1).cached, 4);
  EXPECT_EQ(scheduler.state(0).cached, 0);
  EXPECT_EQ(scheduler.state(0).output, (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(scheduler.state(1).output, (std::vector<int32_t>{20, 21}));
  EXPECT_EQ(scheduler.state(2).output, (std::vector<int32_t>{kEos}));
  EXPECT_TRUE(scheduler.state(2).ended_at_eos);
  EXPECT_FALSE(scheduler.state(0).ended_at_eos);
  EXPECT_EQ(scheduler.finished(), 4);
  for (size_t r = 0; r < requests.size(); ++r) {
    EXPECT_EQ(scheduler.state(r).status, RequestStatus::kFinished);
    EXPECT_TRUE(pages.pages_of(r).empty());
  }
  EXPECT_EQ(pages.free_pages(), 12);
  // Whole prompt pages stay cached after their requests finished: A's 2, B's other 2, C's and
  // D's first.
  EXPECT_EQ(pages.cached_pages(), 6u);
  EXPECT_EQ(scheduler.state(3).computed, 3);
}

// Runs every step, answering every token-producing row with token 5.
std::vector<std::string> run_with_token(const std::vector<TrafficRequest>& requests,
                                        const SchedulerSettings& settings) {
  TrafficPages pages(16, 2, 8, requests.size());
  TrafficScheduler scheduler(requests, settings, {}, pages);
  std::vector<std::string> steps;
  for (int guard = 0; guard < 100; ++guard) {
    const StepPlan plan = scheduler.schedule();
    if (plan.rows.empty()) break;
    steps.push_back(plan_text(plan, requests));
    std::vector<int32_t> tokens;
    for (const ScheduledRows& r : plan.rows)
      if (r.produces_token) tokens.push_back(5);
    scheduler.commit(plan, tokens);
  }
  return steps;
}

TEST(TrafficScheduler, WithoutChunkedPrefillAPromptWaitsUntilItFitsWhole) {
  // A (6 tokens, 2 new), B (6 tokens), C (2 tokens) arrive together; 8 tokens a step.
  const std::vector<TrafficRequest> requests = {request("A", 0, {1, 2, 3, 4, 5, 6}, 2),
                                                request("B", 0, {7, 8, 9, 10, 11, 12}, 1),
                                                request("C", 0, {13, 14}, 1)};
  // Whole prompts only: B does not fit the 2 tokens A leaves, and C, which would, waits behind it.
  EXPECT_EQ(
      run_with_token(requests, {8, 3, false, false}),
      (std::vector<std::string>{"step 0: A p0+6*", "step 1: A d6 B p0+6*", "step 2: C p0+2*"}));
  // Chunked: B takes those 2 tokens, and its rest goes beside A's decode token and C's prompt.
  EXPECT_EQ(run_with_token(requests, {8, 3, false, true}),
            (std::vector<std::string>{"step 0: A p0+6* B p0+2", "step 1: A d6 B p2+4* C p0+2*"}));
}

TEST(TrafficScheduler, MaxNumSeqsBoundsTheRunningRequests) {
  std::vector<TrafficRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(request("R" + std::to_string(i), 0, {i + 1}, 2));
  // Two run at once: R2 and R3 start when R0 and R1 have made their 2 tokens.
  EXPECT_EQ(run_with_token(requests, {8, 2, false, true}),
            (std::vector<std::string>{"step 0: R0 p0+1* R1 p0+1*", "step 1: R0 d1 R1 d1",
                                      "step 2: R2 p0+1* R3 p0+1*", "step 3: R2 d1 R3 d1"}));
}

TEST(TrafficScheduler, ALastPromptTokenIsAlwaysComputed) {
  // B's prompt is A's exactly: every whole page of it is cached, but its last token is computed
  // again (its row gives the first token's logits): 4 of 5 tokens from the cache with pages of 2.
  const std::vector<TrafficRequest> requests = {request("A", 0, {1, 2, 3, 4, 5}, 1),
                                                request("B", 1, {1, 2, 3, 4, 5}, 1)};
  TrafficPages pages(8, 2, 3, requests.size());
  TrafficScheduler scheduler(requests, {8, 2, true, true}, {}, pages);
  scheduler.commit(scheduler.schedule(), {3});
  const StepPlan second = scheduler.schedule();
  ASSERT_EQ(second.rows.size(), 1u);
  EXPECT_EQ(second.rows[0].first, 4);
  EXPECT_EQ(second.rows[0].count, 1);
  EXPECT_EQ(scheduler.state(1).cached, 4);
  // With prefix caching off nothing is taken from the cache.
  TrafficPages cold(8, 2, 3, requests.size());
  TrafficScheduler off(requests, {8, 2, false, true}, {}, cold);
  off.commit(off.schedule(), {3});
  EXPECT_EQ(off.schedule().rows.at(0).count, 5);
  EXPECT_EQ(off.state(1).cached, 0);
}

TEST(TrafficPages, FreedPagesKeepTheirPrefixUntilHandedOutAgain) {
  TrafficPages pages(4, 2, 3, 2);
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  pages.reserve(0, 4);
  EXPECT_EQ(pages.pages_of(0), (std::vector<int32_t>{0, 1}));
  pages.cache_prompt_pages(0, prompt, 4);
  EXPECT_EQ(pages.cached_pages(), 2u);
  EXPECT_EQ(pages.slot(0, 3), 3);  // page 1, offset 1
  pages.release(0);
  EXPECT_EQ(pages.free_pages(), 4);
  EXPECT_EQ(pages.cached_prefix(prompt, 4), 4);
  EXPECT_EQ(pages.cached_prefix(prompt, 3), 2);  // whole pages within the limit only
  EXPECT_EQ(pages.cached_prefix({1, 2, 9, 9}, 4), 2);
  EXPECT_EQ(pages.cached_prefix({9, 2, 3, 4}, 4), 0);  // an entry names its whole prefix
  // The free queue hands out the never-used pages 2 and 3 first, then request 0's last page (1),
  // which leaves the cache; page 0 keeps its prefix.
  pages.reserve(1, 6);
  EXPECT_EQ(pages.pages_of(1), (std::vector<int32_t>{2, 3, 1}));
  EXPECT_EQ(pages.cached_pages(), 1u);
  EXPECT_EQ(pages.cached_prefix(prompt, 4), 2);
  EXPECT_THROW(pages.reserve(1, 7), Error);  // more than the 3 pages a request was sized for
  pages.take_cached(0, prompt, 2);
  EXPECT_EQ(pages.pages_of(0), (std::vector<int32_t>{0}));
  EXPECT_EQ(pages.free_pages(), 0);
  const PagedKv v = pages.view(std::vector<size_t>{1, 0}, std::vector<int32_t>{6, 2});
  EXPECT_EQ(v.max_pages_per_seq, 3);
  EXPECT_EQ(v.page_table, (std::vector<int32_t>{2, 3, 1, 0, 0, 0}));
}

TEST(TrafficScheduler, RefusesSettingsItCanNeverSchedule) {
  const std::vector<TrafficRequest> requests = hand_worked_requests();
  TrafficPages pages(12, 2, 6, requests.size());
  try {
    TrafficScheduler s(requests, {2, 2, true, false}, {}, pages);  // D's 3 tokens never fit
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("chunked_prefill off"), std::string::npos) << e.what();
  }
  try {
    TrafficScheduler s(requests, {2, 3, true, true}, {}, pages);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("max_num_seqs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdet
