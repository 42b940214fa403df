// Operand staging for the invariant GEMM's wgmma path: rows whose start or length TMA cannot
// address (K or a row stride not a multiple of 8 16-bit elements, or a base not 16-byte aligned)
// are copied into a workspace with a row stride of K rounded up to 8, the tail zeroed.
//
// Invariance argument: a copy of the bits, no arithmetic; the GEMM then reads the same values
// it would read in place (TMA zero-fills past K either way), so staging changes no element's
// reduction order. Which rows are staged together (blocks of A) never changes a row's values.
#include "kernels/gemm_invariant_device.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    stage_rows_kernel(const uint16_t* src, long long src_ld, int rows, int k, uint16_t* dst,
                      int dst_ld) {
  const long long total = static_cast<long long>(rows) * dst_ld;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * kThreads) {
    const long long r = i / dst_ld;
    const int c = static_cast<int>(i - r * dst_ld);
    dst[i] = c < k ? src[r * src_ld + c] : uint16_t{0};
  }
}

}  // namespace

cudaError_t launch_stage_rows(const void* src, long long src_ld, int rows, int k, void* dst,
                              int dst_ld, cudaStream_t stream) {
  const long long total = static_cast<long long>(rows) * dst_ld;
  if (total == 0) return cudaSuccess;
  const long long blocks = (total + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
  stage_rows_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint16_t*>(src), src_ld,
                                                   rows, k, static_cast<uint16_t*>(dst), dst_ld);
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
