// libFuzzer target: the scenario reader (see tests/fuzz/fuzz_entries.h).
#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nvdet::fuzz::scenario(data, size);
  return 0;
}
