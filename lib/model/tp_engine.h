#pragma once
// The tensor-parallel host engine: the decoder's layers sharded over options.tp.tp ranks, all
// simulated on the one backend (README "Tensor parallel").
//
// Per layer, as Megatron-style tensor parallelism shards a Llama block:
//   attn_norm, mlp_norm   replicated: one backend call (every rank would compute the same rows);
//   qkv                   column-parallel by heads: rank r holds Q heads [r H/tp, (r+1) H/tp) and
//                         KV heads [r KV/tp, ...) (and their bias), one GEMM call per rank;
//   q/k norm, RoPE        per rank, on its heads;
//   attention             per rank: its own paged KV cache of KV/tp heads, one attention call
//                         with H/tp query heads;
//   o_proj, down          row-parallel: rank r's GEMM over its heads' / its intermediate slice's
//                         K columns, rank 0 with the bias, partials all-reduced (tp_gemm.h);
//   gate_up               column-parallel: rank r holds gate and up rows [r I/tp, ...);
//   SwiGLU, residuals     elementwise, per rank / replicated.
// The embedding, final norm and LM head are not sharded (a vocabulary-parallel head is a column
// split, which changes no bits). Traced tensors are gathered back into the unsharded layout, so
// that traces of different tp line up op by op.
#include <memory>
#include <vector>

#include "lib/model/decode_pass.h"
#include "lib/model/decoder.h"

namespace nvdet {

// Throws kBadInput when tp does not divide the heads, KV heads and intermediate size (what
// check_tp_degree checks before any context runs).
void check_tp_degree(const ModelConfig& c, int tp);
std::unique_ptr<PassEngine> make_tp_engine(Backend& backend, const ModelWeights& weights,
                                           const std::vector<int32_t>& capacity,
                                           const DecodeOptions& options, PassTrace& trace,
                                           RunNotes* notes);

}  // namespace nvdet
