#pragma once
// Greedy decoding of a batch of prompts through a Llama/Mistral/Qwen-style decoder whose
// reductions all run on a Backend: RMSNorm (rmsnorm, and Qwen3's per-head q/k norms), projections
// and LM head (gemm), attention over a paged KV cache (attention_prefill for prompt chunks,
// attention_decode for generated tokens). Embedding, RoPE, residual adds and SwiGLU are elementwise
// and batch-invariant by construction (host_ops.h, kernels/decode_elementwise.cuh). So the only way
// a sequence's bits can depend on its neighbours is through the backend's kernels, which is what
// the audit is after.
//
// Where it runs: a backend that offers device_decode_ops() (lib/backend/device_decode_ops.h) gets
// the device-resident engine (device_decoder.h): weights uploaded once per process and shared by
// every backend, the paged KV cache and every op of a step on the device, with only the greedy
// tokens, the watched sequences' logits rows and (when tracing) their rows of each op coming back.
// Every other backend gets the host engine below, one Backend::run call per op. Both engines
// compute the same ops in the same order with the same kernels, and the elementwise steps with the
// same IEEE operations, so their results are bitwise equal (tests/gpu_device_decoder_test.cpp).
//
// Schedule (as a serving engine runs it): chunked prefill first, every sequence that still has
// prompt tokens contributing its next `prefill_chunk` tokens to one pass (one GEMM / RMSNorm /
// attention_prefill call per layer for the whole batch); the LM head runs on each sequence's last
// prompt token, giving step 0's logits. Then max_new_tokens - 1 decode steps, each one pass of one
// row per sequence (one attention_decode call per layer for the whole batch).
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/model/model_weights.h"
#include "lib/workloads/tp_gemm.h"
#include "lib/workloads/traffic_steps.h"

namespace nvdet {

class TokenSampler;  // lib/model/sampler.h

enum class DecodePath {
  kAuto,    // the device path where the backend offers it, unless NVDET_DEVICE_DECODE=0
  kHost,    // always the host path
  kDevice,  // the device path where the backend offers it
};

struct DecodeOptions {
  int32_t prefill_chunk = 0;  // prompt tokens per sequence per prefill pass; 0 = whole prompt
  int32_t page_size = 16;
  int32_t max_new_tokens = 16;
  // Backends that offer device_decode_ops() (the CUDA backends but cuda-portable and cudnn) can
  // decode with weights, KV cache and activations resident on the device, calling the same
  // kernels as their run(); its results are bitwise those of the host path, which every other
  // backend takes (tests/gpu_device_decoder_test.cpp shows it on the GPU). kAuto takes it where
  // offered; NVDET_DEVICE_DECODE=0 in the environment sends every backend down the host path
  // (to compare the two, or to rule the device path out); the tests force one path or the other.
  DecodePath path = DecodePath::kAuto;
  // Tensor parallel (tp_engine.h): tp > 1 shards every layer over simulated ranks on the host
  // path (the device-resident engine does not shard).
  TpOptions tp;
  // Called after each decode step with (steps done, max_new_tokens), for progress lines.
  std::function<void(int32_t done, int32_t total)> on_step;
  // Seeded sampling (model.sampling): with a sampler, every sequence's logits row comes back
  // each step and the sampler picks its token; sampling_ids[i] is prompt i's request id (its
  // per-request key). Without one, tokens are the greedy argmax.
  TokenSampler* sampler = nullptr;
  std::vector<uint64_t> sampling_ids;
  // An FP8 checkpoint (ModelWeights::fp8, README "FP8"): how its FP8 GEMMs quantise their
  // activations and accumulate (the format and weight scales are the weights' own). FP8 models
  // decode on the host engine, without tensor parallelism.
  Fp8Scheme fp8 = {};
};

// The ops of the trace, in the order one pass computes them. Layer -1 holds the ops outside the
// layers: embed before them, final_norm and logits after.
// qk_norm (Qwen3's per-head RMSNorm of queries and keys) appears only in models that have it.
// An MoE layer (ModelConfig::is_moe_layer) traces "router", then "expert<e>.gate_up" and
// "expert<e>.down" for e = 0 .. num_experts - 1, (Qwen2-MoE) "shared_expert.gate_up",
// "shared_expert.down" and "shared_expert_gate", then "combine" in place of gate_up, swiglu, down.
inline constexpr std::string_view kLayerOps[] = {
    "attn_norm",     "qkv",      "qk_norm", "rope",   "attention", "o_proj",
    "attn_residual", "mlp_norm", "gate_up", "swiglu", "down",      "mlp_residual"};

// Receives every intermediate tensor of the watched sequences: their rows only (step 0: the
// whole prompt's rows, gathered over the prefill chunks, so that traces of different chunkings
// line up; final_norm and logits: the last prompt token's row). Called in trace order: step by
// step; within a step embed, each layer's kLayerOps, final_norm, logits.
class TensorObserver {
 public:
  virtual ~TensorObserver() = default;
  virtual void observe(size_t watched, int32_t step, int32_t layer, std::string_view op,
                       const HostTensor& rows) = 0;
};

struct SequenceResult {
  HostTensor logits;                // fp32 [max_new_tokens, vocab]; row t chose completion[t]
  std::vector<int32_t> completion;  // max_new_tokens tokens (greedy, or the sampler's)
  // Under serving traffic (traffic_replay.h): a completion that EOS cut short (its logits rows
  // past it are zeros), and what shared each of the request's steps.
  std::vector<ProbeStep> steps;
};

// Decodes all `prompts` together and returns the results of the sequences listed in `watched`
// (indices into prompts), in that order. `notes` receives the backend's notes of layer 0's calls
// in the first prefill pass and the first decode step ("prefill.gate_up.split_k", ...).
// Throws kBadInput for token ids outside the vocabulary, a KV cache too large for the host, or
// sequences longer than the model's sliding window.
std::vector<SequenceResult> greedy_decode(Backend& backend, const ModelWeights& weights,
                                          const std::vector<std::vector<int32_t>>& prompts,
                                          const std::vector<size_t>& watched,
                                          const DecodeOptions& options, TensorObserver* observer,
                                          RunNotes* notes);

}  // namespace nvdet
