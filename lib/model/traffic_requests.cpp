#include "lib/model/traffic_requests.h"

#include <algorithm>
#include <cmath>

#include "lib/core/error.h"
#include "lib/core/seeded_random.h"

namespace nvdet {
namespace {

// Streams of the traffic's seeded tokens, apart from the scenario prompts' (request ids) and
// the fillers' (1 << 40 + slot).
constexpr uint64_t kTrafficPromptStream = uint64_t{1} << 44;
constexpr uint64_t kSharedPrefixStream = uint64_t{1} << 45;
// The draws of one co-traffic request: one key per field.
enum Draw : uint64_t {
  kArrivalGap = 1,
  kPromptLen,
  kMaxNew,
  kPrefixTaken,
  kPrefixGroup,
  kFilePrompt
};

// A uniform double in [0, 1) from a 64-bit draw.
double unit(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

int32_t uniform_in(uint64_t x, const UniformRange& r) {
  return r.min + static_cast<int32_t>(x % static_cast<uint64_t>(r.max - r.min + 1));
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::vector<int32_t> joined(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Every value the sweep gives `axis`, or its default.
std::vector<AxisValue> values_of(const Scenario& s, Axis axis) {
  for (const SweepAxis& a : s.sweep)
    if (a.axis == axis) return a.values;
  return {axis_spec(axis).default_value(s)};
}

}  // namespace

TrafficSource::TrafficSource(const Scenario& s, const std::vector<Prompt>& prompts, int32_t vocab)
    : t_(s.traffic), seed_(s.seed), vocab_(vocab) {
  for (int32_t g = 0; g < t_.prefix_groups; ++g) {
    prefixes_.push_back(synthetic_prompt(s.seed, kSharedPrefixStream + static_cast<uint64_t>(g),
                                         t_.prefix_len, vocab));
  }
  for (const std::vector<int32_t>& p : t_.prompts) {
    for (const int32_t id : p) {
      if (id < 0 || id >= vocab)
        throw_input_error(t_.prompts_file + " holds token id " + std::to_string(id) +
                          ", outside the model's vocabulary (0.." + std::to_string(vocab - 1) +
                          ")");
    }
  }
  for (const int64_t r : s.requests) {
    const std::vector<int32_t>& own = prompts.at(static_cast<size_t>(r));
    probe_prompts_.push_back(t_.probe_prefix >= 0 ? joined(prefixes_.at(t_.probe_prefix), own)
                                                  : own);
    probe_ids_.push_back(r);
  }
  // Where each probe's trace starts: past every prompt position a replay could serve it from the
  // prefix cache. The prompts the traffic can share a prefix with: the other probes', the shared
  // prefixes, the prompts file's (alone and after each shared prefix).
  bool caching = false;
  for (const AxisValue& v : values_of(s, Axis::kPrefixCaching))
    caching = caching || std::get<std::string>(v) == "on";
  std::vector<std::vector<int32_t>> others = prefixes_;
  for (const std::vector<int32_t>& f : t_.prompts) {
    others.push_back(f);
    for (const std::vector<int32_t>& p : prefixes_) others.push_back(joined(p, f));
  }
  for (size_t i = 0; i < probe_prompts_.size(); ++i) {
    const std::vector<int32_t>& mine = probe_prompts_[i];
    size_t shared = 0;
    for (size_t j = 0; caching && j < probe_prompts_.size(); ++j)
      if (j != i) shared = std::max(shared, common_prefix(mine, probe_prompts_[j]));
    for (size_t j = 0; caching && j < others.size(); ++j)
      shared = std::max(shared, common_prefix(mine, others[j]));
    shared = std::min(shared, mine.size() - 1);  // the last prompt token is always computed
    int32_t from = 0;
    for (const AxisValue& v : values_of(s, Axis::kPageSize)) {
      const int64_t page = std::get<int64_t>(v);
      from = std::max(from, static_cast<int32_t>(static_cast<int64_t>(shared) / page * page));
    }
    trace_from_.push_back(from);
  }
}

std::vector<TrafficRequest> TrafficSource::requests(int64_t traffic_seed,
                                                    int32_t probe_max_new_tokens) const {
  const uint64_t key = splitmix64(seed_ ^ splitmix64(static_cast<uint64_t>(traffic_seed)));
  std::vector<TrafficRequest> out;
  double clock = 0.0;  // Poisson arrivals: exponential gaps of mean 1 / rate steps
  for (int32_t i = 0; i < t_.requests; ++i) {
    const auto draw = [&](Draw field) {
      return splitmix64(key ^ splitmix64((static_cast<uint64_t>(i) << 8) | field));
    };
    TrafficRequest q;
    q.label = "r" + std::to_string(i);
    if (t_.burst_size > 0) {
      q.arrival = static_cast<int64_t>(i / t_.burst_size) * t_.burst_every;
    } else {
      clock += -std::log1p(-unit(draw(kArrivalGap))) / t_.rate;
      q.arrival = static_cast<int64_t>(std::floor(clock));
    }
    if (!prefixes_.empty() && unit(draw(kPrefixTaken)) < t_.prefix_fraction) {
      q.prompt = prefixes_[draw(kPrefixGroup) % prefixes_.size()];
    }
    const std::vector<int32_t> own =
        t_.prompts.empty() ? synthetic_prompt(key, kTrafficPromptStream + static_cast<uint64_t>(i),
                                              uniform_in(draw(kPromptLen), t_.prompt_len), vocab_)
                           : t_.prompts[draw(kFilePrompt) % t_.prompts.size()];
    q.prompt.insert(q.prompt.end(), own.begin(), own.end());
    q.max_new_tokens = uniform_in(draw(kMaxNew), t_.max_new_tokens);
    out.push_back(std::move(q));
  }
  // The probes join the queue after the co-traffic that arrives at their step.
  const auto at =
      std::upper_bound(out.begin(), out.end(), int64_t{t_.probe_arrival},
                       [](int64_t step, const TrafficRequest& q) { return step < q.arrival; });
  std::vector<TrafficRequest> probes;
  for (size_t i = 0; i < probe_prompts_.size(); ++i) {
    TrafficRequest q;
    q.label = "probe " + std::to_string(probe_ids_[i]);
    q.probe = static_cast<int64_t>(i);
    q.arrival = t_.probe_arrival;
    q.prompt = probe_prompts_[i];
    q.max_new_tokens = probe_max_new_tokens;
    q.max_cached_tokens = q.trace_from = trace_from_[i];
    probes.push_back(std::move(q));
  }
  out.insert(at, probes.begin(), probes.end());
  return out;
}

int32_t TrafficSource::longest_request(int32_t probe_max_new_tokens) const {
  int64_t traffic_prompt = t_.prompt_len.max;
  if (!t_.prompts.empty()) {
    traffic_prompt = 0;
    for (const auto& p : t_.prompts)
      traffic_prompt = std::max(traffic_prompt, static_cast<int64_t>(p.size()));
  }
  if (!prefixes_.empty()) traffic_prompt += t_.prefix_len;
  int64_t longest = t_.requests > 0 ? traffic_prompt + t_.max_new_tokens.max : 0;
  for (const auto& p : probe_prompts_)
    longest = std::max(longest, static_cast<int64_t>(p.size()) + probe_max_new_tokens);
  return static_cast<int32_t>(std::min<int64_t>(longest, std::numeric_limits<int32_t>::max()));
}

}  // namespace nvdet
