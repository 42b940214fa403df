// libFuzzer target: the manifest reader (see tests/fuzz/fuzz_entries.h).
#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nvdet::fuzz::manifest(data, size);
  return 0;
}
