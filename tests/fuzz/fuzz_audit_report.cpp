// libFuzzer target: the JSON audit report reader and the writers `nvdet report` renders it with
// (see tests/fuzz/fuzz_entries.h).
#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nvdet::fuzz::audit_report(data, size);
  return 0;
}
