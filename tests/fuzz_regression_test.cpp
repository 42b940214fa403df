// Every input the fuzzers (tests/fuzz) ever found a crash, hang or leak with is committed under
// tests/fuzz/regressions/<target>/ and replayed here through the same entry point, in the normal
// suite; the seed corpora under tests/fuzz/corpus/<target>/ are replayed too, so an entry point
// that stopped accepting good input would show. An input that still crashes kills this test.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/fuzz/fuzz_entries.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

int replay(const fs::path& folder, void (*run)(const uint8_t*, size_t)) {
  int n = 0;
  if (!fs::is_directory(folder)) return 0;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (!e.is_regular_file()) continue;
    const std::string bytes = testing::read_file(e.path());
    const auto start = std::chrono::steady_clock::now();
    run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << e.path();
    ++n;
  }
  return n;
}

TEST(FuzzRegressions, EveryFoundInputIsHandledAndEverySeedStillRuns) {
  const fs::path root = testing::source_dir() / "tests/fuzz";
  int regressions = 0;
  for (const auto& t : fuzz::targets()) {
    regressions += replay(root / "regressions" / t.name, t.run);
    EXPECT_GT(replay(root / "corpus" / t.name, t.run), 0) << "no seeds for " << t.name;
  }
  EXPECT_GT(regressions, 0);  // at least the YAML inputs that made yaml-cpp 0.7 loop
}

}  // namespace
}  // namespace nvdet
