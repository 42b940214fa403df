#pragma once
// How much memory this machine has for nvdet: what input bounds and the audit's byte budget are
// measured against (a file or a scenario that needs more is refused before anything is allocated).
#include <cstdint>

namespace nvdet {

// MemAvailable from /proc/meminfo (the kernel's estimate of what can be allocated without
// swapping); sysconf's free physical pages where that is unreadable.
uint64_t available_host_bytes();
// MemTotal (sysconf's physical pages as a fallback).
uint64_t total_host_bytes();

}  // namespace nvdet
