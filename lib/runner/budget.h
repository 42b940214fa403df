#pragma once
// Budgets before work: after a scenario is loaded and before any context is expanded or any tensor
// allocated, nvdet counts the contexts (the product of the sweep's axis lengths, without building
// them) and estimates the bytes one context holds at its peak: inputs, outputs, weights, KV cache
// and fp32 workspaces, on the host and, where a GPU backend runs, on the device. Above a limit the
// audit is refused with one sentence that carries the numbers:
//   exit 2 (impossible input): more contexts than --max-contexts, or more bytes than any machine
//          has (kMaxPlausibleBytes);
//   exit 3 (does not fit here): more host bytes than --max-host-bytes (default: 3/4 of the
//          memory available now), or more device bytes than --max-device-bytes (default: the
//          device's free memory).
// The byte estimate is an upper bound taken with every axis at its largest value; it is meant to
// catch sizes that are off by orders of magnitude, not to predict the allocator.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/scenario/scenario.h"

namespace nvdet {

constexpr uint64_t kDefaultMaxContexts = 100000;
constexpr double kMaxPlausibleBytes = 281474976710656.0;  // 2^48 = 256 TiB
// What a run may compute (model scenarios), in all contexts together: far above every shipped
// scenario (a 32-layer 8B-shaped decode of 256 tokens at batch 64 over 9 contexts is 1e7 and
// 2e9), and a bound on what a scenario's prompts can make nvdet compute before it starts.
constexpr double kMaxTokenLayers = 1e10;
constexpr double kMaxAttentionPairLayers = 1e12;
// Contexts are numbered with an int: more is beyond any run (exit 2 whatever --max-contexts).
constexpr double kMaxIndexableContexts = 2147483647.0;

struct Budget {
  uint64_t max_contexts = kDefaultMaxContexts;  // --max-contexts
  std::optional<uint64_t> max_host_bytes;       // --max-host-bytes; default: 3/4 of available
  std::optional<uint64_t> max_device_bytes;     // --max-device-bytes; default: free device memory
};

struct ScenarioEstimate {
  double contexts = 0;  // product of the axis lengths (a double: 2^64 and beyond stay exact
                        // enough to be refused)
  std::string contexts_product;  // "65536 batch x 65536 tokens"
  double host_bytes = 0;         // peak of one context, with the context list and the CPU copies
  double device_bytes = 0;       // the same on the device when a GPU backend runs (0 otherwise)
  std::string breakdown;         // "inputs 16.0 GiB, outputs 256 KiB, workspace 256 KiB"
  // Model scenarios: what the whole run computes (0 otherwise), and it in words:
  // "about 4.2e+06 token-layers (2 layers x 16 sequences x 131088 tokens per context, 1 context)".
  double token_layers = 0, attention_pair_layers = 0;
  std::string work;
};

// Reads a checkpoint's config.json for model scenarios that name one (that is the only file it
// reads). Throws kBadInput when that config is bad. `cpu_backend`: whether a CPU backend runs
// (its fp32 copies count on the host). The host figure includes the list of contexts itself,
// which exists before the first context runs.
ScenarioEstimate estimate_scenario(const Scenario& s, bool cpu_backend = true);

// Throws Error(kBadInput) or Error(kRuntime) as described above. `gpu` says whether a GPU backend
// will run; `device_free` is the device's free memory where known.
void check_budget(const Scenario& s, const ScenarioEstimate& e, const Budget& b, bool gpu,
                  std::optional<uint64_t> device_free);

// "1.5 GiB", "512 B": how budget messages print sizes.
std::string byte_size_text(double bytes);
// "4096", "64K", "16M", "2G", "1T" (binary multiples) -> bytes; nullopt for anything else.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace nvdet
