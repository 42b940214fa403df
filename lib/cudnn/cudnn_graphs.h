#pragma once
// cuDNN SDPA forward graphs over nvdet's paged KV cache (the backend keeps one per geometry).
// Only this file and cudnn_graphs.cpp see cudnn-frontend's headers.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "lib/core/tensor.h"

struct cudnnContext;

namespace nvdet::cudnn {

// Everything a graph depends on; two calls with equal geometry share one graph.
struct SdpaGeometry {
  DType dtype = DType::kBF16;
  int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t max_q_len = 0;  // padded query length (1 for decode)
  bool ragged_q = false;  // queries packed with per-sequence offsets (unequal q lengths)
  bool causal = false;    // bottom-right causal (prefill: the new tokens end the sequence)
  int64_t num_pages = 0, page_size = 0, max_pages_per_seq = 0;
  float scale = 0.0f;

  std::string key() const;
};

// Tensor uids of the graphs' variant packs.
enum SdpaUid : int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidO,
  kUidSeqLenQ,
  kUidSeqLenKv,
  kUidPageTableK,
  kUidPageTableV,
  kUidQOffset,
  kUidOOffset,
};

class SdpaGraph;  // owns a built cudnn-frontend graph

struct BuiltGraph {
  std::shared_ptr<SdpaGraph> graph;
  int64_t workspace_bytes = 0;
  std::string plan_name;  // the engine and knobs cuDNN's heuristic chose
};

// Builds the graph for `g`, with the plan cuDNN's heuristics rank first. Returns an empty `graph`
// and sets `why` when cuDNN refuses the configuration (not supported); throws Error(kRuntime) for
// other failures.
BuiltGraph build_sdpa_graph(cudnnContext* handle, const SdpaGeometry& g, std::string& why);

// A cuDNN handle (cuDNN must be loaded: cudnn_library.h). Throws Error(kRuntime) on failure.
cudnnContext* create_cudnn_handle();
void destroy_cudnn_handle(cudnnContext* handle);
// "1.32.0": the cudnn-frontend this nvdet was built with.
std::string cudnn_frontend_version_text();

// Runs the graph on `handle`'s stream. Throws Error(kRuntime) naming cuDNN's message on failure.
void execute_sdpa_graph(cudnnContext* handle, cudaStream_t stream, const SdpaGraph& graph,
                        std::unordered_map<int64_t, void*>& pointers, void* workspace);

}  // namespace nvdet::cudnn
