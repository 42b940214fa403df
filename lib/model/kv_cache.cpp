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

PagedKv paged_view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens,
                   int32_t page_size, int32_t max_pages_per_seq,
                   const std::function<int32_t(size_t seq, int32_t page)>& page_of) {
  PagedKv v;
  v.page_size = page_size;
  v.max_pages_per_seq = max_pages_per_seq;
  v.page_table.assign(seqs.size() * static_cast<size_t>(max_pages_per_seq), 0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int32_t used = pages_for(kv_lens[i], page_size);
    for (int32_t p = 0; p < used; ++p)
      v.page_table[i * max_pages_per_seq + p] = page_of(seqs[i], p);
  }
  v.kv_lens.assign(kv_lens.begin(), kv_lens.end());
  return v;
}

PagedKv KvPageLayout::view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const {
  return paged_view(seqs, kv_lens, page_size_, max_pages_,
                    [this](size_t seq, int32_t page) { return first_page_.at(seq) + page; });
}

double PagedKvCache::bytes_for(std::span<const int32_t> capacity, int32_t page_size,
                               int32_t kv_heads, int32_t head_dim, DType dtype) {
  double pages = 0;
  for (int32_t c : capacity) pages += pages_for(c, page_size);
  return bytes_for_pages(pages, page_size, kv_heads, head_dim, dtype);
}

double PagedKvCache::bytes_for_pages(double pages, int32_t page_size, int32_t kv_heads,
                                     int32_t head_dim, DType dtype) {
  return 2.0 * pages * page_size * kv_heads * head_dim * static_cast<double>(dtype_size(dtype));
}

PagedKvCache::PagedKvCache(std::span<const int32_t> capacity, int32_t page_size, int32_t kv_heads,
                           int32_t head_dim, DType dtype)
    : PagedKvCache(std::make_shared<KvPageLayout>(capacity, page_size), kv_heads, head_dim, dtype) {
}

PagedKvCache::PagedKvCache(std::shared_ptr<const KvPageMap> pages, int32_t kv_heads,
                           int32_t head_dim, DType dtype)
    : pages_(std::move(pages)), row_elems_(int64_t{kv_heads} * head_dim) {
  k_ = HostTensor(dtype, {pages_->total_pages(), pages_->page_size(), kv_heads, head_dim});
  v_ = HostTensor(dtype, k_.shape());
}

void PagedKvCache::write(size_t seq, int32_t position, const HostTensor& qkv, int64_t row,
                         int64_t q_dim) {
  if (qkv.dtype() != k_.dtype() || qkv.dim(1) != q_dim + 2 * row_elems_) {
    throw std::invalid_argument("PagedKvCache::write: qkv does not match the cache");
  }
  const size_t elem = dtype_size(k_.dtype());
  const size_t row_bytes = static_cast<size_t>(row_elems_) * elem;
  const int64_t slot = pages_->slot(seq, position);
  const std::byte* src = qkv.data() + static_cast<size_t>(row * qkv.dim(1) + q_dim) * elem;
  std::memcpy(k_.mutable_data() + slot * row_bytes, src, row_bytes);
  std::memcpy(v_.mutable_data() + slot * row_bytes, src + row_bytes, row_bytes);
}

PagedKv PagedKvCache::view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const {
  PagedKv v = pages_->view(seqs, kv_lens);
  v.k = &k_;
  v.v = &v_;
  return v;
}

HostTensor PagedKvCache::read(size_t seq, int32_t count) const {
  HostTensor out(k_.dtype(), {count, 2 * row_elems_});
  const size_t row_bytes = static_cast<size_t>(row_elems_) * dtype_size(k_.dtype());
  for (int32_t t = 0; t < count; ++t) {
    const int64_t slot = pages_->slot(seq, t);
    std::memcpy(out.mutable_data() + 2 * t * row_bytes, k_.data() + slot * row_bytes, row_bytes);
    std::memcpy(out.mutable_data() + (2 * t + 1) * row_bytes, v_.data() + slot * row_bytes,
                row_bytes);
  }
  return out;
}

}  // namespace nvdet
