// cuda-portable kernels: the fixed reduction orders of kernels/portable_ops.cuh on CUDA cores.
//
// Invariance and portability argument: every value an output depends on is computed by the
// functions of portable_ops.cuh, called in the order that header states, from inputs converted
// exactly to fp32; only IEEE-defined fp32 operations are used (explicit _rn intrinsics, never an
// FMA, no tensor cores, nvdet's own exp/log). The order depends on the reduction length alone
// (K, the row length, the KV length and split size), never on the batch, on the grid or on which
// thread runs a step, so the bits are the same at any batch size, on any GPU, and on the CPU
// (cpu-portable runs the same calls sequentially).
//
// Thread mapping (speed only; each element still sees its own sequence of calls):
//  GEMM        64 x 64 output tile per block of 256 threads, 4 x 4 elements per thread, K staged
//              through shared memory 16 at a time; each element's accumulator runs over k in
//              increasing order from 0 (gemm_element's sequence), stopping exactly at K.
//  RMSNorm /   one warp per row: lane l computes lane_sum / lane_max over elements l, l+32, ...;
//  log-softmax the 32 partials go through shared memory and every lane runs the same tree32 on
//              its own copy (no shuffle tree whose pairing could differ).
//  attention   one block of 128 threads per (sequence, head, split) for decode and per (token,
//              head) for prefill: a tile's scores are computed by one thread per token (sequential
//              dot), its max, rescale factor and sum by every thread identically from shared
//              memory, and acc[j] by the thread that owns j; decode's split states are merged in
//              split order by a second kernel, one thread per j, and prefill's by the same block
//              as it finishes each split, with the same merge steps.
#include <cuda_runtime.h>

#include "kernels/portable.cuh"
#include "kernels/portable_ops.cuh"

namespace nvdet::kernels {
namespace {

namespace pt = nvdet::kernels::portable;

template <class T>
struct Tag {
  using type = T;
};

template <class F>
cudaError_t with_type(PortableType t, F&& f) {
  switch (t) {
    case PortableType::kFP32:
      return f(Tag<float>{});
    case PortableType::kBF16:
      return f(Tag<pt::Bf16>{});
    case PortableType::kFP16:
      return f(Tag<pt::Fp16>{});
  }
  return cudaErrorInvalidValue;
}

// ---- GEMM ---------------------------------------------------------------------------------------

constexpr int kGemmTile = 64, kGemmK = 16, kGemmThreads = 256;

template <class T, class O>
__global__ void __launch_bounds__(kGemmThreads)
    portable_gemm_kernel(const T* a, const T* w, const T* bias, O* out, int64_t m, int64_t n,
                         int64_t k) {
  __shared__ float as[kGemmK][kGemmTile + 1];
  __shared__ float ws[kGemmK][kGemmTile + 1];
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kGemmTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kGemmTile;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // element (ty + 16 i, tx + 16 j)
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }
  for (int64_t k0 = 0; k0 < k; k0 += kGemmK) {
    for (int e = threadIdx.x; e < kGemmTile * kGemmK; e += kGemmThreads) {
      const int r = e / kGemmK, kk = e % kGemmK;
      const bool kin = k0 + kk < k;
      as[kk][r] = (kin && row0 + r < m) ? pt::to_float(a[(row0 + r) * k + k0 + kk]) : 0.0f;
      ws[kk][r] = (kin && col0 + r < n) ? pt::to_float(w[(col0 + r) * k + k0 + kk]) : 0.0f;
    }
    __syncthreads();
    const int kmax = static_cast<int>(k - k0 < kGemmK ? k - k0 : kGemmK);
    for (int kk = 0; kk < kmax; ++kk) {
      float av[4], wv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) wv[j] = ws[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = pt::mul_add(acc[i][j], av[i], wv[j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t row = row0 + ty + 16 * i;
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t col = col0 + tx + 16 * j;
      if (col >= n) continue;
      const float v = bias ? pt::add(acc[i][j], pt::to_float(bias[col])) : acc[i][j];
      out[row * n + col] = pt::from_float<O>(v);
    }
  }
}

// ---- RMSNorm and log-softmax --------------------------------------------------------------------

constexpr int kRowWarps = 8;

// Every lane's copy of the 32 partials of its warp, for tree32.
__device__ __forceinline__ void gather_partials(const float* shared, float (&v)[pt::kLanes]) {
#pragma unroll
  for (int i = 0; i < pt::kLanes; ++i) v[i] = shared[i];
}

template <class T, class O>
__global__ void __launch_bounds__(kRowWarps * 32)
    portable_rmsnorm_kernel(const T* x, const T* weight, O* out, int64_t rows, int64_t d,
                            float eps) {
  __shared__ float partial[kRowWarps][pt::kLanes];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + warp;
  if (row >= rows) return;
  const T* xr = x + row * d;
  partial[warp][lane] = pt::lane_sum(xr, d, lane, pt::Square{});
  __syncwarp();
  float v[pt::kLanes];
  gather_partials(partial[warp], v);
  const float inv = pt::rms_inverse(pt::tree32_sum(v), d, eps);
  for (int64_t j = lane; j < d; j += 32) {
    out[row * d + j] =
        pt::from_float<O>(pt::rms_output(pt::to_float(xr[j]), inv, pt::to_float(weight[j])));
  }
}

template <class T, class O>
__global__ void __launch_bounds__(kRowWarps * 32)
    portable_log_softmax_kernel(const T* x, O* out, int64_t rows, int64_t len) {
  __shared__ float partial[kRowWarps][pt::kLanes];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + warp;
  if (row >= rows) return;
  const T* xr = x + row * len;
  float v[pt::kLanes];
  partial[warp][lane] = pt::lane_max(xr, len, lane);
  __syncwarp();
  gather_partials(partial[warp], v);
  const float mx = pt::tree32_max(v);
  __syncwarp();  // every lane has read the maxima before they are overwritten
  partial[warp][lane] = pt::lane_sum(xr, len, lane, pt::ExpShifted{mx});
  __syncwarp();
  gather_partials(partial[warp], v);
  const float lse = pt::log(pt::tree32_sum(v));
  for (int64_t j = lane; j < len; j += 32) {
    out[row * len + j] = pt::from_float<O>(pt::log_softmax_output(pt::to_float(xr[j]), mx, lse));
  }
}

// ---- attention ----------------------------------------------------------------------------------

constexpr int kAttnThreads = 128;

template <class T>
struct PagedView {
  const T* k;
  const T* v;
  const int32_t* page_table;
  int32_t max_pages, page_size, kv_heads, head_dim;
  __device__ int64_t offset(int seq, int kvh, int64_t t) const {
    const int64_t page = page_table[static_cast<int64_t>(seq) * max_pages + t / page_size];
    return ((page * page_size + t % page_size) * kv_heads + kvh) * static_cast<int64_t>(head_dim);
  }
};

// Shared-memory layout of one attention block: q[d], acc[d], (prefill) total[d], scores[64],
// p[64].
size_t attention_smem_bytes(int32_t head_dim, bool prefill) {
  return ((prefill ? 3 : 2) * static_cast<size_t>(head_dim) + 2 * pt::kAttentionTile) *
         sizeof(float);
}

// Folds KV tokens [begin, end) of (seq, kvh) into the running (m, l, acc) in tiles of 64
// aligned to `origin`. Block-wide; q and acc are in shared memory; m and l are held, equal, by
// every thread.
template <class T>
__device__ void attend_range(const PagedView<T>& kv, int seq, int kvh, int64_t begin, int64_t end,
                             int64_t origin, float scale, const float* q, float* acc, float* scores,
                             float* p, float& m, float& l) {
  const int d = kv.head_dim;
  for (int64_t t0 = begin; t0 < end;) {
    const int64_t offset = (t0 - origin) % pt::kAttentionTile;
    const int64_t t1 =
        end < t0 + (pt::kAttentionTile - offset) ? end : t0 + (pt::kAttentionTile - offset);
    const int n = static_cast<int>(t1 - t0);
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
      scores[t] = pt::attention_score(q, kv.k + kv.offset(seq, kvh, t0 + t), d, scale);
    }
    __syncthreads();
    const float m_new = pt::tile_max(m, scores, n);
    const float c = pt::exp_diff(m, m_new);
    for (int t = threadIdx.x; t < n; t += blockDim.x) p[t] = pt::exp(pt::sub(scores[t], m_new));
    __syncthreads();
    l = pt::rescale_add(l, c, pt::tile_sum(p, n));
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
      const float tile = pt::tile_weighted_sum(
          p, n, [&](int t) { return pt::to_float(kv.v[kv.offset(seq, kvh, t0 + t) + j]); });
      acc[j] = pt::rescale_add(acc[j], c, tile);
    }
    m = m_new;
    __syncthreads();  // scores and p are rewritten by the next tile
    t0 = t1;
  }
}

__device__ __forceinline__ float negative_infinity() {
  return pt::float_of(pt::kInfBits | 0x80000000u);
}

// Loads q (as floats) and clears acc.
template <class T>
__device__ void start_state(const T* q_row, int d, float* q, float* acc) {
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    q[j] = pt::to_float(q_row[j]);
    acc[j] = 0.0f;
  }
  __syncthreads();
}

// Split state layout in the workspace: [m, l, acc[0..d)] per (seq, head, split).
template <class T>
__global__ void __launch_bounds__(kAttnThreads)
    portable_decode_split_kernel(PagedView<T> kv, const T* q, const int32_t* kv_lens, int heads,
                                 float scale, int split, int max_splits, float* workspace) {
  extern __shared__ float smem[];
  const int d = kv.head_dim;
  const int split_index = blockIdx.x, h = blockIdx.y, seq = blockIdx.z;
  const int64_t len = kv_lens[seq];
  const int64_t begin = static_cast<int64_t>(split_index) * split;
  if (begin >= len) return;  // the merge reads only ceil(len / split) splits
  const int64_t end = len < begin + split ? len : begin + split;
  float *qs = smem, *acc = smem + d, *scores = smem + 2 * d, *p = scores + pt::kAttentionTile;
  start_state(q + (static_cast<int64_t>(seq) * heads + h) * d, d, qs, acc);
  float m = negative_infinity(), l = 0.0f;
  attend_range(kv, seq, h / (heads / kv.kv_heads), begin, end, begin, scale, qs, acc, scores, p, m,
               l);
  float* state = workspace + ((static_cast<int64_t>(seq) * heads + h) * max_splits + split_index) *
                                 (2 + static_cast<int64_t>(d));
  if (threadIdx.x == 0) {
    state[0] = m;
    state[1] = l;
  }
  for (int j = threadIdx.x; j < d; j += blockDim.x) state[2 + j] = acc[j];
}

template <class O>
__global__ void __launch_bounds__(kAttnThreads)
    portable_decode_merge_kernel(const int32_t* kv_lens, int heads, int d, int split,
                                 int max_splits, const float* workspace, O* out) {
  const int h = blockIdx.x, seq = blockIdx.y;
  const int64_t len = kv_lens[seq];
  const int64_t splits = (len + split - 1) / split;
  const float* states = workspace + (static_cast<int64_t>(seq) * heads + h) * max_splits *
                                        (2 + static_cast<int64_t>(d));
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    // cpu-portable's merge: an empty total takes the first non-empty part as it is.
    float m = negative_infinity(), l = 0.0f, a = 0.0f;
    for (int64_t s = 0; s < splits; ++s) {
      const float* st = states + s * (2 + static_cast<int64_t>(d));
      const float pm = st[0], pl = st[1], pa = st[2 + j];
      if (pl == 0.0f) continue;
      if (l == 0.0f) {
        m = pm;
        l = pl;
        a = pa;
        continue;
      }
      const pt::MergeWeights w = pt::merge_weights(m, pm);
      l = pt::merge_value(l, pl, w);
      a = pt::merge_value(a, pa, w);
      m = w.m;
    }
    out[(static_cast<int64_t>(seq) * heads + h) * d + j] = pt::from_float<O>(pt::div(a, l));
  }
}

template <class T, class O>
__global__ void __launch_bounds__(kAttnThreads)
    portable_prefill_kernel(PagedView<T> kv, const T* q, const int32_t* q_start,
                            const int32_t* kv_lens, int seqs, int heads, float scale, int split,
                            O* out) {
  extern __shared__ float smem[];
  const int d = kv.head_dim;
  const int64_t row = blockIdx.x / heads;
  const int h = static_cast<int>(blockIdx.x % heads);
  // The sequence whose new tokens include `row`: the last s with q_start[s] <= row.
  int lo = 0, hi = seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (q_start[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int seq = lo;
  const int64_t q_len = q_start[seq + 1] - q_start[seq];
  const int64_t pos = kv_lens[seq] - q_len + (row - q_start[seq]);
  float *qs = smem, *acc = smem + d, *total = smem + 2 * d, *scores = smem + 3 * d,
        *p = scores + pt::kAttentionTile;
  start_state(q + (row * heads + h) * d, d, qs, acc);
  // The decode plan of kv_len = pos + 1: splits of `split` tokens, each folded from an empty
  // state in tiles aligned to its start, merged in split order as the decode merge kernel does.
  float m_total = negative_infinity(), l_total = 0.0f;
  for (int64_t begin = 0; begin <= pos; begin += split) {
    const int64_t end = pos + 1 < begin + split ? pos + 1 : begin + split;
    float m = negative_infinity(), l = 0.0f;
    attend_range(kv, seq, h / (heads / kv.kv_heads), begin, end, begin, scale, qs, acc, scores, p,
                 m, l);
    if (l != 0.0f) {
      if (l_total == 0.0f) {
        for (int j = threadIdx.x; j < d; j += blockDim.x) total[j] = acc[j];
        m_total = m;
        l_total = l;
      } else {
        const pt::MergeWeights w = pt::merge_weights(m_total, m);
        for (int j = threadIdx.x; j < d; j += blockDim.x) total[j] = pt::merge_value(total[j], acc[j], w);
        l_total = pt::merge_value(l_total, l, w);
        m_total = w.m;
      }
    }
    for (int j = threadIdx.x; j < d; j += blockDim.x) acc[j] = 0.0f;
    __syncthreads();
  }
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    out[(row * heads + h) * d + j] = pt::from_float<O>(pt::div(total[j], l_total));
  }
}

template <class T>
PagedView<T> paged_view(const PortableAttention& p) {
  return {static_cast<const T*>(p.k),
          static_cast<const T*>(p.v),
          p.page_table,
          p.max_pages_per_seq,
          p.page_size,
          p.kv_heads,
          p.head_dim};
}

bool attention_args_ok(const PortableAttention& p) {
  return p.head_dim > 0 && p.head_dim <= kPortableMaxHeadDim && p.kv_heads > 0 &&
         p.heads % p.kv_heads == 0 && p.seqs >= 0 && p.rows >= 0;
}

}  // namespace

cudaError_t launch_portable_gemm(PortableType in, PortableType out_type, const void* a,
                                 const void* w, const void* bias, void* out, int64_t m, int64_t n,
                                 int64_t k, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + kGemmTile - 1) / kGemmTile),
                  static_cast<unsigned>((m + kGemmTile - 1) / kGemmTile));
  if (grid.y > 65535u) return cudaErrorInvalidConfiguration;
  return with_type(in, [&](auto ti) {
    using T = typename decltype(ti)::type;
    return with_type(out_type, [&](auto to) {
      using O = typename decltype(to)::type;
      portable_gemm_kernel<T, O><<<grid, kGemmThreads, 0, stream>>>(
          static_cast<const T*>(a), static_cast<const T*>(w), static_cast<const T*>(bias),
          static_cast<O*>(out), m, n, k);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_portable_rmsnorm(PortableType in, PortableType out_type, const void* x,
                                    const void* weight, void* out, int64_t rows, int64_t d,
                                    float eps, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
  const auto blocks = static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps);
  return with_type(in, [&](auto ti) {
    using T = typename decltype(ti)::type;
    return with_type(out_type, [&](auto to) {
      using O = typename decltype(to)::type;
      portable_rmsnorm_kernel<T, O><<<blocks, kRowWarps * 32, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<O*>(out), rows, d,
          eps);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_portable_log_softmax(PortableType in, PortableType out_type, const void* x,
                                        void* out, int64_t rows, int64_t v, cudaStream_t stream) {
  if (rows <= 0 || v <= 0) return rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
  const auto blocks = static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps);
  return with_type(in, [&](auto ti) {
    using T = typename decltype(ti)::type;
    return with_type(out_type, [&](auto to) {
      using O = typename decltype(to)::type;
      portable_log_softmax_kernel<T, O><<<blocks, kRowWarps * 32, 0, stream>>>(
          static_cast<const T*>(x), static_cast<O*>(out), rows, v);
      return cudaGetLastError();
    });
  });
}

size_t portable_decode_workspace_bytes(const PortableAttention& p, int32_t max_splits) {
  return static_cast<size_t>(p.seqs) * p.heads * max_splits *
         (2 + static_cast<size_t>(p.head_dim)) * sizeof(float);
}

cudaError_t launch_portable_attention_decode(const PortableAttention& p, int32_t split,
                                             int32_t max_splits, float* workspace,
                                             cudaStream_t stream) {
  if (!attention_args_ok(p) || split <= 0 || max_splits <= 0) return cudaErrorInvalidValue;
  if (p.seqs == 0) return cudaSuccess;
  if (p.seqs > 65535 || p.heads > 65535) return cudaErrorInvalidConfiguration;
  const size_t smem = attention_smem_bytes(p.head_dim, false);
  return with_type(p.dtype, [&](auto ti) {
    using T = typename decltype(ti)::type;
    const dim3 grid(static_cast<unsigned>(max_splits), static_cast<unsigned>(p.heads),
                    static_cast<unsigned>(p.seqs));
    portable_decode_split_kernel<T><<<grid, kAttnThreads, smem, stream>>>(
        paged_view<T>(p), static_cast<const T*>(p.q), p.kv_lens, p.heads, p.scale, split,
        max_splits, workspace);
    cudaError_t st = cudaGetLastError();
    if (st != cudaSuccess) return st;
    return with_type(p.out_type, [&](auto to) {
      using O = typename decltype(to)::type;
      portable_decode_merge_kernel<O>
          <<<dim3(static_cast<unsigned>(p.heads), static_cast<unsigned>(p.seqs)), kAttnThreads, 0,
             stream>>>(p.kv_lens, p.heads, p.head_dim, split, max_splits, workspace,
                       static_cast<O*>(p.out));
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_portable_attention_prefill(const PortableAttention& p, int32_t split,
                                              cudaStream_t stream) {
  if (split <= 0) return cudaErrorInvalidValue;
  if (!attention_args_ok(p) || p.seqs <= 0)
    return p.rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  const int64_t blocks = static_cast<int64_t>(p.rows) * p.heads;
  if (blocks > 0x7fffffff) return cudaErrorInvalidConfiguration;
  const size_t smem = attention_smem_bytes(p.head_dim, true);
  return with_type(p.dtype, [&](auto ti) {
    using T = typename decltype(ti)::type;
    return with_type(p.out_type, [&](auto to) {
      using O = typename decltype(to)::type;
      portable_prefill_kernel<T, O><<<static_cast<unsigned>(blocks), kAttnThreads, smem, stream>>>(
          paged_view<T>(p), static_cast<const T*>(p.q), p.q_start, p.kv_lens, p.seqs, p.heads,
          p.scale, split, static_cast<O*>(p.out));
      return cudaGetLastError();
    });
  });
}

}  // namespace nvdet::kernels
