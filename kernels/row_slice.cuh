#pragma once
// Walking one slice of one row, as the norm kernels do: thread t of the block visits the
// vectors lo + t, lo + t + B, lo + t + 2B, ... (B = blockDim.x) in that order, kChunk of them
// loaded at a time so that several loads are in flight. The order of visits, and therefore of
// every per-thread accumulation, depends only on B and the slice bounds.
//
// A row is visited twice (statistics, then output). The second visit reads each vector from
// wherever the first visit left it: registers when the slice fits one chunk per thread, else a
// shared-memory stage for vectors below stage.hi and global memory (often L2) for the rest.
// Where a vector comes from never changes its value, so staging has no effect on the bits.
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {

template <class T, int kN, int kChunk>
struct SliceCache {
  PackedIn<T, kN> v[kChunk];
};

// Shared-memory copy of vectors [lo, hi) of the slice (data[i - lo] holds vector i); hi <= lo
// (the default) stages nothing.
template <class T, int kN>
struct SliceStage {
  PackedIn<T, kN>* data = nullptr;
  int64_t hi = 0;
};

// Calls visit(f[kN], vector_index) for every vector this thread owns in [lo, hi), in order.
// When the slice fits in one chunk per thread the loaded vectors stay in `cache` afterwards;
// vectors below stage.hi are also written to the stage.
template <class T, int kN, int kChunk, class Visit>
__device__ __forceinline__ void for_each_owned_vector(const T* row, int64_t lo, int64_t hi,
                                                      SliceCache<T, kN, kChunk>& cache,
                                                      Visit&& visit,
                                                      SliceStage<T, kN> stage = {}) {
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
        if (i < stage.hi) stage.data[i - lo] = cache.v[j];
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

// Visits the same vectors again, in the same order: from the cache when slice_fits_cache, else
// from the stage (vectors below stage.hi, written by this same thread: no barrier needed) and
// global memory.
template <class T, int kN, int kChunk, class Visit>
__device__ __forceinline__ void revisit_owned_vectors(const T* row, int64_t lo, int64_t hi,
                                                      SliceCache<T, kN, kChunk>& cache,
                                                      bool cached, Visit&& visit,
                                                      SliceStage<T, kN> stage = {}) {
  const int64_t stride = blockDim.x;
  if (cached) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t i = lo + threadIdx.x + j * stride;
      if (i < hi) {
        float f[kN];
        widen(cache.v[j], f);
        visit(f, i);
      }
    }
    return;
  }
  for (int64_t base = lo + threadIdx.x; base < hi; base += kChunk * stride) {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int64_t i = base + j * stride;
      if (i < hi) cache.v[j] = i < stage.hi ? stage.data[i - lo] : load_packed<T, kN>(row + i * kN);
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

}  // namespace nvdet::kernels
