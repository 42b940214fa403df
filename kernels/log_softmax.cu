// log-softmax over rows as wide as a vocabulary (151936), invariant and vendor-style.
//
// Invariance argument (launch_log_softmax_rows with log_softmax_invariant_block_threads(v)):
// one block per row, block size a function of (v, dtype) only, so a row's bits depend on its
// own elements and never on how many rows are in the batch.
//
// Reduction order for one row, block size B, vector width N (8 for 16-bit, 4 for fp32, 1 when
// v is not a multiple of it). The max and the sum of exp(x - max) are carried together as a
// (m, s) state, so the row is read once for them and once more for the output:
//  1. thread t visits vectors t, t+B, ... in order; for each vector: m' = max(m, max of the
//     vector); s = s * exp(m - m'); then s += exp2(fma(x_e, log2 e, -m'*log2 e)) for its
//     elements in order;
//  2. per warp: xor butterfly of merges (m = max(ma, mb); s = sa*exp(ma-m) + sb*exp(mb-m),
//     symmetric bit for bit) with offsets 16..1; then warp states merged in warp order;
//  3. lse = m + log(s); out = x - lse, rounded once to the output type.
//
// Vendor-style split rows (launch_log_softmax_split_rows), as serving stacks did for small
// batches: each row is cut into S parts; block (row, part) computes its part's (m, s) as above
// into the workspace; a second kernel merges the S states in part order and writes the part.
// S and the block size come from the batch (vendor_norm_row_splits / vendor_norm_block_threads),
// so a row's bits depend on the batch.
#include <algorithm>
#include <type_traits>

#include "kernels/fixed_order_reduce.cuh"
#include "kernels/log_softmax.cuh"
#include "kernels/row_launch.cuh"
#include "kernels/row_slice.cuh"

namespace nvdet::kernels {
namespace {

// Vectors per thread loaded together (more would spill under the 64-register cap of 1024-thread
// blocks), and the largest invariant block: two 512-thread blocks fit on an SM, so a 256-row
// batch of vocabulary rows runs in one wave on 132 SMs.
constexpr int kChunk = 4;
constexpr int kMaxThreads = 512;
constexpr float kLog2e = 1.4426950408889634f;

// exp(x - m) as exp2(x*log2(e) - m*log2(e)): one FMA and one exp2 per element. ml = m*log2(e).
__device__ __forceinline__ float exp_shifted(float x, float ml) {
  return exp2f(fmaf(x, kLog2e, -ml));
}

template <class T, int kN>
__device__ __forceinline__ MaxSumExp slice_max_sum_exp(const T* row, int64_t lo, int64_t hi,
                                                       SliceCache<T, kN, kChunk>& cache,
                                                       SliceStage<T, kN> stage = {}) {
  MaxSumExp st{-INFINITY, 0.0f};
  for_each_owned_vector<T, kN, kChunk>(
      row, lo, hi, cache,
      [&](const float (&f)[kN], int64_t) {
        float vm = f[0];
#pragma unroll
        for (int e = 1; e < kN; ++e) vm = fmaxf(vm, f[e]);
        if (vm > st.m) {
          st.s = __fmul_rn(st.s, exp_diff(st.m, vm));
          st.m = vm;
        }
        if (st.m != -INFINITY) {
          const float ml = __fmul_rn(st.m, kLog2e);
#pragma unroll
          for (int e = 0; e < kN; ++e) st.s = __fadd_rn(st.s, exp_shifted(f[e], ml));
        }
      },
      stage);
  return st;
}

template <class T, class TO, int kN, bool kStreamOut = false>
__device__ __forceinline__ void write_slice(const T* row, TO* out_row, int64_t lo, int64_t hi,
                                            MaxSumExp st, SliceCache<T, kN, kChunk>& cache,
                                            bool cached, SliceStage<T, kN> stage = {}) {
  const float lse = __fadd_rn(st.m, logf(st.s));
  revisit_owned_vectors<T, kN, kChunk>(
      row, lo, hi, cache, cached,
      [&](const float (&f)[kN], int64_t i) {
        float y[kN];
#pragma unroll
        for (int e = 0; e < kN; ++e) y[e] = __fsub_rn(f[e], lse);
        if constexpr (kStreamOut) {
          store_packed_streaming<TO, kN>(out_row + i * kN, y);
        } else {
          store_packed<TO, kN>(out_row + i * kN, y);
        }
      },
      stage);
}

// One block per row. The statistics pass keeps the row's first `staged_vecs` vectors in dynamic
// shared memory and the output pass reads them from there instead of from global memory, and
// the output is stored with the evict-first hint (kStreamOut) so that it does not push the rest
// of the row out of L2 before the second pass. Neither changes a value. On the H200 this took
// the 1024 x 151936 bf16 -> fp32 case from 56% to 63% of the copy rate in nvdet bench
// (reports/h200/README.md).
template <class T, class TO, int kN, bool kStreamOut>
__global__ void __launch_bounds__(1024)
    log_softmax_rows_kernel(const T* __restrict__ x, TO* __restrict__ out, int64_t v,
                            int64_t staged_vecs) {
  __shared__ float scratch[64];
  extern __shared__ uint4 stage_storage[];
  const int64_t nvec = v / kN;
  const T* row = x + blockIdx.x * v;
  const SliceStage<T, kN> stage{reinterpret_cast<PackedIn<T, kN>*>(stage_storage), staged_vecs};
  SliceCache<T, kN, kChunk> cache;
  const MaxSumExp st =
      block_merge_fixed(slice_max_sum_exp<T, kN>(row, 0, nvec, cache, stage), scratch);
  write_slice<T, TO, kN, kStreamOut>(row, out + blockIdx.x * v, 0, nvec, st, cache,
                                     slice_fits_cache<kChunk>(0, nvec), stage);
}

template <class T, int kN>
__global__ void __launch_bounds__(1024)
    log_softmax_partial_kernel(const T* __restrict__ x, int64_t v, int splits, int64_t part_vecs,
                               float* __restrict__ partial) {
  __shared__ float scratch[64];
  const int64_t row_index = blockIdx.x / splits;
  const int part = blockIdx.x % splits;
  const int64_t nvec = v / kN;
  const int64_t lo = min(nvec, part * part_vecs), hi = min(nvec, lo + part_vecs);
  SliceCache<T, kN, kChunk> cache;
  const MaxSumExp st =
      block_merge_fixed(slice_max_sum_exp<T, kN>(x + row_index * v, lo, hi, cache), scratch);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = st.m;
    partial[2 * blockIdx.x + 1] = st.s;
  }
}

template <class T, class TO, int kN>
__global__ void __launch_bounds__(1024)
    log_softmax_apply_kernel(const T* __restrict__ x, TO* __restrict__ out, int64_t v, int splits,
                             int64_t part_vecs, const float* __restrict__ partial) {
  const int64_t row_index = blockIdx.x / splits;
  const int part = blockIdx.x % splits;
  const float* p = partial + 2 * row_index * splits;
  MaxSumExp st{p[0], p[1]};
  for (int s = 1; s < splits; ++s) st = merge_max_sum_exp(st, {p[2 * s], p[2 * s + 1]});
  const int64_t nvec = v / kN;
  const int64_t lo = min(nvec, part * part_vecs), hi = min(nvec, lo + part_vecs);
  SliceCache<T, kN, kChunk> cache;
  write_slice<T, TO, kN>(x + row_index * v, out + row_index * v, lo, hi, st, cache, false);
}

}  // namespace

int log_softmax_invariant_block_threads(int64_t v, ElemType dtype) {
  return row_block_threads(v, dtype, kChunk, kMaxThreads);
}

namespace {

// Runs f(T tag, TO tag, kernel, vector_bytes, vectors_per_row) with the rows kernel for the
// dtypes and the vector width that v allows.
template <class F>
cudaError_t with_rows_kernel(ElemType dtype, ElemType out_dtype, int64_t v, F&& f) {
  return with_in_out_types(dtype, out_dtype, [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using TO = typename decltype(out_tag)::type;
    return with_row_vector_width<T>(v, [&](auto n_const) {
      constexpr int kN = decltype(n_const)::value;
      return f(in_tag, out_tag, log_softmax_rows_kernel<T, TO, kN, true>, sizeof(PackedIn<T, kN>),
               v / kN);
    });
  });
}

int device_attribute(cudaDeviceAttr attr) {
  int device = 0, value = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) return 0;
  return value;
}

}  // namespace

size_t log_softmax_stage_bytes(ElemType dtype, ElemType out_dtype, int64_t v, int block_threads) {
  if (v <= 0 || !valid_row_block(block_threads)) return 0;
  size_t stage = 0;
  const cudaError_t status = with_rows_kernel(
      dtype, out_dtype, v, [&](auto, auto, auto kernel, size_t vector_bytes, int64_t nvec) {
        if (nvec <= static_cast<int64_t>(kChunk) * block_threads) return cudaSuccess;  // registers
        int resident = 0;
        cudaFuncAttributes attrs{};
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel,
                                                                      block_threads, 0);
        if (e == cudaSuccess) e = cudaFuncGetAttributes(&attrs, kernel);
        if (e != cudaSuccess || resident < 1) return e;
        // What an SM has for each resident block, less the runtime's reserve and the kernel's
        // static shared memory, capped by the per-block opt-in limit and the row itself.
        const size_t per_sm =
            static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
        const size_t reserved =
            static_cast<size_t>(device_attribute(cudaDevAttrReservedSharedMemoryPerBlock));
        const size_t optin =
            static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
        size_t share = per_sm / static_cast<size_t>(resident);
        share = share > reserved + attrs.sharedSizeBytes ? share - reserved - attrs.sharedSizeBytes
                                                         : 0;
        share = std::min(share, optin > attrs.sharedSizeBytes ? optin - attrs.sharedSizeBytes : 0);
        share = std::min(share, static_cast<size_t>(nvec) * vector_bytes);
        stage = share / vector_bytes * vector_bytes;
        return cudaSuccess;
      });
  return status == cudaSuccess ? stage : 0;
}

cudaError_t launch_log_softmax_rows(ElemType dtype, ElemType out_dtype, const void* x, void* out,
                                    int64_t rows, int64_t v, int block_threads,
                                    size_t stage_bytes, cudaStream_t stream) {
  if (rows <= 0 || v <= 0) return cudaSuccess;
  if (!valid_row_block(block_threads) || rows > 0x7fffffff) return cudaErrorInvalidValue;
  return with_rows_kernel(
      dtype, out_dtype, v,
      [&](auto in_tag, auto out_tag, auto kernel, size_t vector_bytes, int64_t) {
        using T = typename decltype(in_tag)::type;
        using TO = typename decltype(out_tag)::type;
        const int64_t staged_vecs = static_cast<int64_t>(stage_bytes / vector_bytes);
        const size_t smem = static_cast<size_t>(staged_vecs) * vector_bytes;
        if (smem > 0) {
          const cudaError_t e = cudaFuncSetAttribute(
              kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
          if (e != cudaSuccess) return e;
        }
        kernel<<<static_cast<unsigned>(rows), block_threads, smem, stream>>>(
            static_cast<const T*>(x), static_cast<TO*>(out), v, staged_vecs);
        return cudaGetLastError();
      });
}

size_t log_softmax_split_workspace_bytes(int64_t rows, int row_splits) {
  return static_cast<size_t>(rows) * static_cast<size_t>(row_splits) * 2 * sizeof(float);
}

cudaError_t launch_log_softmax_split_rows(ElemType dtype, ElemType out_dtype, const void* x,
                                          void* out, int64_t rows, int64_t v, int row_splits,
                                          int block_threads, float* workspace,
                                          cudaStream_t stream) {
  if (rows <= 0 || v <= 0) return cudaSuccess;
  if (!valid_split_rows(rows, row_splits, block_threads)) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(rows * row_splits);
  return with_in_out_types(dtype, out_dtype, [&](auto in_tag, auto out_tag) {
    using T = typename decltype(in_tag)::type;
    using TO = typename decltype(out_tag)::type;
    const auto* xt = static_cast<const T*>(x);
    return with_row_vector_width<T>(v, [&](auto n_const) {
      constexpr int kN = decltype(n_const)::value;
      const int64_t nvec = v / kN;
      const int64_t part_vecs = (nvec + row_splits - 1) / row_splits;
      log_softmax_partial_kernel<T, kN>
          <<<blocks, block_threads, 0, stream>>>(xt, v, row_splits, part_vecs, workspace);
      log_softmax_apply_kernel<T, TO, kN><<<blocks, block_threads, 0, stream>>>(
          xt, static_cast<TO*>(out), v, row_splits, part_vecs, workspace);
      return cudaGetLastError();
    });
  });
}

}  // namespace nvdet::kernels
