// Does compute-sanitizer's racecheck see cp.async.mbarrier.arrive as ordering the copies it tracks
// before the waiting threads' reads? One CTA of two warps; warp 0 fills a shared buffer, warp 1
// waits on an mbarrier and reads it, over several rounds of a two-slot ring (so that the slot's
// reuse, a write after a read, is ordered by a second barrier). The form of warp 0's hand-off:
//   0: cp.async, then cp.async.mbarrier.arrive.noinc (the FP8 GEMM's scale warps)
//   1: cp.async, cp.async.wait_all, then mbarrier.arrive
//   2: st.shared, then mbarrier.arrive
// and of warp 1's reads and release of the slot (forms 0-2: each lane reads the value its own lane
// of warp 0 wrote and arrives on the slot's empty barrier):
//   3: form 0's hand-off; each lane reads another lane's value, and every lane arrives
//   4: form 0's hand-off; each lane reads another lane's value, then __syncwarp and lane 0 alone
//      arrives (the FP8 GEMM's consumer warps after a promotion)
//   5: form 1's hand-off with form 4's release
// Every form is correct under the PTX memory model; run each under racecheck:
//   nvcc -arch=sm_90a -O2 -o probe cp_async_arrive_probe.cu
//   compute-sanitizer --tool racecheck ./probe 0   (then 1 to 5)
// The probe checks its output against the expected values and says so.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

constexpr int kRounds = 8, kSlots = 2;

// The lane of warp 0 whose value lane `lane` of warp 1 reads: its own in forms 0-2, another
// (a fixed permutation) from form 3 on.
__host__ __device__ inline int source_lane(int form, int lane) {
  return form >= 3 ? (lane * 7 + 3) % 32 : lane;
}

__device__ __forceinline__ uint32_t smem(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar)
               : "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra "
      "W;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

__global__ void probe(const float* in, float* out, int form) {
  __shared__ alignas(16) float buf[kSlots][32];
  __shared__ alignas(8) uint64_t full[kSlots], empty[kSlots];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSlots; ++s) {
      bar_init(smem(&full[s]), 32);
      bar_init(smem(&empty[s]), form >= 4 ? 1 : 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  for (int r = 0; r < kRounds; ++r) {
    const int s = r % kSlots;
    const uint32_t phase = (r / kSlots) & 1;
    if (warp == 0) {
      bar_wait(smem(&empty[s]), phase ^ 1u);
      const float* src = in + r * 32 + lane;
      const uint32_t dst = smem(&buf[s][lane]);
      const int hand_off = form >= 3 ? (form == 5 ? 1 : 0) : form;
      if (hand_off == 2) {
        buf[s][lane] = *src;
        bar_arrive(smem(&full[s]));
      } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
        if (hand_off == 0) {
          asm volatile(
              "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem(&full[s]))
              : "memory");
        } else {
          asm volatile("cp.async.wait_all;\n" ::: "memory");
          bar_arrive(smem(&full[s]));
        }
      }
    } else {
      bar_wait(smem(&full[s]), phase);
      out[r * 32 + lane] = buf[s][source_lane(form, lane)] * 2.0f;
      if (form >= 4) {
        __syncwarp();
        if (lane == 0) bar_arrive(smem(&empty[s]));
      } else {
        bar_arrive(smem(&empty[s]));
      }
    }
  }
  if (warp == 0) asm volatile("cp.async.wait_all;\n" ::: "memory");
}

int main(int argc, char** argv) {
  const int form = argc > 1 ? std::atoi(argv[1]) : 0;
  if (form < 0 || form > 5) {
    std::fprintf(stderr, "usage: probe 0|1|2|3|4|5\n");
    return 2;
  }
  const int n = kRounds * 32;
  float host[n], got[n];
  for (int i = 0; i < n; ++i) host[i] = 0.5f * static_cast<float>((i * 37) % 101) - 7.0f;
  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "no device memory\n");
    return 1;
  }
  cudaMemcpy(in, host, sizeof(host), cudaMemcpyHostToDevice);
  probe<<<1, 64>>>(in, out, form);
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(err));
    return 1;
  }
  cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    wrong += got[i] != 2.0f * host[(i / 32) * 32 + source_lane(form, i % 32)];
  }
  static const char* names[] = {"cp.async + cp.async.mbarrier.arrive.noinc",
                                "cp.async + cp.async.wait_all + mbarrier.arrive",
                                "st.shared + mbarrier.arrive",
                                "form 0, reads across lanes, every lane releases",
                                "form 0, reads across lanes, __syncwarp and lane 0 releases",
                                "form 1, reads across lanes, __syncwarp and lane 0 releases"};
  std::printf("form %d (%s): %d of %d values wrong\n", form, names[form], wrong, n);
  return wrong == 0 ? 0 : 1;
}
