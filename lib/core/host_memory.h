#pragma once
// How much memory this machine has for nvdet: what input bounds and the audit's byte budget are
// measured against (a file or a scenario that needs more is refused before anything is allocated).
#include <cstdint>
#include <new>
#include <string>

namespace nvdet {

// MemAvailable from /proc/meminfo (the kernel's estimate of what can be allocated without
// swapping); sysconf's free physical pages where that is unreadable.
uint64_t available_host_bytes();
// MemTotal (sysconf's physical pages as a fallback).
uint64_t total_host_bytes();

// A host allocation that failed, saying what it was for and how large: the large allocations
// (tensors, the CPU backends' fp32 copies) throw it instead of a bare std::bad_alloc, and the
// audit adds the backend and context it happened in. It is a std::bad_alloc, so any handler of
// those sees it.
class HostAllocationError : public std::bad_alloc {
 public:
  // `what`: "a bf16 tensor of shape [65536, 131072]".
  HostAllocationError(const std::string& what, uint64_t bytes);
  const char* what() const noexcept override { return text_.c_str(); }  // "... (16.0 GiB)"

 private:
  std::string text_;
};

// "1.5 GiB", "512 B".
std::string binary_size_text(double bytes);

}  // namespace nvdet
