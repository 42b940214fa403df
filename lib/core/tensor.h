#pragma once
// A dense, row-major tensor in host memory. Every backend takes its inputs and returns its output
// as a HostTensor; GPU backends copy to and from the device.
//
// Identity: each tensor carries a `uid` that changes whenever its contents may change (creation,
// mutable access). GPU backends cache device copies by uid, so a weight that stays the same object
// across the contexts of a sweep is uploaded once.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/core/dtype.h"

namespace nvdet {

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape);  // zero-filled

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const;
  size_t nbytes() const { return bytes_.size(); }
  uint64_t uid() const { return uid_; }
  bool empty() const { return bytes_.empty(); }

  const std::byte* data() const { return bytes_.data(); }
  std::byte* mutable_data();  // new uid: the contents may change
  template <class T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  template <class T>
  T* mutable_data_as() {
    return reinterpret_cast<T*>(mutable_data());
  }

  // Element access by flat index, converting through float (exact for all three dtypes).
  float get(int64_t i) const;
  void set(int64_t i, float v);    // rounds to the tensor's dtype (nearest even)
  uint64_t bits(int64_t i) const;  // the raw bit pattern of element i

  // Elements per leading-dimension row (product of shape[1:]); the whole numel for rank 1.
  int64_t row_elems() const;
  // A copy of rows [begin, begin + count) along the first dimension.
  HostTensor slice_rows(int64_t begin, int64_t count) const;
  // Flat index -> coordinates.
  std::vector<int64_t> coords_of(int64_t flat_index) const;

  std::string shape_string() const;  // "[8, 4096]"

 private:
  DType dtype_ = DType::kFP32;
  std::vector<int64_t> shape_;
  std::vector<std::byte> bytes_;
  uint64_t uid_ = 0;
};

// Deterministic random data. Element i of a tensor filled with (seed, stream) is a pure function
// of (seed, stream, i): the same request gets the same data in every context, whatever the batch.
// Values are normally distributed with the given standard deviation (never all zeros).
void fill_normal(HostTensor& t, uint64_t seed, uint64_t stream, float stddev = 1.0f);
// Same, into a span of floats (used to build rows of a larger tensor).
void fill_normal(std::span<float> out, uint64_t seed, uint64_t stream, float stddev = 1.0f);
// Uniform in [lo, hi).
void fill_uniform(HostTensor& t, uint64_t seed, uint64_t stream, float lo, float hi);

// Flat row-major index -> coordinates in `shape`.
std::vector<int64_t> coords_of(const std::vector<int64_t>& shape, int64_t flat_index);

// Copies the rows of `src` (same dtype and row length) into `dst` starting at row `dst_row`.
void copy_rows(const HostTensor& src, HostTensor& dst, int64_t dst_row);

}  // namespace nvdet
