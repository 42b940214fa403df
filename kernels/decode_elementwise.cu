// The decoder's elementwise steps on the device (lib/model/device_decoder.cpp runs them).
//
// Invariance argument: every output element is a function of same-row input elements only
// (and, for RoPE, of that row's cos/sin table row); no value crosses rows, so a row's bits do
// not depend on the batch. There is no reduction except argmax, whose result (the lowest index
// among the largest non-NaN values) does not depend on the order in which candidates are
// compared: the tree below picks it for any order.
//
// Bitwise agreement with the host (lib/model/host_ops.cpp): each step is written as the host's
// sequence of IEEE operations, each with an explicit rounding intrinsic (__fmul_rn, __fadd_rn,
// __fsub_rn, __fdiv_rn), so that --fmad=true never contracts a product and a sum into one FMA;
// exp is portable_math.cuh's, built from those same operations, which the host's SwiGLU also
// uses; loads and stores of bf16 / fp16 repeat lib/core/dtype.cpp's bit manipulations (round to
// nearest even; a NaN input keeps its payload as the host keeps it). RoPE's cos and sin are not
// computed here at all: the host computes them in double and rounds them to float, as its own
// RoPE does, and uploads the table.
#include <cstdint>

#include "kernels/decode_elementwise.cuh"
#include "kernels/fused_moe_combine.cuh"
#include "kernels/portable_math.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_elem(const void* base, ElemType t, int64_t i) {
  switch (t) {
    case ElemType::kFP32: return static_cast<const float*>(base)[i];
    case ElemType::kBF16:
      return __uint_as_float(uint32_t{static_cast<const uint16_t*>(base)[i]} << 16);
    case ElemType::kFP16: {
      const uint16_t h = static_cast<const uint16_t*>(base)[i];
      const uint32_t sign = uint32_t{h & 0x8000u} << 16;
      const uint32_t e = (h >> 10) & 0x1fu;
      uint32_t mant = h & 0x3ffu;
      uint32_t out;
      if (e == 0) {
        if (mant == 0) {
          out = sign;
        } else {  // subnormal half: normalise
          int s = -1;
          do {
            ++s;
            mant <<= 1;
          } while ((mant & 0x400u) == 0);
          out = sign | (uint32_t(127 - 15 - s) << 23) | ((mant & 0x3ffu) << 13);
        }
      } else if (e == 0x1f) {
        out = sign | 0x7f800000u | (mant << 13);
      } else {
        out = sign | ((e + 127 - 15) << 23) | (mant << 13);
      }
      return __uint_as_float(out);
    }
  }
  return 0.0f;
}

__device__ __forceinline__ void store_elem(void* base, ElemType t, int64_t i, float v) {
  switch (t) {
    case ElemType::kFP32: static_cast<float*>(base)[i] = v; return;
    case ElemType::kBF16: {
      uint32_t u = __float_as_uint(v);
      uint16_t bits;
      if ((u & 0x7fffffffu) > 0x7f800000u) {
        bits = static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
      } else {
        u += 0x7fffu + ((u >> 16) & 1u);
        bits = static_cast<uint16_t>(u >> 16);
      }
      static_cast<uint16_t*>(base)[i] = bits;
      return;
    }
    case ElemType::kFP16: {
      const uint32_t u = __float_as_uint(v);
      const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
      const uint32_t abs = u & 0x7fffffffu;
      uint16_t bits;
      if (abs > 0x7f800000u) {
        bits = sign | 0x7e00u;  // NaN
      } else if (abs >= 0x477ff000u) {
        bits = sign | 0x7c00u;  // rounds to >= 65520: inf
      } else if (abs < 0x38800000u) {
        // Subnormal half: abs * 2^24 is exact; rintf rounds it to nearest even.
        bits = sign | static_cast<uint16_t>(rintf(__fmul_rn(__uint_as_float(abs), 16777216.0f)));
      } else {
        uint32_t rebased = abs - (uint32_t(127 - 15) << 23);
        rebased += 0xfffu + ((rebased >> 13) & 1u);
        bits = sign | static_cast<uint16_t>(rebased >> 13);
      }
      static_cast<uint16_t*>(base)[i] = bits;
      return;
    }
  }
}

// v rounded to t and back (identity for fp32): store_elem's rounding, through a register.
__device__ __forceinline__ float round_elem(ElemType t, float v) {
  if (t == ElemType::kFP32) return v;
  uint16_t bits[1];
  store_elem(bits, t, 0, v);
  return load_elem(bits, t, 0);
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

// Grid-wide launches take at most 2^31 - 1 blocks; the decoder's tensors are far below.
bool launchable(int64_t n) { return n >= 0 && (n + kThreads - 1) / kThreads <= 0x7fffffff; }

template <class T>
__global__ void gather_rows_kernel(const T* table, const int32_t* rows, int64_t count,
                                   int64_t row_words, T* out) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= count * row_words) return;
  const int64_t r = i / row_words, c = i % row_words;
  out[i] = table[int64_t{rows[r]} * row_words + c];
}

__global__ void rope_kernel(void* qkv, ElemType t, int64_t rows, int64_t width,
                            int32_t head_dim, int32_t rotated_heads, const float* cos_table,
                            const float* sin_table) {
  const int32_t half = head_dim / 2;
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * rotated_heads * half) return;
  const int64_t r = i / (int64_t{rotated_heads} * half);
  const int32_t h = static_cast<int32_t>((i / half) % rotated_heads);
  const int32_t e = static_cast<int32_t>(i % half);
  const int64_t head = r * width + int64_t{h} * head_dim;
  const float c = cos_table[r * half + e], s = sin_table[r * half + e];
  const float x0 = load_elem(qkv, t, head + e);
  const float x1 = load_elem(qkv, t, head + e + half);
  store_elem(qkv, t, head + e, __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
  store_elem(qkv, t, head + e + half, __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s)));
}

template <class T>
__global__ void kv_write_kernel(const T* qkv, int64_t rows, int64_t width, int64_t q_dim,
                                int64_t kv_dim, const int64_t* slots, T* k, T* v) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * kv_dim) return;
  const int64_t r = i / kv_dim, c = i % kv_dim;
  const T* src = qkv + r * width + q_dim;
  k[slots[r] * kv_dim + c] = src[c];
  v[slots[r] * kv_dim + c] = src[kv_dim + c];
}

__global__ void residual_add_kernel(void* x, const void* y, ElemType t, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  store_elem(x, t, i, __fadd_rn(load_elem(x, t, i), load_elem(y, t, i)));
}

__global__ void swiglu_kernel(const void* gate_up, void* out, ElemType t, int64_t rows,
                              int64_t inter) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * inter) return;
  const int64_t r = i / inter, j = i % inter;
  const float g = load_elem(gate_up, t, r * 2 * inter + j);
  const float u = load_elem(gate_up, t, r * 2 * inter + inter + j);
  const float silu = portable::div(g, portable::add(1.0f, portable::exp(-g)));
  store_elem(out, t, i, portable::mul(silu, u));
}

__global__ void moe_combine_kernel(const void* y, const int32_t* slot, const float* weight,
                                   ElemType t, ElemType out_type, int64_t rows, int64_t k,
                                   int64_t hidden, void* out, const void* shared,
                                   const float* shared_gate) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * hidden) return;
  const int64_t r = i / hidden, c = i % hidden;
  float acc = 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t at = r * k + j;
    const float v = load_elem(y, t, static_cast<int64_t>(slot[at]) * hidden + c);
    acc = portable::add(acc, portable::mul(weight[at], v));
  }
  if (shared) {
    const float s = portable::div(1.0f, portable::add(1.0f, portable::exp(-shared_gate[r])));
    acc = portable::add(acc, portable::mul(s, load_elem(shared, t, i)));
  }
  store_elem(out, out_type, i, acc);
}

// A vendor fused-MoE plan's combine (kernels/fused_moe_combine.cuh): for element (r, c), the k
// products weight * y (fp32, y the down GEMM's fp32 output) each rounded to act, in slot order,
// added by the plan's rule, rounded once to act, stored as out_type.
__global__ void fused_moe_combine_kernel(const float* y, const int32_t* slot, const float* weight,
                                         ElemType act, ElemType out_type, FusedCombineRule rule,
                                         int64_t rows, int k, int64_t hidden, void* out) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * hidden) return;
  const int64_t r = i / hidden, c = i % hidden;
  float products[64];
  for (int j = 0; j < k; ++j) {
    const int64_t at = r * k + j;
    products[j] =
        round_elem(act, portable::mul(weight[at], y[static_cast<int64_t>(slot[at]) * hidden + c]));
  }
  store_elem(out, out_type, i, round_elem(act, fused_moe_combine_sum(rule, products, k)));
}

// Split-K parts [parts][elems] (fp32), padded with zeros to `padded` and added by the tree of
// lib/backend/split_k_gemm.h ((P0 + P2) + (P1 + P3) for four), rounded once to out_type.
__global__ void sum_k_parts_kernel(const float* parts, int count, int padded, int64_t elems,
                                   int64_t stride, ElemType out_type, void* out) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= elems) return;
  float v[8];
  for (int s = 0; s < padded; ++s) v[s] = s < count ? parts[s * stride + i] : 0.0f;
  for (int w = padded / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) v[j] = portable::add(v[j], v[j + w]);
  }
  store_elem(out, out_type, i, v[0]);
}

__global__ void copy_columns16_kernel(const uint16_t* src, int64_t src_ld, int64_t rows,
                                      int64_t cols, uint16_t* dst) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * cols) return;
  dst[i] = src[(i / cols) * src_ld + i % cols];
}

// A candidate of argmax: index -1 is "none yet".
struct Best {
  float value;
  int32_t index;
};

__device__ __forceinline__ Best better(Best a, Best b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

constexpr int kArgmaxThreads = 1024;

__global__ void argmax_kernel(const float* logits, int64_t cols, int32_t* out) {
  const float* x = logits + blockIdx.x * cols;
  Best b{0.0f, -1};
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
    const float v = x[i];
    if (v != v) continue;  // NaN never wins
    b = better(b, Best{v, static_cast<int32_t>(i)});
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const Best o{__shfl_xor_sync(0xffffffffu, b.value, offset),
                 __shfl_xor_sync(0xffffffffu, b.index, offset)};
    b = better(b, o);
  }
  __shared__ Best warp_best[kArgmaxThreads / 32];
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = b;
  __syncthreads();
  if (threadIdx.x == 0) {
    Best r{0.0f, -1};
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) r = better(r, warp_best[w]);
    out[blockIdx.x] = r.index < 0 ? 0 : r.index;
  }
}

}  // namespace

cudaError_t launch_gather_rows(const void* table, const int32_t* rows, int64_t count,
                               int64_t row_bytes, void* out, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (row_bytes % 4 == 0) {
    const int64_t words = row_bytes / 4;
    if (!launchable(count * words)) return cudaErrorInvalidValue;
    gather_rows_kernel<<<blocks_for(count * words), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(table), rows, count, words, static_cast<uint32_t*>(out));
  } else {
    const int64_t words = row_bytes / 2;
    if (row_bytes % 2 != 0 || !launchable(count * words)) return cudaErrorInvalidValue;
    gather_rows_kernel<<<blocks_for(count * words), kThreads, 0, stream>>>(
        static_cast<const uint16_t*>(table), rows, count, words, static_cast<uint16_t*>(out));
  }
  return cudaGetLastError();
}

cudaError_t launch_rope(ElemType t, void* qkv, int64_t rows, int64_t width, int32_t head_dim,
                        int32_t rotated_heads, const float* cos, const float* sin,
                        cudaStream_t stream) {
  const int64_t n = rows * rotated_heads * (head_dim / 2);
  if (n == 0) return cudaSuccess;
  if (!launchable(n)) return cudaErrorInvalidValue;
  rope_kernel<<<blocks_for(n), kThreads, 0, stream>>>(qkv, t, rows, width, head_dim,
                                                      rotated_heads, cos, sin);
  return cudaGetLastError();
}

cudaError_t launch_kv_write(const void* qkv, int64_t rows, int64_t width, int64_t q_dim,
                            int64_t kv_dim, int64_t elem_bytes, const int64_t* slots, void* k,
                            void* v, cudaStream_t stream) {
  const int64_t n = rows * kv_dim;
  if (n == 0) return cudaSuccess;
  if (!launchable(n)) return cudaErrorInvalidValue;
  if (elem_bytes == 4) {
    kv_write_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(qkv), rows, width, q_dim, kv_dim, slots,
        static_cast<uint32_t*>(k), static_cast<uint32_t*>(v));
  } else if (elem_bytes == 2) {
    kv_write_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const uint16_t*>(qkv), rows, width, q_dim, kv_dim, slots,
        static_cast<uint16_t*>(k), static_cast<uint16_t*>(v));
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_residual_add(ElemType t, void* x, const void* y, int64_t n,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!launchable(n)) return cudaErrorInvalidValue;
  residual_add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, t, n);
  return cudaGetLastError();
}

cudaError_t launch_swiglu(ElemType t, const void* gate_up, void* out, int64_t rows,
                          int64_t inter, cudaStream_t stream) {
  const int64_t n = rows * inter;
  if (n == 0) return cudaSuccess;
  if (!launchable(n)) return cudaErrorInvalidValue;
  swiglu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate_up, out, t, rows, inter);
  return cudaGetLastError();
}

namespace {

cudaError_t launch_combine(ElemType y_type, ElemType out_type, const void* y, const int32_t* slot,
                           const float* weight, int64_t rows, int64_t k, int64_t hidden, void* out,
                           cudaStream_t stream, const void* shared, const float* shared_gate) {
  const int64_t n = rows * hidden;
  if (n == 0) return cudaSuccess;
  if (!launchable(n) || k < 1) return cudaErrorInvalidValue;
  moe_combine_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      y, slot, weight, y_type, out_type, rows, k, hidden, out, shared, shared_gate);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_moe_combine(ElemType t, const void* y, const int32_t* slot, const float* weight,
                               int64_t rows, int64_t k, int64_t hidden, void* out,
                               cudaStream_t stream, const void* shared, const float* shared_gate) {
  return launch_combine(t, t, y, slot, weight, rows, k, hidden, out, stream, shared, shared_gate);
}

cudaError_t launch_moe_combine_typed(ElemType y_type, ElemType out_type, const void* y,
                                     const int32_t* slot, const float* weight, int64_t rows,
                                     int64_t k, int64_t hidden, void* out, cudaStream_t stream) {
  return launch_combine(y_type, out_type, y, slot, weight, rows, k, hidden, out, stream, nullptr,
                        nullptr);
}

cudaError_t launch_argmax_rows(const float* logits, int64_t rows, int64_t cols, int32_t* out,
                               cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows > 0x7fffffff || cols > 0x7fffffff) return cudaErrorInvalidValue;
  argmax_kernel<<<static_cast<unsigned>(rows), kArgmaxThreads, 0, stream>>>(logits, cols, out);
  return cudaGetLastError();
}

cudaError_t launch_fused_moe_combine(ElemType act, ElemType out_type, FusedCombineRule rule,
                                     const float* y, const int32_t* slot, const float* weight,
                                     int64_t rows, int64_t k, int64_t hidden, void* out,
                                     cudaStream_t stream) {
  const int64_t n = rows * hidden;
  if (n == 0) return cudaSuccess;
  if (!launchable(n) || k < 1 || k > 64) return cudaErrorInvalidValue;
  fused_moe_combine_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      y, slot, weight, act, out_type, rule, rows, static_cast<int>(k), hidden, out);
  return cudaGetLastError();
}

cudaError_t launch_sum_k_parts(const float* parts, int count, int64_t elems, int64_t stride,
                               ElemType out_type, void* out, cudaStream_t stream) {
  int padded = 1;
  while (padded < count) padded *= 2;
  if (elems == 0) return cudaSuccess;
  if (!launchable(elems) || count < 1 || padded > 8 || stride < elems) return cudaErrorInvalidValue;
  sum_k_parts_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(parts, count, padded, elems,
                                                                 stride, out_type, out);
  return cudaGetLastError();
}

cudaError_t launch_copy_columns16(const void* src, int64_t src_ld, int64_t rows, int64_t cols,
                                  void* dst, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  if (!launchable(n) || src_ld < cols) return cudaErrorInvalidValue;
  copy_columns16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      static_cast<const uint16_t*>(src), src_ld, rows, cols, static_cast<uint16_t*>(dst));
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
