// gemm: out[m, n] = a[m, k] · w[n, k]^T (+ bias). The batch is the m dimension: m = batch × tokens.
// Weights are N(0, 1/sqrt(k)) so outputs stay O(1) at any k.
#include <algorithm>
#include <cmath>
#include <map>

#include "lib/workloads/footprint.h"
#include "lib/workloads/fp8_context.h"
#include "lib/workloads/row_workload.h"
#include "lib/workloads/tp_gemm.h"

namespace nvdet {
namespace {

// Whether the scenario shards the GEMM (sweeps a tensor-parallel axis).
bool sharded(const Scenario& s) {
  return std::any_of(s.sweep.begin(), s.sweep.end(), [](const SweepAxis& a) {
    return a.axis == Axis::kTp || a.axis == Axis::kAllreduce || a.axis == Axis::kChannels;
  });
}

class GemmWorkload final : public RowWorkload {
 public:
  explicit GemmWorkload(const Scenario& s)
      : RowWorkload(s, s.k, 1.0f),
        w_(seeded_tensor(s.dtype, {s.n, s.k}, s.seed, kWeightStream,
                         1.0f / std::sqrt(static_cast<float>(s.k)))) {
    if (s.bias) bias_ = seeded_tensor(s.dtype, {s.n}, s.seed, kBiasStream, 0.5f);
    check_gemm_scenario(s);
    // FP8 (README "FP8"): the weight quantised once per format and weight scale of the sweep.
    if (s.fp8.enabled) fp8_w_ = Fp8Weights({&w_}, fp8_schemes(s));
    if (!sharded(s)) return;
    // Every rank's shard is cut here, once.
    const HostTensor* bias = s.bias ? &bias_ : nullptr;
    for (const int tp : tp_values(s)) {
      if (s.tp_split_row) rows_.emplace(tp, RowParallelLinear(w_, bias, tp));
      else columns_.emplace(tp, ColumnParallelLinear(w_, bias, tp));
    }
  }

 protected:
  OpArgs make_args(const HostTensor& x) const override {
    GemmArgs a;
    a.a = &x;
    a.w = &w_;
    a.bias = scenario().bias ? &bias_ : nullptr;
    a.out_dtype = scenario().out_dtype;
    a.allow_tf32 = scenario().tf32;
    return a;
  }
  HostTensor compute(Backend& backend, const HostTensor& x, const Context& context,
                     RunNotes* notes) override {
    if (scenario().fp8.enabled) {
      GemmArgs a = std::get<GemmArgs>(make_args(x));
      a.w = nullptr;
      a.fp8 = fp8_scheme(scenario(), context);
      a.fp8_w = &fp8_w_.at(0, a.fp8);
      return backend.run(a, notes);
    }
    if (rows_.empty() && columns_.empty()) return RowWorkload::compute(backend, x, context, notes);
    const TpOptions o = tp_options(scenario(), context);
    if (scenario().tp_split_row) {
      const RowParallelLinear& linear = rows_.at(o.tp);
      return linear.run(backend, linear.split(x), scenario().out_dtype, o, notes);
    }
    const ColumnParallelLinear& linear = columns_.at(o.tp);
    return linear.gather(linear.run(backend, x, scenario().out_dtype, notes));
  }
  // One backend call is what bench times; a sharded context is many calls and a host-side
  // all-reduce, which it would misrepresent.
  // FP8: the call with the context's scheme and quantised weight, as compute() makes it. Its
  // time is what the backend enqueues for one call (the GEMM, and any output pass); the host-side
  // quantisation of the activations happens when the call is prepared, before the timing.
  std::unique_ptr<BenchCase> bench_case(const Context& context) override {
    if (!rows_.empty() || !columns_.empty())
      throw_input_error(
          "nvdet bench does not time tensor-parallel contexts (the tp, allreduce "
          "and channels axes); audit them instead");
    std::unique_ptr<BenchCase> bc = RowWorkload::bench_case(context);
    if (scenario().fp8.enabled) {
      auto& g = std::get<GemmArgs>(bc->args);
      g.w = nullptr;
      g.fp8 = fp8_scheme(scenario(), context);
      g.fp8_w = &fp8_w_.at(0, g.fp8);
      bc->bytes = fp8_bytes(g.a->dim(0), *g.fp8_w);
    }
    return bc;
  }
  double flops(int64_t rows) const override { return 2.0 * rows * scenario().n * scenario().k; }
  double bytes(int64_t rows) const override {
    const double in = static_cast<double>(dtype_size(scenario().dtype));
    return in * (rows * scenario().k + scenario().n * scenario().k) +
           dtype_size(scenario().out_dtype) * static_cast<double>(rows * scenario().n);
  }
  // One byte per code of the activations and the weight, the weight's scales, the output.
  double fp8_bytes(int64_t rows, const Fp8Weight& w) const {
    return static_cast<double>(rows * scenario().k) + static_cast<double>(w.bytes()) +
           dtype_size(scenario().out_dtype) * static_cast<double>(rows * scenario().n);
  }

 private:
  HostTensor w_, bias_;
  Fp8Weights fp8_w_;                       // FP8 scenarios: w_ quantised per (format, weight scale)
  std::map<int, RowParallelLinear> rows_;  // by tp, when the scenario shards
  std::map<int, ColumnParallelLinear> columns_;
};

}  // namespace

void check_gemm_scenario(const Scenario& s) {
  if (!sharded(s)) return;
  for (const SweepAxis& a : s.sweep) {
    if (s.tf32 && (a.axis == Axis::kTp || a.axis == Axis::kAllreduce || a.axis == Axis::kChannels))
      throw_input_error(a.where, "'tf32' with the tensor-parallel axes is not implemented");
  }
  check_each_tp(s, [&s](int tp) {
    if (s.tp_split_row) check_row_split(s.k, tp);
    else check_column_split({s.n}, tp);
  });
}

std::unique_ptr<Workload> make_gemm_workload(const Scenario& s) {
  return std::make_unique<GemmWorkload>(s);
}

Footprint gemm_footprint(const Scenario& s) {
  Footprint p;
  const double rows = batch_max(s) * axis_max(s, Axis::kTokens, s.tokens);
  const double in = dtype_bytes(s.dtype), out = dtype_bytes(s.out_dtype);
  p.inputs = rows * static_cast<double>(s.k) * in;
  p.weights = static_cast<double>(s.n) * static_cast<double>(s.k) * in +
              (s.bias ? static_cast<double>(s.n) * in : 0);
  p.outputs = rows * static_cast<double>(s.n) * out;
  p.workspace = rows * static_cast<double>(s.n) * 4;  // fp32 accumulators / split-K partials
  // fp32 copies of A and of W (its panels), of the bias, and cpu-reference's double output.
  p.cpu_copies = (rows * static_cast<double>(s.k) +
                  static_cast<double>(s.n) * static_cast<double>(s.k) + static_cast<double>(s.n)) *
                     4 +
                 rows * static_cast<double>(s.n) * 8;
  // FP8: one byte per weight element and its scales per (format, weight scale) swept, and the
  // activations' codes.
  if (s.fp8.enabled) {
    p.weights += static_cast<double>(fp8_schemes(s).size()) * static_cast<double>(s.n) *
                 (static_cast<double>(s.k) + 4);
    p.cpu_copies += rows * static_cast<double>(s.k) * 5;
  }
  for (const SweepAxis& a : s.sweep) {
    if (a.axis != Axis::kTp) continue;
    // The ranks' shards (a second copy of the weights per tp value) and their partial outputs,
    // or fp32 K-chunk partials for the TP-invariant plan.
    p.weights *= 1.0 + static_cast<double>(a.values.size());
    p.workspace += rows * static_cast<double>(s.n) * 4 * (static_cast<double>(s.k) / 256.0 + 1);
  }
  return p;
}

}  // namespace nvdet
