#pragma once
// Holding a stream while the host queues timed launches behind it (`nvdet bench`): one thread
// spins until a host-written word reaches the hold's generation, so that every launch queued in
// the meantime starts the moment the one before it ends, and a run's CUDA events time the GPU's
// work alone, not the host's launch cost (as a serving stack's CUDA graphs see a kernel). A call
// that waits for the device inside its own launch would wait for the hold forever; the hold gives
// up after `timeout_ns` of the device's global timer and says so in `*timed_out`.
#include <cuda_runtime.h>

namespace nvdet::kernels {

// `release` is host memory the device can read (mapped pinned memory): the kernel returns once
// *release >= generation (wrap-around counted as reached), or after timeout_ns with
// *timed_out = 1 (device memory; never written otherwise).
cudaError_t launch_stream_hold(const volatile unsigned* release, unsigned generation,
                               unsigned long long timeout_ns, unsigned* timed_out,
                               cudaStream_t stream);

}  // namespace nvdet::kernels
