#pragma once
// The real all-reduce: NCCL across the GPUs of this process. Declared here, below the workloads
// that call it; defined in lib/cuda/nccl_allreduce.cpp when the build found NCCL, else in
// lib/cuda/nccl_unavailable.cpp (which says why it cannot run), like the GPU backend list.
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/ops/allreduce.h"

namespace nvdet {

// Sums the ranks' tensors (same dtype and shape, bf16 / fp16 / fp32) with ncclAllReduce(ncclSum)
// in their dtype: tensor r goes to GPU r, one process drives GPUs 0 .. n-1 through one
// communicator per GPU from ncclCommInitAll, and rank 0's result comes back. Before the
// communicators are created nvdet exports settings' NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS and
// NCCL_MAX_NCHANNELS (those left empty / 0 are removed from the environment, so that NCCL chooses)
// and always NCCL_NVLS_ENABLE=0: NVLink SHARP reduces inside the NVSwitch, in an order and
// precision nvdet cannot simulate, and its multicast objects are a machine-wide resource nvdet
// never allocates. The communicators are kept for the next call with the same ranks and settings.
// notes: nccl_version, nccl_settings. Throws Error(kRuntime) without NCCL, with fewer GPUs than
// ranks, or when NCCL fails; Error(kBadInput) for mismatched tensors.
HostTensor nccl_all_reduce(const std::vector<const HostTensor*>& ranks,
                           const NcclSettings& settings, RunNotes* notes);

// How many GPUs nccl_all_reduce may use; 0 with the reason in `why_not` (no NCCL in the build, no
// GPU).
int nccl_device_count(std::string* why_not);

}  // namespace nvdet
