// moe: one mixture-of-experts block (MoeArgs) over a batch of requests, each `tokens` rows of
// `hidden` activations. Weights are seeded once: router N(0, 1/sqrt(hidden)) (logits O(1), so
// that routing spreads), each expert's gate_up N(0, 1/sqrt(hidden)) and down N(0, 1/sqrt(I)).
//
// The fillers' routing is the axis filler_routing, made by constructing the filler rows (seeded
// by their slot, as every filler is):
//  - random: seeded rows like the probed ones; the router spreads them over the experts;
//  - same: each filler row is a probed row plus 1/20 of its own seeded row, so it routes onto
//    the same experts as that probed row (every probed expert's row count grows with the batch);
//  - hot: each filler row is its seeded row plus 6 x the router row of one hot expert (the top
//    expert of the first probed row, by a double dot product): that logit rises by about 6, so
//    every filler picks the hot expert first.
// The probed rows are the same in every context; only their experts' row counts change.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "lib/core/error.h"
#include "lib/ops/moe_routing.h"
#include "lib/workloads/batch_layout.h"
#include "lib/workloads/footprint.h"
#include "lib/workloads/fp8_context.h"
#include "lib/workloads/row_source.h"
#include "lib/workloads/workload.h"

namespace nvdet {
namespace {

// Seeded weight streams: the router, then two per expert.
inline constexpr uint64_t kRouterStream = kWeightStream + 16;
uint64_t gate_up_stream(int64_t e) { return kRouterStream + 1 + 2 * static_cast<uint64_t>(e); }
uint64_t down_stream(int64_t e) { return kRouterStream + 2 + 2 * static_cast<uint64_t>(e); }

inline constexpr int64_t kMaxExperts = 4096;
inline constexpr int64_t kMaxTopK = 64;
inline constexpr float kSameNoise = 0.05f;
inline constexpr float kHotPull = 6.0f;

struct MoeBenchCase : BenchCase {
  HostTensor x;
};

class MoeWorkload final : public Workload {
 public:
  explicit MoeWorkload(const Scenario& s) : s_(s), source_(s.dtype, s.moe_hidden, s.seed, 1.0f) {
    const int64_t h = s.moe_hidden, inter = s.moe_intermediate, e = s.moe_experts;
    check_moe_scenario(s);  // bounds before anything is allocated
    const float w_in = 1.0f / std::sqrt(static_cast<float>(h));
    router_ = seeded_tensor(s.dtype, {e, h}, s.seed, kRouterStream, w_in);
    gate_up_.reserve(static_cast<size_t>(e));
    down_.reserve(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) {
      gate_up_.push_back(seeded_tensor(s.dtype, {2 * inter, h}, s.seed, gate_up_stream(i), w_in));
      down_.push_back(seeded_tensor(s.dtype, {h, inter}, s.seed, down_stream(i),
                                    1.0f / std::sqrt(static_cast<float>(inter))));
    }
    // FP8 experts (README "FP8"): every expert's weights quantised once per format and weight
    // scale of the sweep, gate_up first then down; the router stays in the activations' dtype.
    if (s.fp8.enabled) {
      std::vector<const HostTensor*> experts;
      for (const HostTensor& w : gate_up_) experts.push_back(&w);
      for (const HostTensor& w : down_) experts.push_back(&w);
      fp8_experts_ = Fp8Weights(experts, fp8_schemes(s));
    }
  }

  std::vector<std::string> coord_names() const override { return {"token", "col"}; }

  std::vector<RequestOutput> run(Backend& backend, const Context& context,
                                 RunNotes* notes) override {
    const BatchLayout layout = make_batch_layout(s_, context);
    const int64_t t = context.integer(Axis::kTokens);
    // Every backend and repeat of a context sees the same tensor object (GPU backends upload
    // it once).
    if (cached_id_ != context.id) {
      cached_x_ = assemble(layout, t, context.word(Axis::kFillerRouting));
      cached_id_ = context.id;
    }
    MoeArgs args = make_args(cached_x_, layout, t);
    if (s_.fp8.enabled) {
      args.fp8 = fp8_scheme(s_, context);
      args.gate_up.clear();
      args.down.clear();
      const size_t e = gate_up_.size();
      for (size_t i = 0; i < e; ++i) {
        args.fp8_gate_up.push_back(&fp8_experts_.at(i, args.fp8));
        args.fp8_down.push_back(&fp8_experts_.at(e + i, args.fp8));
      }
    }
    const HostTensor out = backend.run(args, notes);
    std::vector<RequestOutput> outputs;
    for (size_t p = 0; p < layout.probe_slot.size(); ++p) {
      RequestOutput o;
      o.request = s_.requests[p];
      o.output = out.slice_rows(layout.probe_slot[p] * t, t);
      outputs.push_back(std::move(o));
    }
    return outputs;
  }

  std::unique_ptr<BenchCase> bench_case(const Context& context) override {
    if (s_.fp8.enabled)
      throw_input_error(
          "nvdet bench does not time FP8 MoE blocks yet (it times FP8 GEMMs); audit them instead");
    auto bc = std::make_unique<MoeBenchCase>();
    const BatchLayout layout = make_batch_layout(s_, context);
    const int64_t t = context.integer(Axis::kTokens);
    bc->x = assemble(layout, t, context.word(Axis::kFillerRouting));
    bc->args = make_args(bc->x, layout, t);
    const double rows = static_cast<double>(bc->x.dim(0));
    const double h = static_cast<double>(s_.moe_hidden);
    const double i = static_cast<double>(s_.moe_intermediate);
    const double e = static_cast<double>(s_.moe_experts), k = static_cast<double>(s_.moe_top_k);
    bc->flops = 2.0 * rows * h * e + rows * k * (2.0 * h * 2.0 * i + 2.0 * i * h);
    // The fewest bytes: activations in and out, the router, and the weights of the experts the
    // batch's rows are routed to, once each (a small batch touches few of them).
    const double touched = static_cast<double>(touched_experts(bc->x));
    bc->bytes = dtype_bytes(s_.dtype) * (rows * h + e * h + touched * 3.0 * i * h) +
                dtype_bytes(s_.out_dtype) * rows * h;
    return bc;
  }

 private:
  // How many experts the rows of x are routed to: the router logits in double on the host, then
  // the shared routing (a backend's rounding can tip a near tie elsewhere; the count is for the
  // bench's bytes, not for any bit).
  int64_t touched_experts(const HostTensor& x) const {
    const int64_t rows = x.dim(0), h = s_.moe_hidden, experts = s_.moe_experts;
    std::vector<float> logits(static_cast<size_t>(rows * experts));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t e = 0; e < experts; ++e) {
        double dot = 0;
        for (int64_t c = 0; c < h; ++c) dot += double{x.get(r * h + c)} * router_.get(e * h + c);
        logits[static_cast<size_t>(r * experts + e)] = static_cast<float>(dot);
      }
    }
    const MoeRoute route = route_tokens(logits, static_cast<int>(rows), static_cast<int>(experts),
                                        static_cast<int>(s_.moe_top_k), s_.norm_topk_prob);
    const std::vector<int32_t> counts = expert_row_counts(route, static_cast<int>(experts));
    return std::count_if(counts.begin(), counts.end(), [](int32_t n) { return n > 0; });
  }

  MoeArgs make_args(const HostTensor& x, const BatchLayout& layout, int64_t t) const {
    MoeArgs a;
    a.x = &x;
    a.router = &router_;
    for (const HostTensor& w : gate_up_) a.gate_up.push_back(&w);
    for (const HostTensor& w : down_) a.down.push_back(&w);
    a.top_k = static_cast<int32_t>(s_.moe_top_k);
    a.norm_topk_prob = s_.norm_topk_prob;
    for (int64_t slot : layout.probe_slot) {
      for (int64_t r = 0; r < t; ++r) a.noted_rows.push_back(slot * t + r);
    }
    a.out_dtype = s_.out_dtype;
    return a;
  }

  // The batch: seeded rows per slot, then the filler rows remade for `routing`.
  HostTensor assemble(const BatchLayout& layout, int64_t t, const std::string& routing) {
    HostTensor x = source_.assemble(layout, t);
    if (routing == "random" || layout.probe_slot.empty()) return x;
    const int64_t h = s_.moe_hidden;
    const int64_t probes = static_cast<int64_t>(layout.probe_slot.size());
    std::vector<float> pull(static_cast<size_t>(h), 0.0f);
    if (routing == "hot") {
      const int64_t row0 = layout.probe_slot[0] * t;
      int64_t hot = 0;
      double best = -INFINITY;
      for (int64_t e = 0; e < s_.moe_experts; ++e) {
        double dot = 0.0;
        for (int64_t c = 0; c < h; ++c) dot += double{x.get(row0 * h + c)} * router_.get(e * h + c);
        if (dot > best) {
          best = dot;
          hot = e;
        }
      }
      for (int64_t c = 0; c < h; ++c) pull[c] = kHotPull * router_.get(hot * h + c);
    }
    int64_t filler = 0;
    for (size_t slot = 0; slot < layout.slots.size(); ++slot) {
      if (layout.slots[slot].probed) continue;
      const int64_t like = layout.probe_slot[static_cast<size_t>(filler++ % probes)];
      for (int64_t r = 0; r < t; ++r) {
        const int64_t dst = (static_cast<int64_t>(slot) * t + r) * h, src = (like * t + r) * h;
        for (int64_t c = 0; c < h; ++c) {
          const float own = x.get(dst + c);
          x.set(dst + c, routing == "same" ? x.get(src + c) + kSameNoise * own : own + pull[c]);
        }
      }
    }
    return x;
  }

  Scenario s_;
  RowSource source_;
  HostTensor router_;
  std::vector<HostTensor> gate_up_, down_;
  Fp8Weights fp8_experts_;  // FP8 scenarios: gate_up_ then down_, per (format, weight scale)
  HostTensor cached_x_;
  std::string cached_id_;
};

}  // namespace

void check_moe_scenario(const Scenario& s) {
  // One tensor pair per expert, and routing costs rows x experts x log(top_k). Served models use
  // 8 to 384 experts and top-1 to top-10.
  if (s.moe_experts > kMaxExperts || s.moe_top_k > kMaxTopK) {
    throw_input_error(SourceLocation{s.path, 0, 0},
                      fmt::format("moe: shape experts ({}) may be at most {} and top_k ({}) at "
                                  "most {}",
                                  s.moe_experts, kMaxExperts, s.moe_top_k, kMaxTopK));
  }
  if (s.moe_top_k > s.moe_experts) {
    throw_input_error(
        SourceLocation{s.path, 0, 0},
        fmt::format("moe: shape top_k ({}) is more than experts ({})", s.moe_top_k, s.moe_experts));
  }
}

std::unique_ptr<Workload> make_moe_workload(const Scenario& s) {
  return std::make_unique<MoeWorkload>(s);
}

Footprint moe_footprint(const Scenario& s) {
  Footprint p;
  const double rows = batch_max(s) * axis_max(s, Axis::kTokens, s.tokens);
  const double in = dtype_bytes(s.dtype), out = dtype_bytes(s.out_dtype);
  const double h = static_cast<double>(s.moe_hidden), i = static_cast<double>(s.moe_intermediate);
  const double e = static_cast<double>(s.moe_experts), k = static_cast<double>(s.moe_top_k);
  p.inputs = rows * h * in;
  p.weights = (e * h + e * 3.0 * i * h) * in;  // the router and every expert
  p.outputs = rows * h * out;
  // fp32 router logits; per assignment the gathered row, gate_up, h and the fp32 down output.
  p.workspace = rows * e * 4 + rows * k * (h * in + 2.0 * i * in + i * in + h * 4);
  // A CPU backend widens the weights it multiplies to fp32 (counted for every expert, the bound
  // when all of them receive rows) and the gathered activations; cpu-reference's double outputs.
  p.cpu_copies =
      (e * h + e * 3.0 * i * h) * 4 + rows * k * std::max(h, 2.0 * i) * (4 + 8) + rows * h * 8;
  // FP8: every expert's codes and scales per (format, weight scale) swept, and the activations'.
  if (s.fp8.enabled) {
    p.weights += static_cast<double>(fp8_schemes(s).size()) * e * 3.0 * i * (h + 4);
    p.cpu_copies += rows * k * std::max(h, 2.0 * i) * 5;
  }
  return p;
}

}  // namespace nvdet
