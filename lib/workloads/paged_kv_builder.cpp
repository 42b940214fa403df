#include "lib/workloads/paged_kv_builder.h"

#include <cmath>
#include <string>

#include "lib/core/error.h"
#include "lib/core/parallel.h"
#include "lib/core/seeded_random.h"

namespace nvdet {
namespace {

const auto mix = splitmix64;

// Uniform with unit variance, cheap enough for multi-gigabyte caches: a hash of the element's
// coordinates, not a sequential generator, so any element can be made independently.
float unit_uniform(uint64_t key, uint64_t index) {
  const uint64_t bits = mix(key + index * 0xd1b54a32d192ed03ull);
  const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return (2.0f * u - 1.0f) * 1.7320508f;
}

const auto store = store_element;

}  // namespace

void build_paged_kv(const std::vector<KvSequence>& seqs, int32_t page_size, int32_t num_kv_heads,
                    int32_t head_dim, DType dtype, uint64_t seed, PagedKvStorage& out,
                    double max_bytes) {
  int32_t max_pages = 1;
  int64_t total_pages = 0;
  for (const auto& s : seqs) {
    const int32_t pages = (s.kv_len + page_size - 1) / page_size;
    max_pages = std::max(max_pages, pages);
    total_pages += pages;
  }
  const int64_t row = int64_t{num_kv_heads} * head_dim;
  const double bytes = 2.0 * static_cast<double>(total_pages) * page_size * row * dtype_size(dtype);
  if (bytes > max_bytes) {
    throw_input_error("the batch's KV cache would take " +
                      std::to_string(static_cast<int64_t>(bytes / (1 << 20))) +
                      " MiB of host memory (limit " +
                      std::to_string(static_cast<int64_t>(max_bytes / (1 << 20))) +
                      " MiB); lower batch, kv_len or filler_kv_len");
  }
  out.k = HostTensor(dtype, {std::max<int64_t>(total_pages, 1), page_size, num_kv_heads, head_dim});
  out.v = HostTensor(dtype, out.k.shape());
  out.view = PagedKv{};
  out.view.k = &out.k;
  out.view.v = &out.v;
  out.view.page_size = page_size;
  out.view.max_pages_per_seq = max_pages;
  out.view.page_table.assign(seqs.size() * max_pages, 0);
  std::byte* kdata = out.k.mutable_data();
  std::byte* vdata = out.v.mutable_data();
  std::vector<int64_t> first_page(seqs.size());
  int64_t next = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    first_page[s] = next;
    const int32_t pages = (seqs[s].kv_len + page_size - 1) / page_size;
    for (int32_t p = 0; p < pages; ++p)
      out.view.page_table[s * max_pages + p] = static_cast<int32_t>(next + p);
    next += pages;
    out.view.kv_lens.push_back(seqs[s].kv_len);
  }
  // One task per (sequence, token): each element depends only on its coordinates.
  std::vector<std::pair<int32_t, int32_t>> tasks;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int32_t t = 0; t < seqs[s].kv_len; t += page_size)
      tasks.emplace_back(static_cast<int32_t>(s), t);
  }
  parallel_for(static_cast<int64_t>(tasks.size()), 2 * page_size * row * 4, [&](int64_t i) {
    const auto [s, t0] = tasks[i];
    const uint64_t kkey = mix(seed ^ mix(seqs[s].stream * 2 + 0x51));
    const uint64_t vkey = mix(seed ^ mix(seqs[s].stream * 2 + 0x52));
    const int32_t t1 = std::min(seqs[s].kv_len, t0 + page_size);
    for (int32_t t = t0; t < t1; ++t) {
      const int64_t base =
          (first_page[s] + t / page_size) * page_size * row + (t % page_size) * row;
      for (int64_t e = 0; e < row; ++e) {
        store(kdata, dtype, base + e, unit_uniform(kkey, static_cast<uint64_t>(t) * row + e));
        store(vdata, dtype, base + e, unit_uniform(vkey, static_cast<uint64_t>(t) * row + e));
      }
    }
  });
}

void fill_token_rows(HostTensor& dst, int64_t dst_row, int64_t first_position, int64_t tokens,
                     uint64_t seed, uint64_t stream) {
  const int64_t row = dst.row_elems();
  const uint64_t key = mix(seed ^ mix(stream * 2 + 0x71));
  std::byte* data = dst.mutable_data();
  for (int64_t t = 0; t < tokens; ++t) {
    const uint64_t pos = static_cast<uint64_t>(first_position + t);
    for (int64_t e = 0; e < row; ++e) {
      store(data, dst.dtype(), (dst_row + t) * row + e, unit_uniform(key, pos * row + e));
    }
  }
}

}  // namespace nvdet
