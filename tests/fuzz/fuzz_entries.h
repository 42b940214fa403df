#pragma once
// The fuzzed entry points, one per input reader. Each feeds its bytes to the reader the way nvdet
// does and accepts exactly one outcome besides success: nvdet::Error with kBadInput (or kRuntime
// where the input does not fit the machine). Any other exception escapes and any crash, hang or
// leak is the fuzzer's to report. The libFuzzer targets (tests/fuzz/fuzz_*.cpp) and the
// regression test over tests/fuzz/regressions/ (tests/fuzz_regression_test.cpp) share these.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nvdet::fuzz {

void scenario(const uint8_t* data, size_t size);
void npy(const uint8_t* data, size_t size);
void safetensors(const uint8_t* data, size_t size);
void manifest(const uint8_t* data, size_t size);
void checkpoint_config(const uint8_t* data, size_t size);
void audit_report(const uint8_t* data, size_t size);
// A server's answer to nvdet probe: the first byte chooses the API (odd: chat) and where a stream
// is cut in two; the rest is read as one JSON body and as an SSE stream, then hashed and compared.
void served_answer(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // also the folder name under tests/fuzz/regressions/ and corpus/
  void (*run)(const uint8_t*, size_t);
};
const std::vector<Target>& targets();

}  // namespace nvdet::fuzz
