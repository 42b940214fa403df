#pragma once
// `nvdet audit --dump DIR`: the probed requests' output tensors of every case, so that a
// divergence (or a manifest mismatch) can be inspected element by element later, and so that
// `nvdet diff` can compare them with tensors from other tools.
//
// Layout: DIR/<scenario>/<backend>/c<NNN>-<context id>.r<repeat>.safetensors, one safetensors file
// per (backend, context, repeat). Each holds "request-<id>" (the request's output, [tokens, ...]
// in the scenario's output dtype) and, for model scenarios, "request-<id>.completion" (I32, the
// generated token ids) and, with a scoring pass, "request-<id>.sampler_logprobs" and
// ".trainer_logprobs" (F64, each generated token's logprob at temperature 1 under the decode's and
// the scoring pass's logits), and for a sampled scenario ".sampling.sampler_logprobs" and
// ".sampling.trainer_logprobs" (at the sampling distribution). Its __metadata__ says what it is:
// nvdet_dump "1", scenario, backend, context, context_index, repeat. Names are made file-system
// safe: characters other than [A-Za-z0-9=,._-] become '_'.
#include <filesystem>
#include <string>
#include <vector>

#include "lib/runner/audit_result.h"
#include "lib/workloads/workload.h"

namespace nvdet {

std::string dump_tensor_name(int64_t request);  // "request-7"

// Where the case (backend, context, repeat) of `scenario` lies under `dir`.
std::filesystem::path dump_file_path(const std::filesystem::path& dir, const std::string& scenario,
                                     const std::string& backend, int context_index,
                                     const std::string& context_id, int repeat);

// Writes one case's outputs (creating the folders); atomic per file. Throws kBadInput when
// the folder cannot be written.
void write_case_dump(const std::filesystem::path& dir, const std::string& scenario,
                     const Context& context, const CaseRecord& c,
                     const std::vector<RequestOutput>& outputs);

}  // namespace nvdet
