#pragma once
// One layer's paged KV cache for a batch of sequences being decoded together. Pages are handed
// out in batch order, so a sequence's physical pages move with its slot in the batch (as in a
// serving engine), while its contents (keys and values by position) do not.
#include <cstdint>
#include <span>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/op_args.h"

namespace nvdet {

// Where each sequence's tokens live: the page layout alone, shared by the host cache below and
// the device decoder's caches, so both address the same slots and build the same page tables.
class KvPageLayout {
 public:
  // capacity[s]: the most tokens sequence s will ever hold.
  KvPageLayout(std::span<const int32_t> capacity, int32_t page_size);

  int32_t total_pages() const { return total_pages_; }  // at least 1
  int32_t page_size() const { return page_size_; }
  // The slot (page * page_size + offset) of token `position` of sequence `seq`.
  int64_t slot(size_t seq, int32_t position) const;
  // The attention ops' view for the sequences `seqs` (in that order) holding kv_lens[i] tokens
  // each; k and v are left null for the caller to set.
  PagedKv view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const;

 private:
  int32_t page_size_ = 0;
  int32_t max_pages_ = 0;
  int32_t total_pages_ = 1;
  std::vector<int32_t> first_page_;  // per sequence
};

class PagedKvCache {
 public:
  PagedKvCache(std::span<const int32_t> capacity, int32_t page_size, int32_t kv_heads,
               int32_t head_dim, DType dtype);

  // Stores the K and V columns of row `row` of qkv ([rows, q_dim + 2 kv_dim], K after Q, V after
  // K) as token `position` of sequence `seq`.
  void write(size_t seq, int32_t position, const HostTensor& qkv, int64_t row, int64_t q_dim);

  // The cache as the attention ops see it (KvPageLayout::view); the view borrows this cache's
  // tensors.
  PagedKv view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const;

  // Bytes a cache of this size takes (K and V), for the memory check before allocating.
  static double bytes_for(std::span<const int32_t> capacity, int32_t page_size, int32_t kv_heads,
                          int32_t head_dim, DType dtype);

 private:
  KvPageLayout layout_;
  HostTensor k_, v_;  // [pages, page_size, kv_heads, head_dim]
  int64_t row_elems_ = 0;
};

}  // namespace nvdet
