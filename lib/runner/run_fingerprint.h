#pragma once
// What defines a run, for the two checks that join results made apart: the merge of a sharded
// sweep's reports (every shard must have computed the same thing) and a manifest verification
// (the recorded hashes must come from the same inputs, or a changed hash says nothing about the
// kernels). A fingerprint (RunFingerprint, lib/runner/audit_result.h) is a map field -> value,
// each field named as the scenario names it, so that a refusal says which one differs:
//
//   op, dtype, seed, shape.n, model.sampling.temperature, ...
//                 every key of the resolved scenario (defaults filled in, --axis applied) that
//                 changes what a context computes. Not the sweep, requests, repeat or backends:
//                 a verification may run a part of them, and the merge compares them as such.
//   inputs.checkpoint   XXH3-128 of the checkpoint's files (config.json, the safetensors index,
//                 every .safetensors, in name order), so that one weight changed by 1% shows;
//   inputs.prompts      XXH3-128 of the prompts' token ids (inline or from prompts_file);
//   build.*       nvdet's version, its compiled architectures and floating-point flags. Shards
//                 must agree on them; a manifest leaves them out (it is verified on other builds
//                 on purpose, and says what changed in the environment instead).
#include <string>

#include "lib/core/system_info.h"
#include "lib/runner/audit_result.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

// The scenario's fields and its inputs' hashes (reads the checkpoint's files: a real checkpoint
// is read once more, at disk speed). Throws kBadInput for a checkpoint file it cannot read.
RunFingerprint run_fingerprint(const Scenario& s);

// A checkpoint whose tensors are in a dtype the scenario's cannot hold exactly (F32 weights
// audited in bf16 or fp16, BF16 in fp16, F16 in bf16) is rounded as it is read: the note that
// says so, "scenario 'x': the checkpoint's F32 tensors are rounded to bf16 ...", for the command
// to print before it runs; "" otherwise (a synthetic model, matching dtypes, an unreadable
// header: the loader's to refuse).
std::string checkpoint_rounding_note(const Scenario& s);

// The build's fields (build.*), from the system facts a result records.
RunFingerprint build_fingerprint(const SystemInfo& system);

// Whether a field is one of the build's (left out of manifests).
bool is_build_field(const std::string& field);

// The first field whose values differ between `a` and `b` (or that one lacks), in the words of a
// refusal: "shape.n (256 in A, 257 in B)", naming the sides `a_name` and `b_name`; "" when they
// agree. Inputs are named for people ("the checkpoint's contents").
std::string fingerprint_difference(const RunFingerprint& a, const RunFingerprint& b,
                                   const std::string& a_name, const std::string& b_name);

}  // namespace nvdet
