#pragma once
// The all-reduce of tensor parallelism, simulated on the host with the exact summation order and
// wire dtype of a collective library, so that a sharded GEMM's bits can be audited on one device.
//
// Every simulated sum is done in the wire dtype (the tensors' dtype): each add is a float add of
// two wire values rounded to nearest even at once, as NCCL's bf16 / fp16 sum does (it never
// accumulates in fp32). Orders, for `ranks` = n tensors of `count` elements each:
//
//  ring   reduce-scatter then all-gather over the ring 0 -> 1 -> ... -> n-1 -> 0 on every
//         channel. The message is cut into loops of channels x n chunks: loop L covers
//         [L * C * n * cs, ...) where cs = min(chunk_elems, round_up(ceil(remaining / (C * n)),
//         align_elems)) for the elements that remain; channel b of the loop takes n consecutive
//         chunks of cs elements, chunk j of them ends its reduction on rank j, so its sum starts
//         at rank (j + 1) mod n and walks the ring: s = x[j+1]; s = s + x[j+2]; ...; s = s + x[j]
//         (indices mod n). Slices pipeline one chunk's transfer and never change which rank
//         starts it, so they are not modelled. The all-gather copies each chunk's sum unchanged.
//  tree   NCCL's double binary tree with every rank as its own node: the message is cut into loops
//         of C chunks of cs = min(chunk_elems, round_up(ceil(remaining / C), align_elems))
//         elements, chunk b on channel b; channels b < C/2 (rounded up) reduce over tree 0, the
//         others over tree 1. Tree 0: rank 0 is the root with one child, the largest power of two
//         below n; a rank r > 0 whose lowest set bit is 2^i has children r - 2^(i-1) and the first
//         of r + 2^(i-1), r + 2^(i-2), ... that is below n (leaves: odd ranks). Tree 1 is tree 0
//         mirrored (rank r -> n-1-r) for even n, shifted by one (r -> r+1 mod n) for odd n. Every
//         node adds, in order, its own value and its children's subtree sums (first child, then
//         second): node(v) = ((x[v] + node(c0)) + node(c1)). The result is broadcast unchanged.
//  fixed  one order for every element whatever the message size or channels: ((x[0] + x[1]) +
//         x[2]) + ... + x[n-1]. Invariant across the batch at a fixed n (not across n).
//  auto   picks ring or tree, the protocol (which sets chunk_elems / align_elems) and the channel
//         count from the message size, a table that approximates NCCL's tuning on one NVSwitch
//         node with NVLink SHARP (NVLS) off; see plan_all_reduce and README "Tensor parallel".
//
// The ring and tree orders change with the message size (the batch), the channel count and the
// protocol: that is the divergence a serving stack meets when NCCL's tuning follows the load.
// With n = 2 every order is the same single add.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/tensor.h"

namespace nvdet {

enum class AllReduceAlgo { kAuto, kRing, kTree, kFixed, kNccl };
enum class AllReduceProtocol { kLL, kLL128, kSimple };

std::string_view all_reduce_algo_name(AllReduceAlgo a);  // "auto", "ring", "tree", "fixed", "nccl"
std::string_view all_reduce_protocol_name(AllReduceProtocol p);  // "LL", "LL128", "Simple"
// The words the `allreduce` axis takes, in order; parse returns false for anything else.
const std::vector<std::string>& all_reduce_algo_words();
bool parse_all_reduce_algo(std::string_view word, AllReduceAlgo* out);

inline constexpr int kMaxAllReduceChannels = 64;  // NCCL's MAXCHANNELS
inline constexpr int kMaxTp = 64;                 // ranks one simulated all-reduce sums
inline constexpr int kAutoMaxChannels = 16;       // the channels a node offers to the tuning

// What the simulation does for one message: the algorithm (never kAuto), the protocol, the
// channels, and the chunk geometry the protocol implies.
struct AllReducePlan {
  AllReduceAlgo algo = AllReduceAlgo::kFixed;
  AllReduceProtocol protocol = AllReduceProtocol::kSimple;
  int channels = 1;
  int64_t chunk_bytes = 0;  // most bytes one chunk of one channel carries
  int64_t align_bytes = 0;  // chunks are a multiple of this (but the last)
};

// The plan for a message of `bytes` over `ranks` ranks. `requested` kRing / kTree / kFixed pin
// the algorithm (as NCCL_ALGO does); the protocol then still follows the size, as NCCL's does.
// `channels` > 0 pins the channel count (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS), 0 lets it follow
// the size. kAuto's table (message size: algorithm, protocol, channels):
//   < 64 KiB  tree, LL,     ceil(bytes / 16 KiB) channels
//   < 1 MiB   ring, LL,     ceil(bytes / 32 KiB)
//   < 16 MiB  ring, LL128,  ceil(bytes / 256 KiB)
//   larger    ring, Simple, ceil(bytes / 1 MiB)
// each channel count clamped to [1, kAutoMaxChannels]; kRing / kTree take the same protocol and
// channel rows with their own algorithm. Throws kBadInput for kNccl (not simulated) or channels
// out of [0, kMaxAllReduceChannels].
AllReducePlan plan_all_reduce(AllReduceAlgo requested, int channels, int ranks, int64_t bytes);

// "ring, LL, 2 channels" / "fixed rank order": what a context's notes say.
std::string describe(const AllReducePlan& plan);

// The elementwise sum of `ranks` (same dtype and shape; at least one) in their dtype, in the
// plan's order (above). Throws kBadInput for mismatched tensors.
HostTensor simulate_all_reduce(const std::vector<const HostTensor*>& ranks,
                               const AllReducePlan& plan);

// The double binary tree's shape (see tree above), exposed for tests and docs: the parent of
// `rank` in tree `which` (0 or 1) of `ranks` ranks, -1 for the root, and its children in order.
int tree_parent(int which, int ranks, int rank);
std::vector<int> tree_children(int which, int ranks, int rank);

// NCCL settings of the real path (scenario key `nccl:`), exported as NCCL_ALGO, NCCL_PROTO,
// NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS before the communicators are created. Empty / 0:
// NCCL's own choice.
struct NcclSettings {
  std::string algo;   // "Ring", "Tree" (NCCL_ALGO)
  std::string proto;  // "LL", "LL128", "Simple" (NCCL_PROTO)
  int min_channels = 0, max_channels = 0;
};

}  // namespace nvdet
