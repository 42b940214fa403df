#include "lib/cuda/device_context.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/l2_flush.cuh"
#include "kernels/stream_hold.cuh"
#include "lib/core/error.h"

namespace nvdet::cuda {

std::string no_device_reason(cudaError_t status) {
  if (status == cudaSuccess) return "none found";
  int driver = 0;
  if (status == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
      driver == 0) {
    return "no NVIDIA driver was found";
  }
  return cudaGetErrorString(status);
}

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so later calls are not poisoned by it
  if (status == cudaErrorMemoryAllocation) {
    throw_runtime_error(std::string("out of device memory during ") + what);
  }
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
    throw_runtime_error("no usable CUDA device (" + no_device_reason(status) + ") during " + what);
  }
  throw_runtime_error(std::string("CUDA error during ") + what + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) {
    throw_runtime_error(std::string("out of device memory during ") + what);
  }
  throw_runtime_error(std::string("cuBLAS error during ") + what + ": " +
                      cublasGetStatusString(status));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t st = cudaMalloc(&ptr_, bytes);
  if (st != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();
    if (st == cudaErrorMemoryAllocation) {
      throw_runtime_error("out of device memory allocating " + std::to_string(bytes >> 20) +
                          " MiB");
    }
    check(st, "cudaMalloc");
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

namespace {

// Every live context of the process, and the bytes their caches hold together. Each GPU backend
// has its own context; with a budget per context, four backends in one audit could cache the
// whole card between them and leave nothing for the next allocation.
struct CacheRegistry {
  std::mutex mutex;
  std::vector<DeviceContext*> contexts;
  size_t cached_bytes = 0;
};
CacheRegistry& cache_registry() {
  static CacheRegistry r;
  return r;
}

}  // namespace

DeviceContext::DeviceContext() {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw_runtime_error("no CUDA device is available (" + no_device_reason(st) +
                        "); GPU backends need one");
  }
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaGetDeviceProperties(&props_, device_), "cudaGetDeviceProperties");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  // Keep at most a quarter of the card's memory in cached copies of inputs, all contexts together.
  cache_budget_ = props_.totalGlobalMem / 4;
  CacheRegistry& r = cache_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.contexts.push_back(this);
}

DeviceContext::~DeviceContext() {
  {
    CacheRegistry& r = cache_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    while (!cache_.empty()) drop_least_recent();
    r.contexts.erase(std::remove(r.contexts.begin(), r.contexts.end(), this), r.contexts.end());
  }
  workspace_ = DeviceBuffer();
  counters_ = DeviceBuffer();
  l2_flush_buffer_ = DeviceBuffer();
  l2_flush_sink_ = DeviceBuffer();
  hold_timed_out_ = DeviceBuffer();
  if (hold_word_) cudaFreeHost(hold_word_);
  if (cublas_) cublasDestroy(cublas_);
  if (cublas_lt_) cublasLtDestroy(cublas_lt_);
  if (stream_) cudaStreamDestroy(stream_);
}

cublasHandle_t DeviceContext::cublas() {
  if (!cublas_) {
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
  }
  return cublas_;
}

cublasLtHandle_t DeviceContext::cublas_lt() {
  if (!cublas_lt_) check(cublasLtCreate(&cublas_lt_), "cublasLtCreate");
  return cublas_lt_;
}

void DeviceContext::drop_least_recent() {
  const size_t bytes = cache_.back().buffer.bytes();
  cache_bytes_ -= bytes;
  cache_registry().cached_bytes -= bytes;
  cache_.pop_back();
}

void DeviceContext::evict_until(size_t incoming, size_t keep_recent) {
  CacheRegistry& r = cache_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  // Other contexts' copies go first: backends run one call at a time, so none of their pointers
  // is in use while this context prepares its call. Then this context's least recently used.
  for (DeviceContext* other : r.contexts) {
    while (other != this && !other->cache_.empty() && r.cached_bytes + incoming > cache_budget_) {
      other->drop_least_recent();
    }
  }
  while (cache_.size() > keep_recent && r.cached_bytes + incoming > cache_budget_) {
    drop_least_recent();
  }
}

const void* DeviceContext::upload(const HostTensor& t) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->uid == t.uid() && it->purpose == 0 && it->buffer.bytes() == t.nbytes()) {
      cache_.splice(cache_.begin(), cache_, it);
      return cache_.front().buffer.get();
    }
  }
  evict_until(t.nbytes());
  DeviceBuffer buf(std::max<size_t>(t.nbytes(), 1));
  check(cudaMemcpyAsync(buf.get(), t.data(), t.nbytes(), cudaMemcpyHostToDevice, stream_),
        "copying an input to the device");
  check(cudaStreamSynchronize(stream_), "copying an input to the device");
  cache_bytes_ += buf.bytes();
  {
    CacheRegistry& r = cache_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.cached_bytes += buf.bytes();
  }
  cache_.push_front({t.uid(), std::move(buf)});
  return cache_.front().buffer.get();
}

const void* DeviceContext::derived(uint64_t uid, int purpose, size_t bytes,
                                   const std::function<cudaError_t(void*, cudaStream_t)>& fill,
                                   size_t keep_recent) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->uid == uid && it->purpose == purpose && it->buffer.bytes() == bytes) {
      cache_.splice(cache_.begin(), cache_, it);
      return cache_.front().buffer.get();
    }
  }
  evict_until(bytes, keep_recent);
  DeviceBuffer buf(std::max<size_t>(bytes, 1));
  check(fill(buf.get(), stream_), "making a derived copy on the device");
  cache_bytes_ += buf.bytes();
  {
    CacheRegistry& r = cache_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.cached_bytes += buf.bytes();
  }
  cache_.push_front({uid, std::move(buf), purpose});
  return cache_.front().buffer.get();
}

DeviceBuffer DeviceContext::upload_array(const void* data, size_t bytes) {
  DeviceBuffer buf(std::max<size_t>(bytes, 1));
  if (bytes) {
    check(cudaMemcpyAsync(buf.get(), data, bytes, cudaMemcpyHostToDevice, stream_),
          "copying an index array to the device");
    check(cudaStreamSynchronize(stream_), "copying an index array to the device");
  }
  return buf;
}

void* DeviceContext::workspace(size_t bytes) {
  if (workspace_.bytes() < bytes) {
    check(cudaStreamSynchronize(stream_), "growing the workspace");
    workspace_ = DeviceBuffer();
    workspace_ = DeviceBuffer(bytes);
  }
  return workspace_.get();
}

int32_t* DeviceContext::zeroed_counters(size_t count) {
  const size_t bytes = std::max<size_t>(count, 1) * sizeof(int32_t);
  if (counters_.bytes() < bytes) {
    check(cudaStreamSynchronize(stream_), "growing the counters");
    counters_ = DeviceBuffer();
    counters_ = DeviceBuffer(bytes);
    check(cudaMemsetAsync(counters_.get(), 0, bytes, stream_), "zeroing the counters");
    check(cudaStreamSynchronize(stream_), "zeroing the counters");
  }
  return counters_.as<int32_t>();
}

void DeviceContext::flush_l2() {
  if (l2_flush_buffer_.get() == nullptr) {
    // Twice the L2 (1 MiB steps; 128 MiB where the device does not say), seeded so that the
    // reads are of written memory.
    const size_t l2 = props_.l2CacheSize > 0 ? static_cast<size_t>(props_.l2CacheSize) : 64u << 20;
    const size_t bytes = (2 * l2 + (1u << 20) - 1) / (1u << 20) * (1u << 20);
    l2_flush_buffer_ = DeviceBuffer(bytes);
    l2_flush_sink_ = DeviceBuffer(16);
    check(cudaMemsetAsync(l2_flush_buffer_.get(), 0x5a, bytes, stream_), "seeding the L2 flush");
  }
  check(kernels::launch_l2_flush(l2_flush_buffer_.get(), l2_flush_buffer_.bytes(),
                                 static_cast<unsigned*>(l2_flush_sink_.get()), sm_count(), stream_),
        "the L2 flush");
}

HostTensor DeviceContext::download(const void* device_ptr, DType dtype,
                                   std::vector<int64_t> shape) {
  HostTensor out(dtype, std::move(shape));
  check(cudaMemcpyAsync(out.mutable_data(), device_ptr, out.nbytes(), cudaMemcpyDeviceToHost,
                        stream_),
        "copying a result to the host");
  check(cudaStreamSynchronize(stream_), "copying a result to the host");
  return out;
}

void DeviceContext::synchronize() { check(cudaStreamSynchronize(stream_), "a kernel"); }

HostTensor run_prepared(DeviceContext& ctx, PreparedCall& call) {
  check(call.launch(ctx.stream()), "launching the op");
  check(cudaGetLastError(), "launching the op");
  ctx.synchronize();
  return ctx.download(call.output, call.out_dtype, call.out_shape);
}

unsigned DeviceContext::hold_stream(double timeout_s) {
  if (hold_word_ == nullptr) {
    void* word = nullptr;
    check(cudaHostAlloc(&word, sizeof(unsigned), cudaHostAllocMapped), "allocating the hold word");
    hold_word_ = static_cast<unsigned*>(word);
    std::atomic_ref<unsigned>(*hold_word_).store(hold_generation_, std::memory_order_release);
    void* device_word = nullptr;
    check(cudaHostGetDevicePointer(&device_word, hold_word_, 0), "mapping the hold word");
    hold_device_word_ = static_cast<const volatile unsigned*>(device_word);
    hold_timed_out_ = DeviceBuffer(sizeof(unsigned));
    check(cudaMemsetAsync(hold_timed_out_.get(), 0, sizeof(unsigned), stream_),
          "zeroing the hold's flag");
  }
  const unsigned generation = ++hold_generation_;
  check(kernels::launch_stream_hold(hold_device_word_, generation,
                                    static_cast<unsigned long long>(timeout_s * 1e9),
                                    hold_timed_out_.as<unsigned>(), stream_),
        "holding the stream");
  return generation;
}

void DeviceContext::release_stream(unsigned generation) {
  if (hold_word_ != nullptr) {
    std::atomic_ref<unsigned>(*hold_word_).store(generation, std::memory_order_release);
  }
}

bool DeviceContext::hold_timed_out() {
  if (hold_word_ == nullptr) return false;
  unsigned flag = 0;
  check(
      cudaMemcpyAsync(&flag, hold_timed_out_.get(), sizeof(flag), cudaMemcpyDeviceToHost, stream_),
      "reading the hold's flag");
  check(cudaMemsetAsync(hold_timed_out_.get(), 0, sizeof(unsigned), stream_),
        "zeroing the hold's flag");
  check(cudaStreamSynchronize(stream_), "reading the hold's flag");
  return flag != 0;
}

namespace {

// Timed runs queued behind one hold: few enough that the launches of even a many-kernel call fit
// the device's queue while it is held, so that the host never blocks on a full queue.
constexpr int kRunsPerHold = 8;
// How long a hold waits for the host to queue its runs. A launch that waits for the device
// (a synchronize, a blocking copy) never returns while the hold stands; the hold then gives up
// after this, and the call is timed again without it.
constexpr double kHoldTimeoutS = 1.0;

// Each timed run's time in microseconds, from its events around its launch, queued behind a hold
// per kRunsPerHold runs when `hold`. Empty when a hold gave up.
std::vector<double> timed_runs(DeviceContext& ctx, PreparedCall& call, const TimingOptions& opts,
                               bool hold) {
  const int reps = opts.repetitions;
  std::vector<cudaEvent_t> events(2 * reps);
  for (auto& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
  auto destroy = [&] {
    for (auto& e : events) cudaEventDestroy(e);
  };
  unsigned generation = 0;  // the latest hold's, released on every way out
  try {
    for (int first = 0; first < reps; first += kRunsPerHold) {
      if (hold) generation = ctx.hold_stream(kHoldTimeoutS);
      for (int i = first; i < std::min(reps, first + kRunsPerHold); ++i) {
        if (opts.flush_l2) ctx.flush_l2();  // before the start event: not timed
        check(cudaEventRecord(events[2 * i], ctx.stream()), "cudaEventRecord");
        check(call.launch(ctx.stream()), "a timed launch");
        check(cudaEventRecord(events[2 * i + 1], ctx.stream()), "cudaEventRecord");
      }
      if (hold) ctx.release_stream(generation);
    }
    ctx.synchronize();
    if (hold && ctx.hold_timed_out()) {
      destroy();
      return {};
    }
    std::vector<double> us(reps);
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]), "cudaEventElapsedTime");
      us[i] = 1000.0 * ms;
    }
    destroy();
    return us;
  } catch (...) {
    // A launch that failed leaves its hold standing: release it, so that the stream does not wait
    // out the timeout and a later timing does not find this one's flag.
    if (generation != 0) ctx.release_stream(generation);
    destroy();
    throw;
  }
}

}  // namespace

Timing time_prepared(DeviceContext& ctx, PreparedCall& call, const TimingOptions& opts) {
  for (int i = 0; i < opts.warmup; ++i) check(call.launch(ctx.stream()), "a warm-up launch");
  ctx.synchronize();
  const bool hold = !opts.launch_gaps;
  std::vector<double> us = timed_runs(ctx, call, opts, hold);
  const bool queued = hold && !us.empty();
  if (us.empty()) us = timed_runs(ctx, call, opts, false);
  std::sort(us.begin(), us.end());
  return Timing{.median_us = us[us.size() / 2],
                .min_us = us.front(),
                .repetitions = opts.repetitions,
                .max_us = us.back(),
                .queued = queued};
}

}  // namespace nvdet::cuda
