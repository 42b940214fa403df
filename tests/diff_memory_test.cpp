// `nvdet diff` on a safetensors file of thousands of tiny tensors: memory must grow with the file,
// not with the square of its tensor count. Each tensor's loader once held its own copy of the
// whole file object (its index of every tensor), so 2,000 tensors cost about 2 GB; the limit here
// is far below that and far above what the file itself needs.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "lib/core/seeded_random.h"
#include "lib/report/tensor_diff.h"
#include "lib/tensorio/safetensors.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // KiB on Linux
}

TEST(DiffMemory, ManyTinyTensorsStayLinear) {
  constexpr int kTensors = 2000;
  const auto dir = testing::make_temp_dir("diff-mem");
  std::vector<AnyTensor> tensors(kTensors);
  std::vector<std::pair<std::string, const AnyTensor*>> items;
  for (int i = 0; i < kTensors; ++i) {
    AnyTensor& t = tensors[i];
    t.type = ElemType::kF32;
    t.shape = {2};
    t.bytes.resize(8);
    for (int b = 0; b < 8; ++b)
      t.bytes[b] =
          static_cast<std::byte>(splitmix64(0xd1ff0000ull + static_cast<uint64_t>(i * 8 + b)));
    items.emplace_back("layer." + std::to_string(i) + ".w", &t);
  }
  const auto file = dir / "many.safetensors";
  write_safetensors_any(file, items);
  tensors.clear();
  items.clear();

  const long before = peak_rss_kib();
  const DiffResult r = diff_tensor_files(file, file, DiffOptions{});
  const long grown_kib = peak_rss_kib() - before;

  ASSERT_EQ(r.tensors.size(), static_cast<size_t>(kTensors));
  EXPECT_TRUE(r.identical);
  // The file is ~200 KB; the result holds one small record per tensor. 128 MiB leaves room for
  // allocator slack and sanitizer builds while the old per-tensor copies needed ~2 GB.
  EXPECT_LT(grown_kib, 128 * 1024) << "peak RSS grew by " << grown_kib << " KiB";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nvdet
