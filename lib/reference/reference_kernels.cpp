// cpu-reference: the correctness reference for every other backend.
//
// Every product, sum, exp, log and square root is done in double; inputs are converted to double
// exactly. The result is rounded once to float and then to the output dtype (a double rounding
// that can differ from a direct rounding by one unit in rare ties; comparisons against this
// backend always use a tolerance). Reduction order is irrelevant at this precision for the
// tolerances used, and is simply sequential.
#include <cmath>

#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"
#include "lib/reference/gemm_panels.h"

namespace nvdet::cpu {

HostTensor reference_gemm(const GemmArgs& args, RunNotes* notes) {
  if (args.is_fp8()) return reference_fp8_gemm(args, notes);
  const PackedGemm g = pack_gemm(args);
  std::vector<double> out(static_cast<size_t>(g.m * g.n));
  parallel_for(g.num_panels(), g.panel_work(), [&](int64_t p) {
    double acc[kGemmRows][kGemmLanes];
    for (int64_t rb = 0; rb < g.num_row_blocks(); ++rb) {
      gemm_segment<double>(g, rb * kGemmRows, p, 0, g.k, acc);
      for (int r = 0; r < kGemmRows && rb * kGemmRows + r < g.m; ++r) {
        for (int l = 0; l < kGemmLanes && p * kGemmLanes + l < g.n; ++l) {
          const int64_t col = p * kGemmLanes + l;
          const double b = g.bias.empty() ? 0.0 : static_cast<double>(g.bias[col]);
          out[(rb * kGemmRows + r) * g.n + col] = acc[r][l] + b;
        }
      }
    }
  });
  if (notes) (*notes)["accumulation"] = std::string("double");
  return make_output(args.out_dtype, {g.m, g.n}, std::span<const double>(out));
}

HostTensor reference_rmsnorm(const RmsNormArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), d = args.x->dim(1);
  const std::vector<float> w = to_float(*args.weight);
  std::vector<double> out(static_cast<size_t>(rows * d));
  parallel_for(rows, 4 * d, [&](int64_t r) {
    std::vector<float> x(static_cast<size_t>(d));
    to_float(*args.x, r * d, d, x.data());
    double ss = 0.0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + static_cast<double>(args.eps));
    for (int64_t j = 0; j < d; ++j) out[r * d + j] = static_cast<double>(x[j]) * inv * w[j];
  });
  if (notes) (*notes)["accumulation"] = std::string("double");
  return make_output(args.out_dtype, {rows, d}, std::span<const double>(out));
}

HostTensor reference_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), v = args.x->dim(1);
  std::vector<double> out(static_cast<size_t>(rows * v));
  parallel_for(rows, 4 * v, [&](int64_t r) {
    std::vector<float> x(static_cast<size_t>(v));
    to_float(*args.x, r * v, v, x.data());
    double mx = -INFINITY;
    for (float e : x) mx = std::max(mx, static_cast<double>(e));
    double sum = 0.0;
    for (float e : x) sum += std::exp(static_cast<double>(e) - mx);
    const double lse = std::log(sum);
    for (int64_t j = 0; j < v; ++j) out[r * v + j] = (static_cast<double>(x[j]) - mx) - lse;
  });
  if (notes) (*notes)["accumulation"] = std::string("double");
  return make_output(args.out_dtype, {rows, v}, std::span<const double>(out));
}

namespace {

// softmax(q · K[0, len)^T * scale) · V[0, len) in double, written to out[0, head_dim).
void attend_double(const float* q, const SequenceKv& kv, int64_t len, double scale, double* out) {
  const int32_t d = kv.head_dim;
  std::vector<double> s(static_cast<size_t>(len));
  double mx = -INFINITY;
  for (int64_t t = 0; t < len; ++t) {
    const float* k = kv.k_row(t);
    double dot = 0.0;
    for (int32_t j = 0; j < d; ++j) dot += static_cast<double>(q[j]) * k[j];
    s[t] = dot * scale;
    mx = std::max(mx, s[t]);
  }
  double l = 0.0;
  std::fill(out, out + d, 0.0);
  for (int64_t t = 0; t < len; ++t) {
    const double p = std::exp(s[t] - mx);
    l += p;
    const float* v = kv.v_row(t);
    for (int32_t j = 0; j < d; ++j) out[j] += p * v[j];
  }
  for (int32_t j = 0; j < d; ++j) out[j] /= l;
}

}  // namespace

HostTensor reference_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes) {
  const int64_t seqs = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const std::vector<float> q = to_float(*args.q);
  std::vector<double> out(static_cast<size_t>(seqs * H * D));
  for_each_decode_row(args, [&](int64_t, const SequenceKv& kv, int64_t row) {
    attend_double(q.data() + row * D, kv, kv.len, args.scale, out.data() + row * D);
  });
  if (notes) (*notes)["accumulation"] = std::string("double");
  return make_output(args.out_dtype, {seqs, H, D}, std::span<const double>(out));
}

HostTensor reference_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes) {
  const int64_t tokens = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const std::vector<float> q = to_float(*args.q);
  std::vector<double> out(static_cast<size_t>(tokens * H * D));
  for_each_prefill_row(args, [&](int64_t, const SequenceKv& kv, int64_t, int64_t pos, int64_t row) {
    attend_double(q.data() + row * D, kv, pos + 1, args.scale, out.data() + row * D);  // [0, pos]
  });
  if (notes) (*notes)["accumulation"] = std::string("double");
  return make_output(args.out_dtype, {tokens, H, D}, std::span<const double>(out));
}

}  // namespace nvdet::cpu
