#pragma once
// Host-side pieces shared by the one-row-per-block launchers (RMSNorm, log-softmax): argument
// checks and the dispatch from runtime dtypes and row length to the templated kernels.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/dtype_dispatch.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {

// A block size the row kernels accept: whole warps, at most 1024 threads.
inline bool valid_row_block(int threads) {
  return threads >= 32 && threads <= 1024 && threads % 32 == 0;
}

// rows x row_splits blocks must fit a 1-D grid.
inline bool valid_split_rows(int64_t rows, int row_splits, int threads) {
  return valid_row_block(threads) && row_splits >= 1 && rows * row_splits <= 0x7fffffff;
}

// Block size for one row of `row_len` elements of `dtype`: about `chunk` 16-byte vectors (or
// scalars, when row_len is not a multiple of the vector width) per thread, so each thread has
// several loads in flight; whole warps, between 32 and `max_threads`. A function of the row
// alone, as the invariant kernels need.
inline int row_block_threads(int64_t row_len, ElemType dtype, int chunk, int max_threads) {
  const int64_t n = dtype == ElemType::kFP32 ? 4 : 8;
  const int64_t nvec = row_len % n == 0 ? row_len / n : row_len;
  const int64_t threads = ((nvec + chunk - 1) / chunk + 31) / 32 * 32;
  return static_cast<int>(std::min<int64_t>(max_threads, std::max<int64_t>(32, threads)));
}

// Runs f(TypeTag<T>{}, TypeTag<TO>{}) for the input and output dtypes.
template <class F>
cudaError_t with_in_out_types(ElemType in, ElemType out, F&& f) {
  return with_elem_type(in, [&](auto in_tag) {
    return with_elem_type(out, [&](auto out_tag) { return f(in_tag, out_tag); });
  });
}

// Runs f(std::integral_constant<int, N>{}) with N the vector width a row of `row_len` elements of
// T allows: 16 bytes (kVecElems<T>) when row_len is a multiple of it, else 1 (scalar).
template <class T, class F>
cudaError_t with_row_vector_width(int64_t row_len, F&& f) {
  if (row_len % kVecElems<T> == 0) return f(std::integral_constant<int, kVecElems<T>>{});
  return f(std::integral_constant<int, 1>{});
}

}  // namespace nvdet::kernels
