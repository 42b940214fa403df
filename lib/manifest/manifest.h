#pragma once
// Golden manifests: the bitwise hashes of an audit (per scenario, backend, context, repeat and
// request, with one hash per token), and the device and software they came from. Recorded on
// one GPU (`nvdet audit --record FILE`), verified on another or after an upgrade
// (`nvdet audit --verify FILE`): a request whose hash moved is named with its first differing
// token, beside what changed in the environment ("driver 580.95 → 580.159").
//
// File format (JSON, written atomically; no timestamps, so re-recording an unchanged run gives an
// identical file that diffs cleanly in version control):
//   {"nvdet_manifest": 1,
//    "system": {same fields as the JSON report's "device"},
//    "dump_dir": "dumps",            // only when recorded with --dump; relative to the manifest
//    "scenarios": {"<name>": {"path", "op", "dtype", "out_dtype", "seed", "requests", "repeat",
//        "inputs": {"shape.n": "256", "inputs.checkpoint": "<32 hex>", ...},  // run_fingerprint
//        "backends": {"<backend>": "invariant" | "variant" | "report"},
//        "contexts": {"<context id>": <index>},
//        "entries": {"<backend>": {"<context id>": {"<repeat>": {"<request>":
//                     {"hash": "<32 hex>", "token_hashes": ["<32 hex>", ...],
//                      "completion": [ids]  // model scenarios only
//        }}}}}}}}
//
// Verification rule: a changed hash fails (exit 1) only for a backend whose expectation in the
// current run is `invariant` — its promise is bits that do not depend on the batch, and a golden
// manifest extends that promise across machines. Changes of `variant` and `report` backends
// (vendor libraries are free to change their kernels between versions) are reported, not
// failing. `strict` fails on any change and on missing or new entries too.
//
// Inputs: a manifest records what defined the run (lib/runner/run_fingerprint.h, the build's
// fields aside): the resolved scenario's keys and the checkpoint's and prompts' contents. A
// verification against other inputs (a weight changed by 1%, another prompt, another shape) is
// refused with exit 2 naming the field, instead of reporting every hash as a kernel's change.
// Manifests recorded before inputs were recorded are verified without this check.
//
// Cross-backend verification (`--verify-as RUN=RECORDED`, VerifyOptions::recorded_as): this run's
// backend RUN is compared with the hashes the manifest holds for backend RECORDED, e.g. a
// manifest recorded by cpu-portable in CI verified by cuda-portable on a GPU. Asking for it is a
// claim that the two produce the same bits, so any changed hash of RUN fails, whatever its
// expectation. RECORDED must be in the manifest's scenario and RUN in this audit (else bad input).
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/compare/compare.h"
#include "lib/core/system_info.h"
#include "lib/hash/hash.h"
#include "lib/runner/audit_result.h"
#include "lib/runner/verify_result.h"

namespace nvdet {

inline constexpr int kManifestVersion = 1;

struct ManifestEntry {
  Hash128 hash;
  std::vector<Hash128> token_hashes;
  std::vector<int32_t> completion;
};

struct ManifestContext {
  int index = 0;
  // repeat -> request -> entry
  std::map<int, std::map<int64_t, ManifestEntry>> repeats;
};

struct ManifestScenario {
  std::string name, path, op, dtype, out_dtype;
  uint64_t seed = 0;
  std::vector<int64_t> requests;
  int32_t repeat = 1;
  std::map<std::string, std::string> backends;  // name -> expectation
  std::map<std::string, int> contexts;          // context id -> index
  RunFingerprint inputs;  // what defined the run, the build's fields aside (empty: not recorded)
  // backend -> context id -> ...
  std::map<std::string, std::map<std::string, ManifestContext>> entries;
};

struct Manifest {
  int version = kManifestVersion;
  SystemInfo system;
  std::string dump_dir;  // as recorded (relative to the manifest's folder when it could be)
  std::map<std::string, ManifestScenario> scenarios;

  // Adds (or replaces) one audited scenario; the first result's system becomes the manifest's.
  void add(const AuditResult& result);
};

nlohmann::ordered_json manifest_to_json(const Manifest& m);
// `what` names the file in messages. Throws Error(kBadInput): "golden.json is not an nvdet
// manifest (it has no \"nvdet_manifest\" key)", "... version 2 ...", "... corrupt: ...".
Manifest manifest_from_json(const nlohmann::json& j, const std::string& what);

// Writes atomically. `dump_dir`, when not empty, is recorded relative to the manifest's folder.
void write_manifest(const std::filesystem::path& path, Manifest m,
                    const std::string& dump_dir = "");
// Throws kBadInput for a missing, truncated, corrupt or foreign file, naming it.
Manifest read_manifest(const std::filesystem::path& path);

struct VerifyOptions {
  bool strict = false;
  std::string dump_dir;  // this run's --dump folder ("" = none): enables element-wise detail
  std::map<std::string, std::string> recorded_as;  // this run's backend -> manifest backend
};

// The manifest's record of scenario `name`; throws kBadInput naming the file and the scenarios it
// holds when there is none (checked before an audit runs, so a wrong manifest fails fast).
const ManifestScenario& manifest_scenario(const Manifest& m, const std::string& manifest_path,
                                          const std::string& name);

// Throws kBadInput when the manifest recorded scenario `name` from other inputs than
// `fingerprint` (a run's, or run_fingerprint of the scenario about to run), naming the field.
void check_manifest_inputs(const Manifest& m, const std::string& manifest_path,
                           const std::string& name, const RunFingerprint& fingerprint);

// Compares one audit with its scenario in the manifest. Throws kBadInput when the manifest holds
// no such scenario or holds it with another op, dtype or seed (another scenario under that name),
// or from other inputs (check_manifest_inputs).
VerifyResult verify_manifest(const Manifest& m, const std::string& manifest_path,
                             const AuditResult& result, const VerifyOptions& options = {});

// "driver 580.95 → 580.159", "GPU NVIDIA H100 → NVIDIA H200", ...: the facts that differ.
std::vector<std::string> environment_changes(const SystemInfo& recorded, const SystemInfo& now);

// Parses "RUN=RECORDED" (the --verify-as value); throws kBadInput for another shape.
std::pair<std::string, std::string> parse_verify_as(const std::string& text);

// The verify result is part of the audit result (AuditResult::verify, lib/runner/verify_result.h);
// lib/report/verify_report.h renders it as text and JSON.

}  // namespace nvdet
