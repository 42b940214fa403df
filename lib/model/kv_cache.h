#pragma once
// One layer's paged KV cache for a batch of sequences being decoded together. Pages are handed
// out in batch order, so a sequence's physical pages move with its slot in the batch (as in a
// serving engine), while its contents (keys and values by position) do not.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/op_args.h"

namespace nvdet {

// Where each sequence's tokens live in a pool of pages: the page a token's K and V go to and the
// page tables the attention ops read. Two kinds: the fixed layout of a batch decoded together
// (KvPageLayout, below) and a serving engine's pages, handed out as requests come and shared
// between requests with a common prefix (TrafficPages, traffic_pages.h). The host cache and the
// device engine's caches address their slots through it, so both build the same page tables.
class KvPageMap {
 public:
  virtual ~KvPageMap() = default;
  virtual int32_t total_pages() const = 0;  // at least 1
  virtual int32_t page_size() const = 0;
  // The slot (page * page_size + offset) of token `position` of sequence `seq`.
  virtual int64_t slot(size_t seq, int32_t position) const = 0;
  // The attention ops' view for the sequences `seqs` (in that order) holding kv_lens[i] tokens
  // each; k and v are left null for the caller to set.
  virtual PagedKv view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const = 0;
};

// The view of the sequences `seqs` holding kv_lens[i] tokens each, page p of sequence s being
// page_of(s, p), in tables of max_pages_per_seq pages: what every KvPageMap's view() returns.
PagedKv paged_view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens,
                   int32_t page_size, int32_t max_pages_per_seq,
                   const std::function<int32_t(size_t seq, int32_t page)>& page_of);

// The fixed layout: each sequence owns consecutive pages for its capacity, in batch order.
class KvPageLayout final : public KvPageMap {
 public:
  // capacity[s]: the most tokens sequence s will ever hold.
  KvPageLayout(std::span<const int32_t> capacity, int32_t page_size);

  int32_t total_pages() const override { return total_pages_; }
  int32_t page_size() const override { return page_size_; }
  int64_t slot(size_t seq, int32_t position) const override;
  PagedKv view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const override;

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
  // A cache of pages.total_pages() pages addressed through `pages` (shared by every layer's
  // cache of one engine).
  PagedKvCache(std::shared_ptr<const KvPageMap> pages, int32_t kv_heads, int32_t head_dim,
               DType dtype);

  // Stores the K and V columns of row `row` of qkv ([rows, q_dim + 2 kv_dim], K after Q, V after
  // K) as token `position` of sequence `seq`.
  void write(size_t seq, int32_t position, const HostTensor& qkv, int64_t row, int64_t q_dim);

  // The cache as the attention ops see it (KvPageMap::view); the view borrows this cache's
  // tensors.
  PagedKv view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const;

  // The cached K and V of tokens [0, count) of sequence `seq`: [count, 2 * kv_heads * head_dim],
  // each row K then V (for tests that compare caches bit for bit).
  HostTensor read(size_t seq, int32_t count) const;

  // Bytes a cache of this size takes (K and V), for the memory check before allocating.
  static double bytes_for(std::span<const int32_t> capacity, int32_t page_size, int32_t kv_heads,
                          int32_t head_dim, DType dtype);
  // The same for a cache of `pages` pages.
  static double bytes_for_pages(double pages, int32_t page_size, int32_t kv_heads, int32_t head_dim,
                                DType dtype);

 private:
  std::shared_ptr<const KvPageMap> pages_;
  HostTensor k_, v_;  // [pages, page_size, kv_heads, head_dim]
  int64_t row_elems_ = 0;
};

}  // namespace nvdet
