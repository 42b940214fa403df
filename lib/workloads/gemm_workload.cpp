// gemm: out[m, n] = a[m, k] · w[n, k]^T (+ bias). The batch is the m dimension: m = batch × tokens.
// Weights are N(0, 1/sqrt(k)) so outputs stay O(1) at any k.
#include <cmath>

#include "lib/workloads/footprint.h"
#include "lib/workloads/row_workload.h"

namespace nvdet {
namespace {

class GemmWorkload final : public RowWorkload {
 public:
  explicit GemmWorkload(const Scenario& s)
      : RowWorkload(s, s.k, 1.0f),
        w_(seeded_tensor(s.dtype, {s.n, s.k}, s.seed, kWeightStream,
                         1.0f / std::sqrt(static_cast<float>(s.k)))) {
    if (s.bias) bias_ = seeded_tensor(s.dtype, {s.n}, s.seed, kBiasStream, 0.5f);
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
  double flops(int64_t rows) const override {
    return 2.0 * rows * scenario().n * scenario().k;
  }
  double bytes(int64_t rows) const override {
    const double in = static_cast<double>(dtype_size(scenario().dtype));
    return in * (rows * scenario().k + scenario().n * scenario().k) +
           dtype_size(scenario().out_dtype) * static_cast<double>(rows * scenario().n);
  }

 private:
  HostTensor w_, bias_;
};

}  // namespace

std::unique_ptr<Workload> make_gemm_workload(const Scenario& s) {
  return std::make_unique<GemmWorkload>(s);
}

Footprint gemm_footprint(const Scenario& s) {
  Footprint p;
  const double rows = batch_max(s) * axis_max(s, "tokens", s.tokens);
  const double in = dtype_bytes(s.dtype), out = dtype_bytes(s.out_dtype);
  p.inputs = rows * static_cast<double>(s.k) * in;
  p.weights = static_cast<double>(s.n) * static_cast<double>(s.k) * in +
              (s.bias ? static_cast<double>(s.n) * in : 0);
  p.outputs = rows * static_cast<double>(s.n) * out;
  p.workspace = rows * static_cast<double>(s.n) * 4;  // fp32 accumulators / split-K partials
  // fp32 copies of A and of W (its panels), of the bias, and cpu-reference's double output.
  p.cpu_copies = (rows * static_cast<double>(s.k) + static_cast<double>(s.n) * static_cast<double>(s.k) +
                  static_cast<double>(s.n)) * 4 +
                 rows * static_cast<double>(s.n) * 8;
  return p;
}

}  // namespace nvdet
