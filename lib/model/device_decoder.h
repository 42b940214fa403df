#pragma once
// The device-resident engine of the decoder (decoder.h): the model's weights resident on the
// device (uploaded once per process, shared by every backend and context that decodes them),
// each layer's paged KV cache allocated and written on the device, every op of a pass on the
// device - the backend's own GEMM, RMSNorm and attention kernels through DeviceDecodeOps, and
// kernels/decode_elementwise.cuh for the embedding gather, RoPE, KV write, residual adds, SwiGLU
// and greedy argmax. Per pass only the token ids and positions go up and the greedy tokens, the
// logits rows asked for and (when tracing) the watched rows of each op come back.
//
// Before allocating anything it estimates what the decode needs (weights not yet resident, KV
// cache, activations, workspace) and refuses with Error(kRuntime) - one sentence, needed vs free
// GiB - when the device does not have it free.
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/backend/device_decode_ops.h"
#include "lib/model/decode_pass.h"
#include "lib/model/decoder.h"
#include "lib/model/kv_cache.h"
#include "lib/model/model_weights.h"

namespace nvdet {

// Device bytes of one decode, by part.
struct DeviceDecodeFootprint {
  double weights = 0;      // weights still to upload (those resident already count nothing)
  double kv_cache = 0;     // K and V pages of every layer
  double activations = 0;  // one pass's tensors at the largest pass
  double workspace = 0;    // cuBLASLt and split-KV attention workspaces, an upper estimate
  double trace = 0;        // staging of the traced rows (when tracing)
  double total() const { return weights + kv_cache + activations + workspace + trace; }
};

// capacity[s]: the most tokens sequence s holds; max_rows: the most rows of any pass.
DeviceDecodeFootprint device_decode_footprint(const ModelWeights& w,
                                              const std::vector<int32_t>& capacity,
                                              int64_t max_rows, int32_t page_size,
                                              double weights_to_upload, bool tracing);

// The same for a cache of `total_pages` pages and passes of at most max_heads head rows.
DeviceDecodeFootprint device_decode_footprint(const ModelWeights& w, double total_pages,
                                              int32_t page_size, int64_t max_heads,
                                              int64_t max_rows, double weights_to_upload,
                                              bool tracing);

// Device bytes the traced rows of a pass are staged in before one download: 256 MiB, or the
// largest single traced tensor when that is larger.
double trace_staging_bytes(const ModelWeights& w, int64_t max_rows, int64_t batch);

// Every weight tensor of the model that has storage (absent biases and norms are left out).
std::vector<const HostTensor*> weight_tensors(const ModelWeights& w);

std::unique_ptr<PassEngine> make_device_engine(DeviceDecodeOps& ops, const ModelWeights& w,
                                               const std::vector<int32_t>& capacity,
                                               int64_t max_rows, const DecodeOptions& options,
                                               PassTrace& trace, RunNotes* notes);

// The engine of a serving replay (traffic_replay.h): the KV pages handed out by `pages` (its
// total is allocated per layer), passes of up to max_rows rows, of which up to max_heads produce
// logits, and serving steps that hold decode rows and prompt chunks together (Pass::decode_seqs:
// two attention calls, each on its own rows, every other op over all rows at once).
std::unique_ptr<PassEngine> make_serving_device_engine(DeviceDecodeOps& ops, const ModelWeights& w,
                                                       std::shared_ptr<const KvPageMap> pages,
                                                       int64_t max_rows, int64_t max_heads,
                                                       PassTrace& trace, RunNotes* notes);

}  // namespace nvdet
