// Second pass of the split-chunks schedule, and the vendor path's output conversion.
//
// Invariance argument (chunk reduce): each output element is owned by one thread, which sums the
// element's chunk partials in chunk order from 0 with chunk_accumulate() and finishes it with
// finish_element() — the same fp32 operations the in-CTA schedule performs in registers. The
// grid shape only decides which thread owns an element.
//
// Reduction order: out = round(((0 + p_0) + p_1) + ... + p_{C-1} + bias).
#include "kernels/gemm_invariant_device.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) chunk_reduce_kernel(const GemmKernelParams p) {
  const long long total = static_cast<long long>(p.m) * p.n;
  const long long idx = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (idx >= total) return;
  float acc = 0.0f;
  for (int c = 0; c < p.chunks; ++c) acc = chunk_accumulate(acc, p.ws[c * total + idx]);
  finish_element(p, static_cast<int>(idx / p.n), static_cast<int>(idx % p.n), acc);
}

__global__ void __launch_bounds__(kThreads)
    convert_output_kernel(const float* src, const void* bias, int bias_type, void* out,
                          int out_type, int m, int n) {
  const long long total = static_cast<long long>(m) * n;
  const long long idx = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (idx >= total) return;
  float v = src[idx];
  if (bias) v = __fadd_rn(v, load_as_float(bias, idx % n, bias_type));
  store_from_float(out, idx, v, out_type);
}

}  // namespace

cudaError_t launch_chunk_reduce(const GemmKernelParams& p, cudaStream_t stream) {
  const long long total = static_cast<long long>(p.m) * p.n;
  if (total == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  chunk_reduce_kernel<<<blocks, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t gemm_convert_output(const float* src, const void* bias, GemmType bias_type, void* out,
                                GemmType out_type, int m, int n, cudaStream_t stream) {
  const long long total = static_cast<long long>(m) * n;
  if (total == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  convert_output_kernel<<<blocks, kThreads, 0, stream>>>(src, bias, static_cast<int>(bias_type),
                                                         out, static_cast<int>(out_type), m, n);
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
