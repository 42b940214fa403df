#include "lib/model/traffic_pages.h"

#include <algorithm>
#include <string>

#include "lib/core/error.h"

namespace nvdet {

TrafficPages::TrafficPages(int32_t total_pages, int32_t page_size, int32_t max_pages_per_seq,
                           size_t requests)
    : page_size_(page_size),
      max_pages_per_seq_(std::max(1, max_pages_per_seq)),
      tables_(requests),
      ref_(static_cast<size_t>(std::max(1, total_pages)), 0),
      next_(ref_.size(), -1),
      prev_(ref_.size(), -1),
      free_(ref_.size(), false),
      entry_of_(ref_.size(), nullptr) {
  for (int32_t p = 0; p < this->total_pages(); ++p) push_free(p);
}

int64_t TrafficPages::slot(size_t seq, int32_t position) const {
  return int64_t{tables_.at(seq).at(static_cast<size_t>(position / page_size_))} * page_size_ +
         position % page_size_;
}

PagedKv TrafficPages::view(std::span<const size_t> seqs, std::span<const int32_t> kv_lens) const {
  return paged_view(
      seqs, kv_lens, page_size_, max_pages_per_seq_,
      [this](size_t seq, int32_t page) { return tables_.at(seq).at(static_cast<size_t>(page)); });
}

std::vector<int32_t> TrafficPages::page_tokens(const std::vector<int32_t>& prompt,
                                               int32_t page) const {
  const auto first = prompt.begin() + static_cast<ptrdiff_t>(page) * page_size_;
  return std::vector<int32_t>(first, first + page_size_);
}

int32_t TrafficPages::cached_prefix(const std::vector<int32_t>& prompt, int32_t max_tokens) const {
  const int32_t pages = std::min(static_cast<int32_t>(prompt.size()), max_tokens) / page_size_;
  uint64_t parent = 0;
  int32_t hit = 0;
  for (; hit < pages; ++hit) {
    const auto it = cache_.find(Key{parent, page_tokens(prompt, hit)});
    if (it == cache_.end()) break;
    parent = it->second.id;
  }
  return hit * page_size_;
}

void TrafficPages::take_cached(size_t seq, const std::vector<int32_t>& prompt, int32_t tokens) {
  std::vector<int32_t>& table = tables_.at(seq);
  uint64_t parent = 0;
  for (int32_t page = 0; page < tokens / page_size_; ++page) {
    const auto it = cache_.find(Key{parent, page_tokens(prompt, page)});
    if (it == cache_.end()) throw_runtime_error("a prefix-cache page vanished while taken");
    const int32_t p = it->second.page;
    if (ref_[p]++ == 0) unlink_free(p);
    table.push_back(p);
    parent = it->second.id;
  }
}

void TrafficPages::reserve(size_t seq, int32_t tokens) {
  std::vector<int32_t>& table = tables_.at(seq);
  const size_t needed = static_cast<size_t>((tokens + page_size_ - 1) / page_size_);
  if (needed > static_cast<size_t>(max_pages_per_seq_)) {
    throw_runtime_error("a request of the replay needs " + std::to_string(needed) +
                        " KV pages, more than the " + std::to_string(max_pages_per_seq_) +
                        " it was sized for");
  }
  while (table.size() < needed) table.push_back(allocate());
}

void TrafficPages::cache_prompt_pages(size_t seq, const std::vector<int32_t>& prompt,
                                      int32_t computed) {
  const std::vector<int32_t>& table = tables_.at(seq);
  const int32_t pages = std::min(computed, static_cast<int32_t>(prompt.size())) / page_size_;
  uint64_t parent = 0;
  for (int32_t page = 0; page < pages; ++page) {
    Key key{parent, page_tokens(prompt, page)};
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      const int32_t p = table.at(static_cast<size_t>(page));
      it = cache_.emplace(std::move(key), Entry{next_id_++, p}).first;
      entry_of_[p] = &it->first;
    }
    parent = it->second.id;
  }
}

void TrafficPages::release(size_t seq) {
  std::vector<int32_t>& table = tables_.at(seq);
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    if (--ref_[*it] == 0) push_free(*it);
  }
  table.clear();
}

int32_t TrafficPages::allocate() {
  if (head_ < 0) throw_runtime_error("the replay's KV page pool is exhausted");
  const int32_t p = head_;
  unlink_free(p);
  if (const Key* key = entry_of_[p]) {  // evicted from the prefix cache
    cache_.erase(cache_.find(*key));
    entry_of_[p] = nullptr;
  }
  ref_[p] = 1;
  return p;
}

void TrafficPages::push_free(int32_t page) {
  prev_[page] = tail_;
  next_[page] = -1;
  if (tail_ >= 0) next_[tail_] = page;
  if (head_ < 0) head_ = page;
  tail_ = page;
  free_[page] = true;
  ++free_count_;
}

void TrafficPages::unlink_free(int32_t page) {
  if (!free_[page]) return;
  if (prev_[page] >= 0) next_[prev_[page]] = next_[page];
  if (next_[page] >= 0) prev_[next_[page]] = prev_[page];
  if (head_ == page) head_ = next_[page];
  if (tail_ == page) tail_ = prev_[page];
  free_[page] = false;
  --free_count_;
}

}  // namespace nvdet
