#include "lib/ops/allreduce.h"

#include <algorithm>

#include "lib/core/error.h"

namespace nvdet {
namespace {

// Chunk geometry per protocol, modelled on NCCL's buffers: LL carries 8 data bytes per 16-byte
// line, LL128 120 of every 128 bytes, Simple one step of its 4 MiB buffer per chunk.
struct ProtocolGeometry {
  int64_t chunk_bytes, align_bytes;
};
ProtocolGeometry geometry(AllReduceProtocol p) {
  switch (p) {
    case AllReduceProtocol::kLL: return {32 << 10, 16};
    case AllReduceProtocol::kLL128: return {120 << 10, 128};
    case AllReduceProtocol::kSimple: return {512 << 10, 512};
  }
  return {512 << 10, 512};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One rounding per add, in the wire dtype.
float wire_add(float a, float b, DType t) { return round_to_dtype(a + b, t); }

// The tree's node at btree position p is rank_at(p); its inverse position_of(r).
int rank_at(int which, int n, int p) {
  if (which == 0) return p;
  return n % 2 == 0 ? n - 1 - p : (p + 1) % n;
}
int position_of(int which, int n, int r) {
  if (which == 0) return r;
  return n % 2 == 0 ? n - 1 - r : (r - 1 + n) % n;
}

int btree_parent(int n, int p) {
  if (p == 0) return -1;
  const int bit = p & -p;
  const int up = (p ^ bit) | (bit << 1);
  return up < n ? up : (p ^ bit);
}

using Children = std::vector<std::vector<int>>;  // per rank, in adding order

float tree_node_sum(const Children& kids, int rank, const std::vector<const float*>& x, int64_t e,
                    DType t) {
  float s = x[rank][e];
  for (const int c : kids[rank]) s = wire_add(s, tree_node_sum(kids, c, x, e, t), t);
  return s;
}

}  // namespace

std::string_view all_reduce_algo_name(AllReduceAlgo a) {
  switch (a) {
    case AllReduceAlgo::kAuto: return "auto";
    case AllReduceAlgo::kRing: return "ring";
    case AllReduceAlgo::kTree: return "tree";
    case AllReduceAlgo::kFixed: return "fixed";
    case AllReduceAlgo::kNccl: return "nccl";
  }
  return "?";
}

std::string_view all_reduce_protocol_name(AllReduceProtocol p) {
  switch (p) {
    case AllReduceProtocol::kLL: return "LL";
    case AllReduceProtocol::kLL128: return "LL128";
    case AllReduceProtocol::kSimple: return "Simple";
  }
  return "?";
}

const std::vector<std::string>& all_reduce_algo_words() {
  static const std::vector<std::string> words = {"auto", "ring", "tree", "fixed", "nccl"};
  return words;
}

bool parse_all_reduce_algo(std::string_view word, AllReduceAlgo* out) {
  for (const AllReduceAlgo a : {AllReduceAlgo::kAuto, AllReduceAlgo::kRing, AllReduceAlgo::kTree,
                                AllReduceAlgo::kFixed, AllReduceAlgo::kNccl}) {
    if (all_reduce_algo_name(a) == word) {
      *out = a;
      return true;
    }
  }
  return false;
}

AllReducePlan plan_all_reduce(AllReduceAlgo requested, int channels, int ranks, int64_t bytes) {
  if (requested == AllReduceAlgo::kNccl)
    throw_input_error("the 'nccl' all-reduce runs on GPUs and has no simulated plan");
  if (channels < 0 || channels > kMaxAllReduceChannels)
    throw_input_error("'channels' must be from 0 to " + std::to_string(kMaxAllReduceChannels) +
                      ", got " + std::to_string(channels));
  if (ranks < 1) throw_input_error("an all-reduce needs at least one rank");
  struct Row {
    int64_t below;
    AllReduceAlgo algo;
    AllReduceProtocol protocol;
    int64_t bytes_per_channel;
  };
  static constexpr Row kTable[] = {
      {64 << 10, AllReduceAlgo::kTree, AllReduceProtocol::kLL, 16 << 10},
      {1 << 20, AllReduceAlgo::kRing, AllReduceProtocol::kLL, 32 << 10},
      {16 << 20, AllReduceAlgo::kRing, AllReduceProtocol::kLL128, 256 << 10},
      {INT64_MAX, AllReduceAlgo::kRing, AllReduceProtocol::kSimple, 1 << 20},
  };
  const Row* row = kTable;
  while (bytes >= row->below) ++row;
  AllReducePlan plan;
  plan.algo = requested == AllReduceAlgo::kAuto ? row->algo : requested;
  plan.protocol = row->protocol;
  plan.channels = channels > 0 ? channels
                               : static_cast<int>(std::clamp<int64_t>(
                                     ceil_div(bytes, row->bytes_per_channel), 1, kAutoMaxChannels));
  if (plan.algo == AllReduceAlgo::kFixed) plan.channels = 1;
  const ProtocolGeometry g = geometry(plan.protocol);
  plan.chunk_bytes = g.chunk_bytes;
  plan.align_bytes = g.align_bytes;
  return plan;
}

std::string describe(const AllReducePlan& plan) {
  if (plan.algo == AllReduceAlgo::kFixed) return "fixed rank order";
  return std::string(all_reduce_algo_name(plan.algo)) + ", " +
         std::string(all_reduce_protocol_name(plan.protocol)) + ", " +
         std::to_string(plan.channels) + (plan.channels == 1 ? " channel" : " channels");
}

int tree_parent(int which, int ranks, int rank) {
  const int p = btree_parent(ranks, position_of(which, ranks, rank));
  return p < 0 ? -1 : rank_at(which, ranks, p);
}

std::vector<int> tree_children(int which, int ranks, int rank) {
  // The btree's children of position p, smaller position first (see allreduce.h).
  const int p = position_of(which, ranks, rank);
  std::vector<int> out;
  for (int q = 0; q < ranks; ++q)
    if (q != p && btree_parent(ranks, q) == p) out.push_back(rank_at(which, ranks, q));
  return out;
}

HostTensor simulate_all_reduce(const std::vector<const HostTensor*>& ranks,
                               const AllReducePlan& plan) {
  if (ranks.empty() || ranks.front() == nullptr)
    throw_input_error("an all-reduce needs at least one rank's tensor");
  const HostTensor& first = *ranks.front();
  const DType t = first.dtype();
  const int n = static_cast<int>(ranks.size());
  std::vector<std::vector<float>> values(ranks.size());
  std::vector<const float*> x;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r] == nullptr || ranks[r]->dtype() != t || ranks[r]->shape() != first.shape())
      throw_input_error("every rank of an all-reduce must hold a " + std::string(dtype_name(t)) +
                        " tensor of shape " + first.shape_string());
    values[r].resize(static_cast<size_t>(first.numel()));
    for (int64_t e = 0; e < first.numel(); ++e) values[r][e] = ranks[r]->get(e);
    x.push_back(values[r].data());
  }
  const int64_t count = first.numel();
  HostTensor out(t, first.shape());
  const int64_t elem = static_cast<int64_t>(dtype_size(t));
  const int64_t chunk = std::max<int64_t>(1, plan.chunk_bytes / elem);
  const int64_t align = std::max<int64_t>(1, plan.align_bytes / elem);
  const int64_t c = plan.channels;

  if (plan.algo == AllReduceAlgo::kFixed || n == 1) {
    for (int64_t e = 0; e < count; ++e) {
      float s = x[0][e];
      for (int r = 1; r < n; ++r) s = wire_add(s, x[r][e], t);
      out.set(e, s);
    }
    return out;
  }
  const bool ring = plan.algo == AllReduceAlgo::kRing;
  if (!ring && plan.algo != AllReduceAlgo::kTree)
    throw_input_error("the all-reduce plan must be ring, tree or fixed");
  Children kids[2];
  for (int which = 0; which < 2; ++which)
    for (int r = 0; r < n; ++r) kids[which].push_back(tree_children(which, n, r));
  const int64_t per_loop_chunks = ring ? c * n : c;
  for (int64_t offset = 0; offset < count;) {
    const int64_t cs =
        std::min(chunk, ceil_div(ceil_div(count - offset, per_loop_chunks), align) * align);
    const int64_t end = std::min(count, offset + per_loop_chunks * cs);
    for (int64_t e = offset; e < end; ++e) {
      const int64_t chunk_index = (e - offset) / cs;  // ring: b * n + j; tree: b
      float s;
      if (ring) {
        const int j = static_cast<int>(chunk_index % n);
        s = x[(j + 1) % n][e];
        for (int step = 2; step <= n; ++step) s = wire_add(s, x[(j + step) % n][e], t);
      } else {
        const int which = chunk_index < ceil_div(c, 2) ? 0 : 1;
        s = tree_node_sum(kids[which], rank_at(which, n, 0), x, e, t);
      }
      out.set(e, s);
    }
    offset = end;
  }
  return out;
}

}  // namespace nvdet
