// cpu-invariant RMSNorm and log-softmax.
//
// Reduction order of one row of length d (fixed by d alone):
//   16 lanes; lane l sums elements l, l+16, l+32, ... sequentially from zero;
//   the 16 lane sums are combined by the fixed tree of tree_sum (w = 8, 4, 2, 1).
// RMSNorm:     ss = that sum of x*x; inv = 1 / sqrt(ss / d + eps); out = (x * inv) * weight.
// log-softmax: mx = max of the row (exact in any order); sum = that sum of exp(x - mx);
//              out = (x - mx) - log(sum).
// Invariance: each row is reduced on its own by one thread with a plan that depends only on d,
// so a row's bits do not depend on the number of rows or on its position (a decode step's row
// and a scoring pass's row of the same token are the same bits: sampler/trainer parity).
#include <cmath>

#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet::cpu {
namespace {

inline constexpr int kNormLanes = 16;

// The fixed 16-lane plan applied to f(x[j]).
template <class F>
float lane_sum(const float* x, int64_t d, F f) {
  float lanes[kNormLanes] = {};
  int64_t j = 0;
  for (; j + kNormLanes <= d; j += kNormLanes) {
    for (int l = 0; l < kNormLanes; ++l) lanes[l] += f(x[j + l]);
  }
  for (int l = 0; j + l < d; ++l) lanes[l] += f(x[j + l]);
  return tree_sum(lanes, kNormLanes);
}

}  // namespace

HostTensor invariant_rmsnorm(const RmsNormArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), d = args.x->dim(1);
  const std::vector<float> w = to_float(*args.weight);
  std::vector<float> out(static_cast<size_t>(rows * d));
  parallel_for(rows, 4 * d, [&](int64_t r) {
    float* x = out.data() + r * d;  // converted in place, then overwritten by the result
    to_float(*args.x, r * d, d, x);
    const float ss = lane_sum(x, d, [](float v) { return v * v; });
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + args.eps);
    for (int64_t j = 0; j < d; ++j) x[j] = (x[j] * inv) * w[j];
  });
  if (notes) {
    (*notes)["row_splits"] = std::string("1");
    (*notes)["lanes"] = std::to_string(kNormLanes);
  }
  return make_output(args.out_dtype, {rows, d}, std::span<const float>(out));
}

HostTensor invariant_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), v = args.x->dim(1);
  std::vector<float> out(static_cast<size_t>(rows * v));
  parallel_for(rows, 4 * v, [&](int64_t r) {
    float* x = out.data() + r * v;
    to_float(*args.x, r * v, v, x);
    float mx = -INFINITY;
    for (int64_t j = 0; j < v; ++j) mx = std::max(mx, x[j]);
    const float sum = lane_sum(x, v, [mx](float e) { return std::exp(e - mx); });
    const float lse = std::log(sum);
    for (int64_t j = 0; j < v; ++j) x[j] = (x[j] - mx) - lse;
  });
  if (notes) {
    (*notes)["row_splits"] = std::string("1");
    (*notes)["lanes"] = std::to_string(kNormLanes);
  }
  return make_output(args.out_dtype, {rows, v}, std::span<const float>(out));
}

}  // namespace nvdet::cpu
