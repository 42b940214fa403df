#include "lib/workloads/row_workload.h"

namespace nvdet {

RowWorkload::RowWorkload(const Scenario& s, int64_t input_width, float input_stddev)
    : scenario_(s), source_(s.dtype, input_width, s.seed, input_stddev) {}

std::vector<RequestOutput> RowWorkload::run(Backend& backend, const Context& context,
                                            RunNotes* notes) {
  const BatchLayout layout = make_batch_layout(scenario_, context);
  const int64_t t = tokens(context);
  // Every backend and repeat of a context sees the same tensor object: GPU backends then
  // upload it once.
  if (cached_id_ != context.id) {
    cached_x_ = source_.assemble(layout, t);
    cached_id_ = context.id;
  }
  const HostTensor& x = cached_x_;
  const HostTensor out = compute(backend, x, context, notes);
  std::vector<RequestOutput> outputs;
  for (size_t p = 0; p < layout.probe_slot.size(); ++p) {
    outputs.push_back(
        {scenario_.requests[p], out.slice_rows(layout.probe_slot[p] * t, t), {}, {}, {}, {}, {}});
  }
  return outputs;
}

namespace {
struct RowBenchCase : BenchCase {
  HostTensor x;
};
}  // namespace

std::unique_ptr<BenchCase> RowWorkload::bench_case(const Context& context) {
  auto bc = std::make_unique<RowBenchCase>();
  const BatchLayout layout = make_batch_layout(scenario_, context);
  const int64_t t = tokens(context);
  bc->x = source_.assemble(layout, t);
  bc->args = make_args(bc->x);
  bc->flops = flops(bc->x.dim(0));
  bc->bytes = bytes(bc->x.dim(0));
  return bc;
}

}  // namespace nvdet
