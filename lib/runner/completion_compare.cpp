#include "lib/runner/completion_compare.h"

#include <algorithm>
#include <limits>

#include "lib/model/sampler.h"

namespace nvdet {
namespace {

double logit(const HostTensor& logits, int64_t step, int32_t token) {
  if (logits.rank() < 2 || step >= logits.dim(0) || token < 0 || token >= logits.dim(1)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return logits.get(step * logits.dim(1) + token);
}

// Top-1 minus top-2 logit of one step.
double margin(const HostTensor& logits, int64_t step) {
  if (logits.rank() < 2 || step >= logits.dim(0) || logits.dim(1) < 2) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  double best = -std::numeric_limits<double>::infinity(), second = best;
  for (int64_t v = 0; v < logits.dim(1); ++v) {
    const double x = logits.get(step * logits.dim(1) + v);
    if (x > best) {
      second = best;
      best = x;
    } else if (x > second) {
      second = x;
    }
  }
  return best - second;
}

}  // namespace

std::optional<CompletionDivergence> compare_completions(const RequestOutput& ref,
                                                        const RequestOutput& out) {
  const size_t n = std::min(ref.completion.size(), out.completion.size());
  for (size_t step = 0; step < n; ++step) {
    if (ref.completion[step] == out.completion[step]) continue;
    CompletionDivergence d;
    d.step = static_cast<int64_t>(step);
    d.baseline_token = ref.completion[step];
    d.token = out.completion[step];
    d.baseline_logit_of_baseline_token = logit(ref.output, d.step, d.baseline_token);
    d.baseline_logit_of_token = logit(ref.output, d.step, d.token);
    d.logit_of_baseline_token = logit(out.output, d.step, d.baseline_token);
    d.logit_of_token = logit(out.output, d.step, d.token);
    d.baseline_margin = margin(ref.output, d.step);
    return d;
  }
  return std::nullopt;
}

void add_sampling_probabilities(CompletionDivergence& d, const RequestOutput& ref,
                                const SamplingSpec& spec) {
  const HostTensor& logits = ref.output;
  if (logits.rank() < 2 || d.step >= logits.dim(0) || logits.dtype() != DType::kFP32) return;
  const auto* row = reinterpret_cast<const float*>(logits.data()) + d.step * logits.dim(1);
  const FilteredDistribution f = filtered_distribution(row, logits.dim(1), spec);
  d.sampled = true;
  for (size_t i = 0; i < f.ids.size(); ++i) {
    if (f.ids[i] == d.baseline_token) d.baseline_prob_of_baseline_token = f.probs[i];
    if (f.ids[i] == d.token) d.baseline_prob_of_token = f.probs[i];
  }
}

std::optional<OpDivergence> first_trace_difference(const RequestOutput& ref,
                                                   const RequestOutput& out) {
  const size_t n = std::min(ref.trace.size(), out.trace.size());
  for (size_t i = 0; i < n; ++i) {
    if (ref.trace[i].hash != out.trace[i].hash) {
      return OpDivergence{out.trace[i].step, out.trace[i].layer, out.trace[i].op};
    }
  }
  return std::nullopt;
}

std::optional<TrafficParting> traffic_parting(const RequestOutput& ref, const RequestOutput& out,
                                              const std::optional<OpDivergence>& first_op,
                                              const std::optional<CompletionDivergence>& flip) {
  if (ref.traffic_steps.empty() || out.traffic_steps.empty() || (!first_op && !flip))
    return std::nullopt;
  const int32_t step = first_op ? first_op->step : static_cast<int32_t>(flip->step);
  const auto at = [step](const std::vector<ProbeStep>& steps) -> const ProbeStep* {
    for (const ProbeStep& p : steps)
      if (p.step == step) return &p;
    return nullptr;
  };
  const ProbeStep* a = at(ref.traffic_steps);
  const ProbeStep* b = at(out.traffic_steps);
  if (!a || !b) return std::nullopt;
  return TrafficParting{step, *a, *b};
}

}  // namespace nvdet
