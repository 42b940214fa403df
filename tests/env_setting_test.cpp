// The environment's tuning settings (lib/core/env_setting.h): absent, empty or "auto" give the
// automatic choice, a value the variable takes gives that value, anything else is refused with
// exit 2, the variable's name and what it takes.
#include "lib/core/env_setting.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

#include "lib/core/error.h"

namespace nvdet {
namespace {

constexpr const char* kVar = "NVDET_TEST_ENV_SETTING";

// The message `read` refuses `value` with (exit 2 checked); "" when it accepts it.
template <typename Read>
std::string refusal(const char* value, Read read) {
  setenv(kVar, value, 1);
  try {
    read();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << value;
    return e.what();
  }
  return "";
}

enum class Pick { kAuto, kFused, kSplit };

Pick read_pick() {
  return env_word_setting(kVar, Pick::kAuto, {{"fused", Pick::kFused}, {"split", Pick::kSplit}});
}

TEST(EnvSetting, WordsGiveTheirValuesAndAutoTheAutomaticOne) {
  unsetenv(kVar);
  EXPECT_EQ(read_pick(), Pick::kAuto);
  for (const auto& [text, want] :
       {std::pair{"", Pick::kAuto}, std::pair{"auto", Pick::kAuto},
        std::pair{"fused", Pick::kFused}, std::pair{"split", Pick::kSplit}}) {
    setenv(kVar, text, 1);
    EXPECT_EQ(read_pick(), want) << text;
  }
  unsetenv(kVar);
}

TEST(EnvSetting, AnyOtherWordIsRefusedWithTheWordsItTakes) {
  for (const char* bad : {"Fused", "fused ", "splitx", "0", "AUTO"}) {
    EXPECT_EQ(refusal(bad, read_pick),
              std::string(kVar) + " must be auto, fused or split, got '" + bad + "'");
  }
  // One word: "auto or cp_async".
  const auto read_one = [] { return env_word_setting(kVar, true, {{"cp_async", false}}); };
  EXPECT_EQ(refusal("tma", read_one), std::string(kVar) + " must be auto or cp_async, got 'tma'");
  unsetenv(kVar);
}

TEST(EnvSetting, IntegersInRangeOrRefused) {
  const auto read = [] { return env_int_setting(kVar, 1, 64, 0); };
  unsetenv(kVar);
  EXPECT_EQ(read(), 0);
  setenv(kVar, "auto", 1);
  EXPECT_EQ(read(), 0);
  setenv(kVar, "64", 1);
  EXPECT_EQ(read(), 64);
  for (const char* bad : {"0", "65", "-1", "7x", "seven", " 7"}) {
    EXPECT_EQ(refusal(bad, read),
              std::string(kVar) + " must be auto or an integer from 1 to 64, got '" + bad + "'");
  }
  unsetenv(kVar);
}

}  // namespace
}  // namespace nvdet
