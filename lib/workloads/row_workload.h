#pragma once
// The shared shape of the row ops (gemm, rmsnorm, log_softmax): a batch is a stack of requests'
// rows; one op call computes all of them; each probed request's output is its rows of the result.
#include <functional>

#include "lib/workloads/row_source.h"
#include "lib/workloads/workload.h"

namespace nvdet {

class RowWorkload : public Workload {
 public:
  RowWorkload(const Scenario& s, int64_t input_width, float input_stddev);

  std::vector<std::string> coord_names() const override { return {"token", "col"}; }
  std::vector<RequestOutput> run(Backend& backend, const Context& context,
                                 RunNotes* notes) override;
  std::unique_ptr<BenchCase> bench_case(const Context& context) override;

 protected:
  // The op's arguments for a batch `x` of activations.
  virtual OpArgs make_args(const HostTensor& x) const = 0;
  // The op on the batch: one backend call of make_args(x), unless the op shards it (gemm's tp).
  virtual HostTensor compute(Backend& backend, const HostTensor& x, const Context& /*context*/,
                             RunNotes* notes) {
    return backend.run(make_args(x), notes);
  }
  // Floating-point operations and the fewest bytes moved for `rows` rows.
  virtual double flops(int64_t rows) const = 0;
  virtual double bytes(int64_t rows) const = 0;

  const Scenario& scenario() const { return scenario_; }
  int64_t tokens(const Context& c) const { return c.integer(Axis::kTokens); }

 private:
  Scenario scenario_;
  RowSource source_;
  HostTensor cached_x_;  // the last context's batch
  std::string cached_id_;
};

}  // namespace nvdet
