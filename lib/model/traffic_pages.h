#pragma once
// The KV pages of a serving replay (README "Serving traffic"), handed out as a serving engine's
// block manager does. A fixed pool of pages; each running request holds a page table. A whole
// page of prompt tokens is registered in the prefix cache under its tokens and the cache entry of
// the page before it (so an entry names the whole prefix up to its end, exactly, never by a hash
// that could collide). A request whose prompt starts with cached pages takes them, shared and
// reference counted, instead of computing them: their K and V are the bits another request
// computed, under that request's chunking. A finished request's pages go back to the free queue
// (its last page first); a cached page keeps its entry until the queue hands it out again, oldest
// freed first. Sized by the caller so that running requests never run out (no preemption).
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "lib/model/kv_cache.h"

namespace nvdet {

class TrafficPages final : public KvPageMap {
 public:
  // `requests` page tables (one per request of the replay), each of at most max_pages_per_seq
  // pages, over a pool of total_pages pages.
  TrafficPages(int32_t total_pages, int32_t page_size, int32_t max_pages_per_seq, size_t requests);

  int32_t total_pages() const override { return static_cast<int32_t>(ref_.size()); }
  int32_t page_size() const override { return page_size_; }
  int64_t slot(size_t seq, int32_t position) const override;
  PagedKv view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const override;

  // How many leading tokens of `prompt` the prefix cache holds: whole cached pages from its
  // start, at most max_tokens (rounded down to whole pages).
  int32_t cached_prefix(const std::vector<int32_t>& prompt, int32_t max_tokens) const;
  // Gives request `seq` (holding no page yet) the cached pages of its first `tokens` tokens, as
  // cached_prefix counted them.
  void take_cached(size_t seq, const std::vector<int32_t>& prompt, int32_t tokens);
  // Grows request seq's page table to cover `tokens` tokens, from the free queue. Throws
  // Error(kRuntime) when the pool is exhausted (the caller sizes it so that it never is).
  void reserve(size_t seq, int32_t tokens);
  // Registers request seq's whole pages of prompt tokens [0, computed) in the prefix cache (a
  // page whose prefix another page holds already stays unregistered: the first one is kept).
  void cache_prompt_pages(size_t seq, const std::vector<int32_t>& prompt, int32_t computed);
  // Returns every page of request `seq` (its page table is emptied).
  void release(size_t seq);

  const std::vector<int32_t>& pages_of(size_t seq) const { return tables_.at(seq); }
  int32_t free_pages() const { return free_count_; }
  size_t cached_pages() const { return cache_.size(); }

 private:
  // A prefix-cache key: the entry of the page before (0 for the first page) and this page's
  // tokens. Entry ids are never reused, so a key whose parent was evicted is never looked up.
  using Key = std::pair<uint64_t, std::vector<int32_t>>;
  struct Entry {
    uint64_t id = 0;
    int32_t page = 0;
  };

  std::vector<int32_t> page_tokens(const std::vector<int32_t>& prompt, int32_t page) const;
  int32_t allocate();
  void push_free(int32_t page);
  void unlink_free(int32_t page);

  int32_t page_size_ = 16;
  int32_t max_pages_per_seq_ = 1;
  std::vector<std::vector<int32_t>> tables_;  // per request: its pages in token order
  std::vector<int32_t> ref_;                  // per page: requests holding it
  // The free queue, a doubly linked list over page ids (-1 ends it): head is handed out first.
  std::vector<int32_t> next_, prev_;
  std::vector<bool> free_;
  int32_t head_ = -1, tail_ = -1, free_count_ = 0;
  std::map<Key, Entry> cache_;
  std::vector<const Key*> entry_of_;  // per page: its cache entry's key, or null
  uint64_t next_id_ = 1;
};

}  // namespace nvdet
