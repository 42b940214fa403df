#include "lib/model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace nvdet {
namespace {

int32_t pages_for(int32_t tokens, int32_t page_size) {
  return std::max(1, (tokens + page_size - 1) / page_size);
}

}  // namespace

KvPageLayout::KvPageLayout(std::span<const int32_t> capacity, int32_t page_size)
    : page_size_(page_size) {
  int32_t total = 0;
  for (int32_t c : capacity) {
    first_page_.push_back(total);
    const int32_t pages = pages_for(c, page_size);
    total += pages;
    max_pages_ = std::max(max_pages_, pages);
  }
  total_pages_ = std::max(total, 1);
}

int64_t KvPageLayout::slot(size_t seq, int32_t position) const {
  return (int64_t{first_page_.at(seq)} + position / page_size_) * page_size_ +
         position % page_size_;
}

PagedKv KvPageLayout::view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const {
  PagedKv v;
  v.page_size = page_size_;
  v.max_pages_per_seq = max_pages_;
  v.page_table.assign(seqs.size() * static_cast<size_t>(max_pages_), 0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int32_t used = pages_for(kv_lens[i], page_size_);
    for (int32_t p = 0; p < used; ++p) {
      v.page_table[i * max_pages_ + p] = first_page_.at(seqs[i]) + p;
    }
  }
  v.kv_lens.assign(kv_lens.begin(), kv_lens.end());
  return v;
}

double PagedKvCache::bytes_for(std::span<const int32_t> capacity, int32_t page_size,
                               int32_t kv_heads, int32_t head_dim, DType dtype) {
  double pages = 0;
  for (int32_t c : capacity) pages += pages_for(c, page_size);
  return 2.0 * pages * page_size * kv_heads * head_dim * static_cast<double>(dtype_size(dtype));
}

PagedKvCache::PagedKvCache(std::span<const int32_t> capacity, int32_t page_size, int32_t kv_heads,
                           int32_t head_dim, DType dtype)
    : layout_(capacity, page_size), row_elems_(int64_t{kv_heads} * head_dim) {
  k_ = HostTensor(dtype, {layout_.total_pages(), page_size, kv_heads, head_dim});
  v_ = HostTensor(dtype, k_.shape());
}

void PagedKvCache::write(size_t seq, int32_t position, const HostTensor& qkv, int64_t row,
                         int64_t q_dim) {
  if (qkv.dtype() != k_.dtype() || qkv.dim(1) != q_dim + 2 * row_elems_) {
    throw std::invalid_argument("PagedKvCache::write: qkv does not match the cache");
  }
  const size_t elem = dtype_size(k_.dtype());
  const size_t row_bytes = static_cast<size_t>(row_elems_) * elem;
  const int64_t slot = layout_.slot(seq, position);
  const std::byte* src = qkv.data() + static_cast<size_t>(row * qkv.dim(1) + q_dim) * elem;
  std::memcpy(k_.mutable_data() + slot * row_bytes, src, row_bytes);
  std::memcpy(v_.mutable_data() + slot * row_bytes, src + row_bytes, row_bytes);
}

PagedKv PagedKvCache::view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const {
  PagedKv v = layout_.view(seqs, kv_lens);
  v.k = &k_;
  v.v = &v_;
  return v;
}

}  // namespace nvdet
