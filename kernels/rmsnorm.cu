// RMSNorm, invariant and vendor-style.
//
// Invariance argument (launch_rmsnorm_rows with rmsnorm_invariant_block_threads(d)): one block
// per row and a block size that is a function of (d, dtype) only. A row's result depends on its
// own elements, the weight and the block size, never on the number of rows or on the other rows,
// so every row gets the same bits whatever the batch it sits in.
//
// Reduction order of sum(x^2) for one row, block size B, vector width N (8 for 16-bit types,
// 4 for fp32, 1 when d is not a multiple of it):
//  1. thread t visits vectors t, t+B, t+2B, ... in order and, inside each vector, elements in
//     order, accumulating acc = fma(x, x, acc) from acc = 0;
//  2. each warp: xor butterfly with offsets 16, 8, 4, 2, 1;
//  3. the warp totals are added in warp order 0..B/32-1 (fixed_order_reduce.cuh).
// Then rstd = 1 / sqrt(sum / d + eps) (IEEE division and square root) and
// out = round(x * rstd * w), both products rounded in that order.
//
// Vendor-style split rows (launch_rmsnorm_split_rows), as serving stacks' RMSNorm did for small
// token counts: each row is cut into S parts of ceil(d/S) (rounded up to whole vectors); block
// (row, part) reduces its part as above into workspace[row * S + part]; a second kernel adds the
// S partial sums in part order and writes the part. The order of additions changes with S (and
// the block size with the batch), so a row's bits depend on the batch: that is what it shows.
#include <type_traits>

#include "kernels/fixed_order_reduce.cuh"
#include "kernels/rmsnorm.cuh"
#include "kernels/row_launch.cuh"
#include "kernels/row_slice.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kChunk = 4;  // vectors per thread loaded together

template <class T, int kN>
__device__ __forceinline__ float slice_sum_squares(const T* row, int64_t lo, int64_t hi,
                                                   SliceCache<T, kN, kChunk>& cache) {
  float acc = 0.0f;
  for_each_owned_vector<T, kN, kChunk>(row, lo, hi, cache, [&](const float (&f)[kN], int64_t) {
#pragma unroll
    for (int e = 0; e < kN; ++e) acc = fmaf(f[e], f[e], acc);
  });
  return acc;
}

__device__ __forceinline__ float rms_scale(float sum_squares, int64_t d, float eps) {
  return 1.0f / sqrtf(__fadd_rn(sum_squares / static_cast<float>(d), eps));
}

template <class T, class TO, int kN>
__device__ __forceinline__ void write_slice(const T* row, const T* weight, TO* out_row,
                                            int64_t lo, int64_t hi, float rstd,
                                            SliceCache<T, kN, kChunk>& cache, bool cached) {
  revisit_owned_vectors<T, kN, kChunk>(row, lo, hi, cache, cached,
                                       [&](const float (&f)[kN], int64_t i) {
                                         float w[kN];
                                         widen(load_packed<T, kN>(weight + i * kN), w);
                                         float y[kN];
#pragma unroll
                                         for (int e = 0; e < kN; ++e)
                                           y[e] = __fmul_rn(__fmul_rn(f[e], rstd), w[e]);
                                         store_packed<TO, kN>(out_row + i * kN, y);
                                       });
}

template <class T, class TO, int kN>
__global__ void __launch_bounds__(1024)
    rmsnorm_rows_kernel(const T* __restrict__ x, const T* __restrict__ weight, TO* __restrict__ out,
                        int64_t d, float eps) {
  __shared__ float scratch[32];
  const int64_t nvec = d / kN;
  const T* row = x + blockIdx.x * d;
  SliceCache<T, kN, kChunk> cache;
  const float ss = block_sum_fixed(slice_sum_squares<T, kN>(row, 0, nvec, cache), scratch);
  write_slice<T, TO, kN>(row, weight, out + blockIdx.x * d, 0, nvec, rms_scale(ss, d, eps), cache,
                         slice_fits_cache<kChunk>(0, nvec));
}

template <class T, int kN>
__global__ void __launch_bounds__(1024)
    rmsnorm_partial_kernel(const T* __restrict__ x, int64_t d, int splits, int64_t part_vecs,
                           float* __restrict__ partial) {
  __shared__ float scratch[32];
  const int64_t row_index = blockIdx.x / splits;
  const int part = blockIdx.x % splits;
  const int64_t nvec = d / kN;
  const int64_t lo = min(nvec, part * part_vecs), hi = min(nvec, lo + part_vecs);
  SliceCache<T, kN, kChunk> cache;
  const float ss = block_sum_fixed(slice_sum_squares<T, kN>(x + row_index * d, lo, hi, cache), scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = ss;
}

template <class T, class TO, int kN>
__global__ void __launch_bounds__(1024)
    rmsnorm_apply_kernel(const T* __restrict__ x, const T* __restrict__ weight,
                         TO* __restrict__ out, int64_t d, float eps, int splits, int64_t part_vecs,
                         const float* __restrict__ partial) {
  const int64_t row_index = blockIdx.x / splits;
  const int part = blockIdx.x % splits;
  float ss = partial[row_index * splits];
  for (int s = 1; s < splits; ++s) ss = __fadd_rn(ss, partial[row_index * splits + s]);
  const int64_t nvec = d / kN;
  const int64_t lo = min(nvec, part * part_vecs), hi = min(nvec, lo + part_vecs);
  SliceCache<T, kN, kChunk> cache;
  write_slice<T, TO, kN>(x + row_index * d, weight, out + row_index * d, lo, hi,
                         rms_scale(ss, d, eps), cache, false);
}

}  // namespace

int rmsnorm_invariant_block_threads(int64_t d, ElemType dtype) {
  return row_block_threads(d, dtype, kChunk, 1024);
}

cudaError_t launch_rmsnorm_rows(ElemType dtype, ElemType out_dtype, const void* x,
                                const void* weight, void* out, int64_t rows, int64_t d, float eps, int block_threads,
                                cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  if (!valid_row_block(block_threads) || rows > 0x7fffffff) return cudaErrorInvalidValue;
  return with_in_out_types(dtype, out_dtype, [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using TO = typename decltype(out_tag)::type;
    return with_row_vector_width<T>(d, [&](auto n_const) {
      constexpr int kN = decltype(n_const)::value;
      rmsnorm_rows_kernel<T, TO, kN><<<static_cast<unsigned>(rows), block_threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<TO*>(out), d, eps);
      return cudaGetLastError();
    });
  });
}

size_t rmsnorm_split_workspace_bytes(int64_t rows, int row_splits) {
  return static_cast<size_t>(rows) * static_cast<size_t>(row_splits) * sizeof(float);
}

cudaError_t launch_rmsnorm_split_rows(ElemType dtype, ElemType out_dtype, const void* x,
                                      const void* weight, void* out, int64_t rows, int64_t d,
                                      float eps, int row_splits, int block_threads,
                                      float* workspace, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  if (!valid_split_rows(rows, row_splits, block_threads)) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(rows * row_splits);
  return with_in_out_types(dtype, out_dtype, [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using TO = typename decltype(out_tag)::type;
    const auto* xt = static_cast<const T*>(x);
    return with_row_vector_width<T>(d, [&](auto n_const) {
      constexpr int kN = decltype(n_const)::value;
      const int64_t nvec = d / kN;
      const int64_t part_vecs = (nvec + row_splits - 1) / row_splits;
      rmsnorm_partial_kernel<T, kN>
          <<<blocks, block_threads, 0, stream>>>(xt, d, row_splits, part_vecs, workspace);
      rmsnorm_apply_kernel<T, TO, kN><<<blocks, block_threads, 0, stream>>>(
          xt, static_cast<const T*>(weight), static_cast<TO*>(out), d, eps, row_splits, part_vecs,
          workspace);
      return cudaGetLastError();
    });
  });
}

}  // namespace nvdet::kernels
