// rmsnorm and log_softmax: one reduction per row over the row length.
#include "lib/workloads/footprint.h"
#include "lib/workloads/row_workload.h"

namespace nvdet {
namespace {

class RmsNormWorkload final : public RowWorkload {
 public:
  explicit RmsNormWorkload(const Scenario& s)
      : RowWorkload(s, s.d, 1.0f),
        // Weights near 1, as trained RMSNorm weights are, but not all equal.
        weight_(seeded_tensor(s.dtype, {s.d}, s.seed, kWeightStream, 0.1f, 1.0f)) {}

 protected:
  OpArgs make_args(const HostTensor& x) const override {
    RmsNormArgs a;
    a.x = &x;
    a.weight = &weight_;
    a.eps = scenario().eps;
    a.out_dtype = scenario().out_dtype;
    return a;
  }
  double flops(int64_t rows) const override { return 4.0 * rows * scenario().d; }
  double bytes(int64_t rows) const override {
    return static_cast<double>(rows * scenario().d) *
           (dtype_size(scenario().dtype) + dtype_size(scenario().out_dtype));
  }

 private:
  HostTensor weight_;
};

class LogSoftmaxWorkload final : public RowWorkload {
 public:
  // Logits with a spread like a language model's (stddev 3).
  explicit LogSoftmaxWorkload(const Scenario& s) : RowWorkload(s, s.v, 3.0f) {}

 protected:
  OpArgs make_args(const HostTensor& x) const override {
    LogSoftmaxArgs a;
    a.x = &x;
    a.out_dtype = scenario().out_dtype;
    return a;
  }
  double flops(int64_t rows) const override { return 5.0 * rows * scenario().v; }
  double bytes(int64_t rows) const override {
    return static_cast<double>(rows * scenario().v) *
           (dtype_size(scenario().dtype) + dtype_size(scenario().out_dtype));
  }
};

}  // namespace

std::unique_ptr<Workload> make_rmsnorm_workload(const Scenario& s) {
  return std::make_unique<RmsNormWorkload>(s);
}
std::unique_ptr<Workload> make_log_softmax_workload(const Scenario& s) {
  return std::make_unique<LogSoftmaxWorkload>(s);
}

Footprint rmsnorm_footprint(const Scenario& s) {
  Footprint p;
  const double rows = batch_max(s) * axis_max(s, Axis::kTokens, s.tokens);
  p.inputs = rows * static_cast<double>(s.d) * dtype_bytes(s.dtype);
  p.weights = static_cast<double>(s.d) * dtype_bytes(s.dtype);
  p.outputs = rows * static_cast<double>(s.d) * dtype_bytes(s.out_dtype);
  p.workspace = rows * 4;
  p.cpu_copies =
      static_cast<double>(s.d) * 4 + rows * static_cast<double>(s.d) * 8;  // weight; double output
  return p;
}

Footprint log_softmax_footprint(const Scenario& s) {
  Footprint p;
  const double rows = batch_max(s) * axis_max(s, Axis::kTokens, s.tokens);
  p.inputs = rows * static_cast<double>(s.v) * dtype_bytes(s.dtype);
  p.outputs = rows * static_cast<double>(s.v) * dtype_bytes(s.out_dtype);
  p.workspace = rows * static_cast<double>(s.v) * 4;
  p.cpu_copies = rows * static_cast<double>(s.v) * 8;  // cpu-reference's double output
  return p;
}

}  // namespace nvdet
