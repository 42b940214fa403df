#pragma once
// Walking one slice of one row, as the norm kernels do: thread t of the block visits the
// vectors lo + t, lo + t + B, lo + t + 2B, ... (B = blockDim.x) in that order, kChunk of them
// loaded at a time so that several loads are in flight. The order of visits, and therefore of
// every per-thread accumulation, depends only on B and the slice bounds.
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {

template <class T, int kN, int kChunk>
struct SliceCache {
  PackedIn<T, kN> v[kChunk];
};

// Calls visit(f[kN], vector_index) for every vector this thread owns in [lo, hi), in order.
// When the slice fits in one chunk per thread the loaded vectors stay in `cache` afterwards.
template <class T, int kN, int kChunk, class Visit>
__device__ __forceinline__ void for_each_owned_vector(const T* row, int64_t lo, int64_t hi,
                                                      SliceCache<T, kN, kChunk>& cache,
                                                      Visit&& visit) {
  const int64_t stride = blockDim.x;
  for (int64_t base = lo + threadIdx.x; base < hi; base += kChunk * stride) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t i = base + j * stride;
      if (i < hi) cache.v[j] = load_packed<T, kN>(row + i * kN);
    }
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t i = base + j * stride;
      if (i < hi) {
        float f[kN];
        widen(cache.v[j], f);
        visit(f, i);
      }
    }
  }
}

// True when every thread's vectors of [lo, hi) fit in one chunk (the cache then holds them).
template <int kChunk>
__device__ __forceinline__ bool slice_fits_cache(int64_t lo, int64_t hi) {
  return hi - lo <= static_cast<int64_t>(kChunk) * blockDim.x;
}

// Visits the same vectors again, from the cache when slice_fits_cache, else reloading them.
template <class T, int kN, int kChunk, class Visit>
__device__ __forceinline__ void revisit_owned_vectors(const T* row, int64_t lo, int64_t hi,
                                                      SliceCache<T, kN, kChunk>& cache,
                                                      bool cached, Visit&& visit) {
  if (cached) {
    const int64_t stride = blockDim.x;
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t i = lo + threadIdx.x + j * stride;
      if (i < hi) {
        float f[kN];
        widen(cache.v[j], f);
        visit(f, i);
      }
    }
  } else {
    for_each_owned_vector<T, kN, kChunk>(row, lo, hi, cache, visit);
  }
}

}  // namespace nvdet::kernels
