#include "lib/core/tensor.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "lib/core/host_memory.h"
#include "lib/core/seeded_random.h"

namespace nvdet {
namespace {

uint64_t next_uid() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

// Counter-based: a pure function of (seed, stream, index).
uint64_t random_bits(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix64(splitmix64(seed ^ splitmix64(stream + 0x632be59bd9b4e019ull)) + index);
}

double unit_open(uint64_t bits) {  // (0, 1)
  return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

float normal_at(uint64_t seed, uint64_t stream, uint64_t i, float stddev) {
  const double u1 = unit_open(random_bits(seed, stream, 2 * i));
  const double u2 = unit_open(random_bits(seed, stream, 2 * i + 1));
  const double r = std::sqrt(-2.0 * std::log(u1));
  return static_cast<float>(stddev * r * std::cos(6.283185307179586 * u2));
}

}  // namespace

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), uid_(next_uid()) {
  for (int64_t d : shape_) {
    if (d < 0) throw std::invalid_argument("negative tensor dimension");
  }
  const size_t n = static_cast<size_t>(numel()) * dtype_size(dtype_);
  try {
    bytes_.assign(n, std::byte{0});
  } catch (const std::bad_alloc&) {
    std::string dims;
    for (size_t i = 0; i < shape_.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape_[i]);
    throw HostAllocationError(
        "a " + std::string(dtype_name(dtype_)) + " tensor of shape [" + dims + "]", n);
  }
}

int64_t HostTensor::numel() const {
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
}

std::byte* HostTensor::mutable_data() {
  uid_ = next_uid();
  return bytes_.data();
}

float HostTensor::get(int64_t i) const {
  switch (dtype_) {
    case DType::kBF16: return bf16_bits_to_float(data_as<uint16_t>()[i]);
    case DType::kFP16: return fp16_bits_to_float(data_as<uint16_t>()[i]);
    case DType::kFP32: return data_as<float>()[i];
  }
  return 0.0f;
}

void HostTensor::set(int64_t i, float v) {
  uid_ = next_uid();
  switch (dtype_) {
    case DType::kBF16: reinterpret_cast<uint16_t*>(bytes_.data())[i] = float_to_bf16_bits(v); break;
    case DType::kFP16: reinterpret_cast<uint16_t*>(bytes_.data())[i] = float_to_fp16_bits(v); break;
    case DType::kFP32: reinterpret_cast<float*>(bytes_.data())[i] = v; break;
  }
}

uint64_t HostTensor::bits(int64_t i) const {
  if (dtype_ == DType::kFP32) {
    uint32_t u;
    std::memcpy(&u, bytes_.data() + 4 * i, 4);
    return u;
  }
  return data_as<uint16_t>()[i];
}

int64_t HostTensor::row_elems() const {
  if (shape_.empty()) return 1;
  if (shape_.size() == 1) return shape_[0];
  return std::accumulate(shape_.begin() + 1, shape_.end(), int64_t{1}, std::multiplies<>());
}

HostTensor HostTensor::slice_rows(int64_t begin, int64_t count) const {
  if (shape_.empty() || begin < 0 || count < 0 || begin + count > shape_[0]) {
    throw std::out_of_range("slice_rows out of range");
  }
  std::vector<int64_t> shape = shape_;
  shape[0] = count;
  HostTensor out(dtype_, shape);
  const size_t row_bytes = static_cast<size_t>(row_elems()) * dtype_size(dtype_);
  std::memcpy(out.bytes_.data(), bytes_.data() + begin * row_bytes, count * row_bytes);
  return out;
}

std::vector<int64_t> HostTensor::coords_of(int64_t flat_index) const {
  return nvdet::coords_of(shape_, flat_index);
}

std::vector<int64_t> coords_of(const std::vector<int64_t>& shape, int64_t flat_index) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = shape[d] ? flat_index % shape[d] : 0;
    flat_index = shape[d] ? flat_index / shape[d] : 0;
  }
  return c;
}

std::string HostTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + "]";
}

void fill_normal(HostTensor& t, uint64_t seed, uint64_t stream, float stddev) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::kFP32) {
    fill_normal(std::span<float>(t.mutable_data_as<float>(), n), seed, stream, stddev);
    return;
  }
  for (int64_t i = 0; i < n; ++i) t.set(i, normal_at(seed, stream, i, stddev));
}

void fill_normal(std::span<float> out, uint64_t seed, uint64_t stream, float stddev) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = normal_at(seed, stream, i, stddev);
}

void fill_uniform(HostTensor& t, uint64_t seed, uint64_t stream, float lo, float hi) {
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    t.set(i, static_cast<float>(lo + (hi - lo) * unit_open(random_bits(seed, stream, i))));
  }
}

void copy_rows(const HostTensor& src, HostTensor& dst, int64_t dst_row) {
  if (src.dtype() != dst.dtype() || src.row_elems() != dst.row_elems() || src.rank() == 0 ||
      dst_row < 0 || dst_row + src.dim(0) > dst.dim(0)) {
    throw std::invalid_argument("copy_rows: incompatible tensors");
  }
  const size_t row_bytes = static_cast<size_t>(src.row_elems()) * dtype_size(src.dtype());
  std::memcpy(dst.mutable_data() + dst_row * row_bytes, src.data(), src.dim(0) * row_bytes);
}

}  // namespace nvdet
