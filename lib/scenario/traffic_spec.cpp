#include "lib/scenario/traffic_spec.h"

#include <fmt/format.h>

namespace nvdet {
namespace {

std::string range_text(const UniformRange& r) {
  return r.min == r.max ? std::to_string(r.min) : fmt::format("{}..{}", r.min, r.max);
}

}  // namespace

std::string traffic_summary(const TrafficSpec& t) {
  std::string out = fmt::format("{} request{} ", t.requests, t.requests == 1 ? "" : "s");
  out += t.burst_size > 0
             ? fmt::format("arriving {} at a time every {} steps", t.burst_size, t.burst_every)
             : fmt::format("arriving at {:g} a step", t.rate);
  out += t.prompts.empty() ? ", prompts of " + range_text(t.prompt_len) + " tokens"
                           : fmt::format(", prompts drawn from {} in a file", t.prompts.size());
  if (t.prefix_groups > 0 && t.prefix_fraction > 0) {
    out += fmt::format(" ({:g}% after one of {} shared {}-token prefixes)",
                       100.0 * t.prefix_fraction, t.prefix_groups, t.prefix_len);
  }
  out += ", " + range_text(t.max_new_tokens) + " new tokens";
  out += t.eos == EosRule::kOff ? ", EOS off" : ", EOS on";
  out += fmt::format("; probes arrive at step {}", t.probe_arrival);
  if (t.probe_prefix >= 0) out += fmt::format(" after shared prefix {}", t.probe_prefix);
  return out;
}

}  // namespace nvdet
