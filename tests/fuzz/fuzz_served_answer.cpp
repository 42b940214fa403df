// libFuzzer target: a server's answer to nvdet probe (see tests/fuzz/fuzz_entries.h).
#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nvdet::fuzz::served_answer(data, size);
  return 0;
}
