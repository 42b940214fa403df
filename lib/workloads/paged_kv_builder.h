#pragma once
// Builds a paged KV cache for a batch of sequences. Each sequence's keys and values are a pure
// function of (seed, its stream, token, kv head, dim): a probed request has the same cache
// contents in every context, only the physical pages it lands in and its neighbours change.
// Pages are handed out in batch order, so a request's pages move with its position.
#include <cstdint>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/op_args.h"

namespace nvdet {

struct KvSequence {
  uint64_t stream = 0;
  int32_t kv_len = 0;
};

struct PagedKvStorage {
  HostTensor k, v;  // [num_pages, page_size, num_kv_heads, head_dim]
  PagedKv view;     // points at k and v; page table and lengths filled in
};

// Refuses (kBadInput) caches over `max_bytes` with a sentence naming the size.
void build_paged_kv(const std::vector<KvSequence>& seqs, int32_t page_size, int32_t num_kv_heads,
                    int32_t head_dim, DType dtype, uint64_t seed, PagedKvStorage& out,
                    double max_bytes);

// Queries (or any per-token rows) of a sequence: [tokens, heads, head_dim] values seeded by
// (seed, stream, absolute token position), written into `dst` rows starting at `dst_row`.
void fill_token_rows(HostTensor& dst, int64_t dst_row, int64_t first_position, int64_t tokens,
                     uint64_t seed, uint64_t stream);

}  // namespace nvdet
