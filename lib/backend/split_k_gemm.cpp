#include "lib/backend/split_k_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/core/error.h"

namespace nvdet {
namespace {

// Bounds the cache: a sweep over one model's experts stays far below it; past it, start over.
constexpr size_t kMaxCachedSlices = 1 << 14;

}  // namespace

HostTensor k_slice(const HostTensor& t, int64_t k0, int64_t k1) {
  const int64_t rows = t.dim(0), k = t.dim(1);
  const size_t elem = dtype_size(t.dtype());
  HostTensor out(t.dtype(), {rows, k1 - k0});
  std::byte* dst = out.mutable_data();
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + static_cast<size_t>(r * (k1 - k0)) * elem,
                t.data() + static_cast<size_t>(r * k + k0) * elem,
                static_cast<size_t>(k1 - k0) * elem);
  }
  return out;
}

const HostTensor& KSliceCache::slice(const HostTensor& w, int64_t k0, int64_t k1) {
  if (slices_.size() >= kMaxCachedSlices) slices_.clear();
  const auto key = std::make_tuple(w.uid(), k0, k1);
  auto it = slices_.find(key);
  if (it == slices_.end()) it = slices_.emplace(key, k_slice(w, k0, k1)).first;
  return it->second;
}

HostTensor gemm_in_k_splits(const GemmArgs& args, int64_t split_len,
                            const std::function<HostTensor(const GemmArgs&)>& gemm_fp32,
                            KSliceCache* weight_slices) {
  if (args.is_fp8() || args.w == nullptr) {
    throw_input_error("a split-K plan around a GEMM takes 16- and 32-bit operands only");
  }
  const int64_t m = args.a->dim(0), k = args.a->dim(1), n = args.w->dim(0);
  if (split_len < 1) throw_input_error(fmt::format("split-K: split length {} < 1", split_len));
  const int64_t parts = (k + split_len - 1) / split_len;
  int64_t padded = 1;
  while (padded < parts) padded *= 2;
  std::vector<std::vector<float>> partial(static_cast<size_t>(padded),
                                          std::vector<float>(static_cast<size_t>(m * n), 0.0f));
  for (int64_t s = 0; s < parts; ++s) {
    const int64_t k0 = s * split_len, k1 = std::min(k, k0 + split_len);
    HostTensor a_part = k_slice(*args.a, k0, k1);
    HostTensor w_owned;
    const HostTensor* w_part = nullptr;
    if (weight_slices) {
      w_part = &weight_slices->slice(*args.w, k0, k1);
    } else {
      w_owned = k_slice(*args.w, k0, k1);
      w_part = &w_owned;
    }
    const HostTensor p =
        gemm_fp32(GemmArgs{&a_part, w_part, nullptr, DType::kFP32, args.allow_tf32});
    for (int64_t i = 0; i < m * n; ++i)
      partial[static_cast<size_t>(s)][static_cast<size_t>(i)] = p.get(i);
  }
  HostTensor out(args.out_dtype, {m, n});
  for (int64_t i = 0; i < m * n; ++i) {
    for (int64_t w = padded / 2; w >= 1; w /= 2) {
      for (int64_t j = 0; j < w; ++j) {
        partial[static_cast<size_t>(j)][static_cast<size_t>(i)] =
            partial[static_cast<size_t>(j)][static_cast<size_t>(i)] +
            partial[static_cast<size_t>(j + w)][static_cast<size_t>(i)];
      }
    }
    const float total = partial[0][static_cast<size_t>(i)];
    out.set(i, args.bias ? total + args.bias->get(i % n) : total);
  }
  return out;
}

}  // namespace nvdet
