#pragma once
// Hopper (sm_90a) building blocks shared by the warp-specialized kernels (the invariant GEMM in
// gemm_invariant_wgmma.cu and the tensor-core attention in attention_tc.cu): mbarriers, the bulk
// tensor copy and cp.async with mbarrier completion, shared-memory matrix descriptors for
// 128-byte-swizzled tiles, and the wgmma fences. None of them does arithmetic on data.
//
// Everything here is defined only where sm_90a code is generated (NVDET_SM90A_DEVICE); the kernels
// that use it compile to a trap elsewhere and are never launched there.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NVDET_SM90A_DEVICE 1
#endif

namespace nvdet::kernels {

#ifdef NVDET_SM90A_DEVICE

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarriers ----------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the barrier's phase with the given parity has completed. A fresh barrier is in
// phase 0, so waiting for parity 1 returns at once: producers wait on "empty" barriers with the
// parity of the previous pass.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// ---- clusters -----------------------------------------------------------------------------------

// Arrives on the barrier at `bar`'s offset in the shared memory of cluster CTA `rank` (which may
// be this CTA). The default (CTA-scope) release: the callers hand back a ring slot whose reads
// were wgmma operand reads already waited for, so nothing of theirs is left to order, and a
// cluster-scope release costs a GPU-wide memory barrier per arrival.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
// Every thread of every CTA of the cluster, like __syncthreads across the cluster: after it,
// barriers initialised before it by any CTA may be used by all of them; before a CTA exits, it
// keeps the other CTAs from signalling its shared memory after it is gone. The barrier is
// warp-aligned: the warp's lanes meet first (callers reach it from divergent branches).
__device__ __forceinline__ void cluster_sync() {
  __syncwarp();
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}

// ---- copies -------------------------------------------------------------------------------------

// Fetches a TMA descriptor (a __grid_constant__ kernel parameter) into the descriptor cache, so
// that the first copy through it does not wait for the descriptor's own load from memory.
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// A 3-d box (coordinates innermost first) into shared memory, completing on `bar` by its bytes:
// the GEMM producer's k tiles of one ring stage as one copy (encode_swizzled_stage_map).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// A 4-d box (coordinates innermost first) into shared memory, completing on `bar` by its bytes:
// the attention producer's page of one KV head's keys or values.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// The same copy into the same shared-memory offset of every CTA of the cluster in `cta_mask`,
// each of which is signalled (complete_tx) on its own barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map,
                                                      uint32_t bar, int c0, int c1,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::"
      "cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}

// A box of shared memory (laid out as the map's box, here 128-byte swizzled) -> the global tensor
// at element coordinates (c0, c1), as this thread's next bulk group: the parts of the box past the
// tensor's bounds are not written. The shared memory must not change until the group has been
// waited for with bulk_wait_read; the writes that filled it must be ordered before it by
// fence_proxy_async (every writing thread) and a barrier.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1)
      : "memory");
}
// Closes this thread's bulk stores issued so far into one group.
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's bulk store groups are still reading shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until at most N of this thread's bulk store groups are incomplete (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

// 16 bytes global -> shared, bypassing L1, or 16 zero bytes when `zero` (src is then not read):
// cp.async's ignore-src predicate, which needs no byte count computed per copy.
__device__ __forceinline__ void cp_async16_or_zero(uint32_t dst, const void* src, bool zero) {
  asm volatile(
      "{\n.reg .pred z;\nsetp.ne.b32 z, %2, 0;\ncp.async.cg.shared.global [%0], [%1], 16, z;\n}\n" ::"r"(dst),
      "l"(src), "r"(static_cast<int>(zero))
      : "memory");
}
// 4 bytes global -> shared through L1 (cp.async copies under 16 bytes take the .ca path).
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
// Arrives on `bar` once every cp.async this thread issued before has landed (the arrival counts
// towards the barrier's expected count: no pending-count increment).
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Waits until every cp.async this thread issued has landed.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
// Orders this thread's view of shared memory written by ordinary stores or cp.async before the
// async proxy (wgmma operand reads) that it issues next.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Barrier among `threads` threads (a multiple of 32) with id 1..15 (0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- shared-memory matrix descriptors ------------------------------------------------------------

// A 128-byte-swizzled operand (8-row atoms of 128-byte rows, 1024 bytes each, 1024-aligned)
// starting at `addr`. K-major (the reduction dimension contiguous): `sbo` is the distance between
// 8-row atoms along M/N and `addr` may point inside an atom's row at the k offset; `lbo` unused.
// MN-major (M/N contiguous, the transposed-B form): `lbo` is the distance between 64-element
// column blocks along N, `sbo` between 8-row atoms along K.
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  d |= static_cast<uint64_t>(1) << 62;  // 128-byte swizzle
  return d;
}
// The K-major form with 8-row atoms packed 1024 bytes apart (the layout TMA writes for a box of
// 64 16-bit elements per row).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return smem_desc_sw128(addr, 16, 1024);
}

// A shared-memory descriptor moved on by `units` x 16 bytes: its start-address field (bits 0-13,
// the address >> 4) takes the sum without a carry, as shared-memory addresses stay below 2^18.
// Only the low word is added to: the consumers' loops build every descriptor this way, from slot
// 0's, rather than encoding each one anew (in the FP8 GEMM the encoding's masks and shifts were
// about a third of the k loop's instructions, and the loop was issue-bound: ncu, H100).
__device__ __forceinline__ uint64_t desc_advance(uint64_t desc, uint32_t units) {
  const uint32_t lo = static_cast<uint32_t>(desc) + units;
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

// A place in the mbarrier ring: the slot, and the parity of the slot's current fill (a pass over
// the ring flips it), advanced without dividing by STAGES.
template <int STAGES>
struct RingCursor {
  int slot = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++slot == STAGES) {
      slot = 0;
      phase ^= 1u;
    }
  }
};

// ---- wgmma ordering -----------------------------------------------------------------------------

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins the accumulator registers in program order around wgmma fences and waits: the compiler
// sees wgmma's outputs as ready at issue, so without this it could read them before the wait.
template <int R>
__device__ __forceinline__ void fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R>
__device__ __forceinline__ void fence_operands(uint32_t (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
// acc = 0 one register at a time (a plain loop of stores can be turned into a memset of a stack
// copy of the array).
template <int R>
__device__ __forceinline__ void zero_accumulators(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("mov.b32 %0, 0;\n" : "=f"(d[i]));
}

#endif  // NVDET_SM90A_DEVICE

}  // namespace nvdet::kernels
