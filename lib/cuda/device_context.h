#pragma once
// Device-side plumbing shared by the CUDA backends: error checks that turn CUDA failures into
// nvdet errors (exit 3), owning device buffers, a cache of uploaded tensors keyed by
// HostTensor::uid (weights are uploaded once per sweep), the stream and library handles.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/tensor.h"

namespace nvdet::cuda {

// Throws Error(kRuntime) naming `what` when `status` is not success; out-of-memory gets its own
// sentence.
void check(cudaError_t status, const char* what);
// Why cudaGetDeviceCount found no device, in words: without any NVIDIA driver the runtime says
// "CUDA driver version is insufficient", which would send a user looking for a driver update.
std::string no_device_reason(cudaError_t status);
void check(cublasStatus_t status, const char* what);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // throws kRuntime on out of memory
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class DeviceContext {
 public:
  DeviceContext();  // selects device 0 (CUDA_VISIBLE_DEVICES picks another); throws without one
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas();       // created on first use, bound to stream()
  cublasLtHandle_t cublas_lt();  // created on first use
  const cudaDeviceProp& props() const { return props_; }
  int sm_count() const { return props_.multiProcessorCount; }

  // Device copy of a host tensor, cached by uid (least recently used copies are dropped past
  // a byte budget shared by every context of the process, other contexts' copies first). The
  // pointer stays valid until the next call to upload() on this context.
  const void* upload(const HostTensor& t);
  // A buffer derived from a tensor that does not change (the invariant GEMM's staged copy of a
  // weight), cached beside the uploads under (uid, purpose) and made by `fill` on stream() on
  // first use. A tensor that changes gets a new uid, so a stale copy is never found. The pointer
  // stays valid as upload()'s does; making it never drops this context's `keep_recent` most
  // recently used copies (the inputs of the call being prepared).
  const void* derived(uint64_t uid, int purpose, size_t bytes,
                      const std::function<cudaError_t(void*, cudaStream_t)>& fill,
                      size_t keep_recent = 3);
  // Uploads a small host array (page tables, lengths) into a fresh buffer.
  DeviceBuffer upload_array(const void* data, size_t bytes);
  // A scratch buffer of at least `bytes`, reused across calls (e.g. split-K partials).
  void* workspace(size_t bytes);
  // At least `count` int32 counters that read zero: a kernel that takes them leaves them zero
  // (kernels/attention_tc.cuh, merge_count), so they are zeroed once, when the buffer is made.
  int32_t* zeroed_counters(size_t count);
  // Enqueues on stream() a read of a buffer twice the L2's size (kernels/l2_flush.cuh), so that
  // the next launch finds none of its operands in L2. The buffer is made on first use.
  void flush_l2();
  // Holds stream() while the host queues timed launches behind it (kernels/stream_hold.cuh), so
  // that they run back to back however long the host takes to launch them: hold_stream()
  // enqueues the hold and returns its generation, release_stream() lets every hold up to that
  // generation go. A hold that waited `timeout_s` gives up; hold_timed_out() (after a
  // synchronize) says whether one did since the last call, and clears that.
  unsigned hold_stream(double timeout_s);
  void release_stream(unsigned generation);
  bool hold_timed_out();

  HostTensor download(const void* device_ptr, DType dtype, std::vector<int64_t> shape);
  void synchronize();

 private:
  struct CachedTensor {
    uint64_t uid;
    DeviceBuffer buffer;
    int purpose = 0;  // 0: the tensor's own bytes (upload); else derived()'s purpose
  };
  void evict_until(size_t incoming_bytes, size_t keep_recent = 0);
  void drop_least_recent();  // callers hold the registry lock

  int device_ = 0;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublas_lt_ = nullptr;
  std::list<CachedTensor> cache_;  // front = most recently used
  size_t cache_bytes_ = 0;
  size_t cache_budget_ = 0;
  DeviceBuffer workspace_;
  DeviceBuffer counters_;
  DeviceBuffer l2_flush_buffer_, l2_flush_sink_;
  unsigned* hold_word_ = nullptr;  // mapped pinned memory the hold reads; made on first use
  const volatile unsigned* hold_device_word_ = nullptr;  // hold_word_ as the device sees it
  unsigned hold_generation_ = 0;
  DeviceBuffer hold_timed_out_;
};

// What a CUDA backend computes for an op, as a closure over resident device buffers, so that the
// same call can be run once (audit) or timed many times (bench).
struct PreparedCall {
  std::function<cudaError_t(cudaStream_t)> launch;  // enqueues all kernels of the op
  const void* output = nullptr;                     // device pointer written by launch
  DType out_dtype = DType::kFP32;
  std::vector<int64_t> out_shape;
  std::vector<DeviceBuffer> owned;  // buffers the launch uses (kept alive)
};

// Runs the call once and returns its output.
HostTensor run_prepared(DeviceContext& ctx, PreparedCall& call);
// Median, minimum and maximum device time over opts.repetitions launches after opts.warmup,
// with CUDA events: every GPU backend's Backend::time(). opts.flush_l2: ctx.flush_l2() before
// each timed launch, before its start event. Unless opts.launch_gaps, the timed launches are
// queued a few at a time behind ctx.hold_stream(), so that each one's events time the GPU's work
// and not the host's launch cost; a call whose launch waits for the device (the hold then gives
// up) is timed again with each launch as the GPU reaches it, and Timing::queued says which.
Timing time_prepared(DeviceContext& ctx, PreparedCall& call, const TimingOptions& opts);

}  // namespace nvdet::cuda
