#pragma once
// Host-side pieces shared by the one-row-per-block launchers (RMSNorm, log-softmax): argument
// checks and the dispatch from runtime dtypes and row length to the templated kernels.
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

// Runs f(TypeTag<T>{}, TypeTag<TO>{}) for the input and output dtypes.
template <class F>
cudaError_t with_in_out_types(DType in, DType out, F&& f) {
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
