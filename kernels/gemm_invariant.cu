// Plan and dispatch of the invariant GEMM (host code). The plan's arithmetic-relevant choices
// (path, chunk size, k tile) are functions of the device, the compiled code, the types and K
// only (plus alignment on the mma.sync path); M and N may only pick the schedule, the CTA tile,
// the number of persistent CTAs and the staging blocks (wgmma path), which the kernels'
// invariance arguments show do not change any element's operation sequence.
#include <algorithm>

#include "kernels/gemm_grouped_tiles.cuh"
#include "kernels/gemm_invariant_device.cuh"

namespace nvdet::kernels {
namespace {

// A split-chunks workspace larger than this is not worth it: such problems fill the GPU anyway.
constexpr size_t kMaxSplitWorkspace = size_t{512} << 20;

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// 16-byte vector loads (cp.async, TMA) need every row start 16-byte aligned.
bool rows_16b_aligned(const GemmProblem& p) {
  const int64_t elems = p.in_type == GemmType::kFP32 ? 4 : 8;
  return p.k % elems == 0 && p.lda % elems == 0 && p.ldw % elems == 0 && aligned16(p.a) &&
         aligned16(p.w);
}

int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// A block of staged rows that the wgmma path reads in place instead: a single row with a 16-byte
// aligned start (its TMA map has one row, so the row stride TMA requires is never applied).
bool row_read_in_place(const void* rows_start, int rows) {
  return rows == 1 && aligned16(rows_start);
}

// The wgmma path's k tile: 64 16-bit elements, one 128-byte swizzle row (gemm_invariant_wgmma.cu).
constexpr int kWgmmaTileK = 64;

// Output tiles an entry walks for an M x N output, counting a cluster's tiles past M (a cluster
// takes cluster_m vertically adjacent tiles together, horizontally adjacent ones in the swapped
// form; those past M or N are computed, never stored).
int64_t wgmma_tiles(int m, int n, const GemmWgmmaConfig& c) {
  // Clusters take groups of cluster_m tiles: along M, or along N in the swapped form.
  return cluster_tile_groups(ceil_div(m, c.tile_m), ceil_div(n, c.tile_n), c.cluster_m,
                             c.swapped) *
         c.cluster_m;
}

}  // namespace

namespace {

// The wgmma path over staged operands: W copied once (or the caller's kept copy,
// prob.w_staged), then A block by block (rows are independent, so a block's rows get the bits
// they would get in one launch).
cudaError_t launch_wgmma_staged(const GemmProblem& prob, const GemmPlan& plan,
                                const GemmKernelParams& base, void* workspace,
                                cudaStream_t stream) {
  if (plan.stage_rows <= 0 || plan.staged_k < prob.k) return cudaErrorInvalidValue;
  auto* w_area = static_cast<unsigned char*>(workspace);
  auto* a_staged = w_area + gemm_invariant_staged_weight_bytes(prob, plan);
  const void* w_staged = prob.w_staged;
  if (w_staged == nullptr) {
    const cudaError_t st = gemm_invariant_stage_weight(prob, plan, w_area, stream);
    if (st != cudaSuccess) return st;
    w_staged = w_area;
  }
  cudaError_t st = cudaSuccess;
  const size_t out_elem = prob.out_type == GemmType::kFP32 ? 4 : 2;
  for (int r0 = 0; r0 < prob.m; r0 += plan.stage_rows) {
    const int rows = std::min(plan.stage_rows, prob.m - r0);
    const auto* a_rows = static_cast<const uint16_t*>(prob.a) + int64_t(r0) * prob.lda;
    GemmKernelParams kp = base;
    // The staged rows' zeros past K are walked as K (wgmma_plan): the same k tiles at every m.
    kp.k = plan.staged_k;
    kp.k_tiles = ceil_div(plan.staged_k, kp.tile_k);
    kp.tiles_per_chunk = kp.k_tiles;
    kp.lda = kp.ldw = plan.staged_k;
    if (row_read_in_place(a_rows, rows)) {
      // TMA zero-fills the columns past K as the staged copy holds zeros there. This spares a
      // decode step's GEMM the staging launch (4097 x 4100 at m = 1 on an H100: 16.5 us against
      // 18.9 with it; reports/h100/final-build-2026-12-06c).
      kp.a = a_rows;
      kp.a_cols = prob.k;
    } else {
      st = launch_stage_rows(a_rows, prob.lda, rows, prob.k, a_staged, plan.staged_k, stream);
      if (st != cudaSuccess) return st;
      kp.a = a_staged;
    }
    kp.w = w_staged;
    kp.m = rows;
    kp.vec16 = 1;
    kp.out = static_cast<unsigned char*>(prob.out) + size_t(r0) * size_t(prob.ldo) * out_elem;
    st = launch_wgmma(kp, plan.config, plan.ctas, stream);
    if (st != cudaSuccess) return st;
  }
  return cudaSuccess;
}

}  // namespace

bool gemm_invariant_reads_a_in_place(const GemmProblem& problem, const GemmPlan& plan) {
  return plan.staged_k > 0 && row_read_in_place(problem.a, problem.m);
}

size_t gemm_invariant_staged_weight_bytes(const GemmProblem& problem, const GemmPlan& plan) {
  return (size_t(problem.n) * size_t(plan.staged_k) * 2 + 255) / 256 * 256;
}

cudaError_t gemm_invariant_stage_weight(const GemmProblem& problem, const GemmPlan& plan, void* dst,
                                        cudaStream_t stream) {
  if (plan.staged_k < problem.k) return cudaErrorInvalidValue;
  return launch_stage_rows(problem.w, problem.ldw, problem.n, problem.k, dst, plan.staged_k,
                           stream);
}

bool gemm_invariant_grouped_supported(const GemmGroupedProblem& p, const GemmDevice& device) {
  return p.in_type != GemmType::kFP32 && device.cc_major == 9 && wgmma_available() &&
         p.groups >= 1 && p.groups <= kGemmMaxGroups && p.k > 0 && p.k % 8 == 0 &&
         aligned16(p.a) && aligned16(p.w) && p.n > 0 && p.max_rows >= 0;
}

int gemm_invariant_grouped_config(const GemmGroupedProblem& p, int force_config) {
  // A pinned entry for plain launches only does not apply here.
  if (force_config >= 0 && force_config < kGemmWgmmaConfigCount &&
      !gemm_wgmma_plain_only(kGemmWgmmaConfigs[force_config])) {
    return force_config;
  }
  // An expert gets few rows at decode sizes: 64-row tiles, 128 columns where N is wide.
  return p.n >= 1024 ? 3 : 4;
}

cudaError_t gemm_invariant_grouped_launch(const GemmGroupedProblem& problem,
                                          const GemmDevice& device, int force_config,
                                          int force_ctas, cudaStream_t stream) {
  if (!gemm_invariant_grouped_supported(problem, device)) return cudaErrorInvalidValue;
  if (problem.max_rows == 0) return cudaSuccess;
  const int config = gemm_invariant_grouped_config(problem, force_config);
  const GemmWgmmaConfig& c = kGemmWgmmaConfigs[config];
  GemmKernelParams kp{};
  kp.a = problem.a;
  kp.w = problem.w;
  kp.out = problem.out;
  kp.m = problem.max_rows;
  kp.n = problem.n;
  kp.k = problem.k;
  kp.lda = kp.ldw = problem.k;
  kp.ldo = problem.n;
  kp.in_type = static_cast<int>(problem.in_type);
  kp.out_type = static_cast<int>(problem.out_type);
  kp.tile_k = kWgmmaTileK;
  kp.k_tiles = ceil_div(problem.k, kp.tile_k);
  kp.tiles_per_chunk = kp.k_tiles;
  kp.chunks = 1;
  kp.vec16 = 1;
  const uintptr_t pair_align = problem.out_type == GemmType::kFP32 ? 8 : 4;
  kp.pair_out =
      problem.n % 2 == 0 && reinterpret_cast<uintptr_t>(problem.out) % pair_align == 0;
  kp.group_rows = problem.group_rows;
  kp.groups = problem.groups;
  const int ctas =
      force_ctas > 0 ? force_ctas : std::max(device.sm_count, 1) * c.ctas_per_sm;
  return launch_wgmma_grouped(kp, config, ctas, stream);
}

const char* gemm_path_name(GemmPath path) {
  switch (path) {
    case GemmPath::kMmaSync: return "mma.sync-m16n8k16";
    case GemmPath::kWgmma: return "wgmma-m64nNk16-tma";
    case GemmPath::kFfma: return "ffma-fp32";
    case GemmPath::kAuto: break;
  }
  return "auto";
}

const char* gemm_schedule_name(GemmSchedule schedule) {
  switch (schedule) {
    case GemmSchedule::kSplitChunks: return "split-chunks";
    case GemmSchedule::kInCta: return "in-cta";
    case GemmSchedule::kPersistent: return "persistent";
    case GemmSchedule::kAuto: break;
  }
  return "auto";
}

int gemm_invariant_chunk_k(GemmType in_type) {
  // 1024 elements: a multiple of every path's k tile (16, 64), long enough that the per-chunk
  // partials cost little, short enough that K = 4096 gives 4 chunks to spread over the GPU.
  (void)in_type;
  return 1024;
}

namespace {

// The entry with `base`'s tile width and cluster whose tile holds `tile_m` rows and whose stages
// hold `k_subtiles` k tiles, or -1.
int entry_like(int base, int tile_m, int k_subtiles) {
  const GemmWgmmaConfig& b = kGemmWgmmaConfigs[base];
  for (int i = 0; i < kGemmWgmmaConfigCount; ++i) {
    const GemmWgmmaConfig& c = kGemmWgmmaConfigs[i];
    if (c.tile_m == tile_m && c.tile_n == b.tile_n && c.cluster_m == b.cluster_m &&
        c.k_subtiles == k_subtiles && c.swapped == b.swapped) {
      return i;
    }
  }
  return -1;
}

}  // namespace

// Waves count persistent CTAs at ctas_per_sm per SM.
int gemm_wgmma_pick_config(int m, int n, int k, int sm_count) {
  int best = 0;
  double best_cost = 0.0;
  const int sms = std::max(sm_count, 1);
  bool first = true;
  for (int i = 0; i < kGemmWgmmaConfigCount; ++i) {
    const GemmWgmmaConfig& c = kGemmWgmmaConfigs[i];
    if (!c.auto_pick) continue;
    const int64_t tiles = wgmma_tiles(m, n, c);
    const int64_t slots = int64_t{sms} * c.ctas_per_sm;
    const int64_t waves = (tiles + slots - 1) / slots;
    const int64_t sharing = std::min<int64_t>(c.ctas_per_sm, (tiles + sms - 1) / sms);
    const double cost = double(waves) * double(sharing) * c.tile_m * c.tile_n / c.efficiency_pct;
    // On a tie, one CTA per SM whose tiles fit in one wave beats several CTAs per SM: with fewer
    // tiles than SMs, those may share an SM while others idle (on an H100, 64x128 tiles against
    // 128x64 two to an SM: 26.7 against 34.1 us at 4096 x 4096, m = 256; 29.9 against 36.5 us at
    // 6144 x 4096, m = 128).
    const bool spreads_better = cost == best_cost && c.ctas_per_sm == 1 && tiles <= sms &&
                                kGemmWgmmaConfigs[best].ctas_per_sm > 1;
    if (first || cost < best_cost || spreads_better) {
      best = i;
      best_cost = cost;
      first = false;
    }
  }
  // Decode sizes (and up to kGemmStreamRows) stream W: the same tile with 4 (else 2) k tiles a
  // stage pays the ring's waits a quarter (half) as often, where that many divide K's k tiles
  // (else it would fall back to one k tile a stage in a shallower ring).
  if (m <= kGemmStreamRows) {
    const int k_tiles = ceil_div(std::max(k, 1), kWgmmaTileK);
    for (const int sub : {4, 2}) {
      const int twin = entry_like(best, kGemmWgmmaConfigs[best].tile_m, sub);
      if (twin >= 0 && k_tiles % sub == 0) {
        // At m <= 32 the twin's short tile leaves the ring to W (kGemmWgmmaConfigs).
        const int rows = m <= 8 ? 8 : m <= 16 ? 16 : 32;
        const int short_tile =
            m <= kGemmShortTileRows ? entry_like(twin, rows, kGemmWgmmaConfigs[twin].k_subtiles)
                                    : -1;
        return short_tile >= 0 ? short_tile : twin;
      }
    }
  }
  return best;
}

namespace {

// Staging (operands TMA cannot address): W whole, A in blocks of at most this many bytes.
constexpr size_t kStageABytes = size_t{256} << 20;
// A staged K that is not a multiple of 8 is rounded up to this (four k tiles; wgmma_plan).
constexpr int kStagedKMultiple = 4 * kWgmmaTileK;

size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

GemmPlan wgmma_plan(const GemmProblem& p, const GemmDevice& device, int force_config,
                    int force_ctas) {
  GemmPlan plan;
  plan.path = GemmPath::kWgmma;
  plan.schedule = GemmSchedule::kPersistent;
  plan.tile_k = kWgmmaTileK;
  // Operands TMA cannot address are copied into rows of staged_k elements (launch_wgmma_staged),
  // and the kernel then walks staged_k: for a K that is not a multiple of 8, K rounded up to four
  // k tiles, so that the decode sizes' entries with 4 (or 2) k tiles a stage divide it (with K
  // rounded to 8 they seldom did, and the odd shapes' decode GEMM streamed W one k tile a stage:
  // 4097 x 4100 at m = 1 in 1.49x cuBLAS's time on an H100, reports/h100/final-build-2026-12-06b).
  // The extra k tiles are zeros in both operands; staged_k is a function of K alone, so every m
  // walks the same k tiles. Where only a row stride or a base is unaligned, staged_k is K.
  const bool staged = !rows_16b_aligned(p);
  const int k_walked =
      staged && p.k % 8 != 0 ? ceil_div(p.k, kStagedKMultiple) * kStagedKMultiple : p.k;
  // One chain over the whole of K: one "chunk" of K rounded up to the k tile.
  plan.chunk_k = ceil_div(k_walked, plan.tile_k) * plan.tile_k;
  plan.chunks = 1;
  plan.config = (force_config >= 0 && force_config < kGemmWgmmaConfigCount)
                    ? force_config
                    : gemm_wgmma_pick_config(p.m, p.n, k_walked, device.sm_count);
  const GemmWgmmaConfig& c = kGemmWgmmaConfigs[plan.config];
  plan.tile_m = c.tile_m;
  plan.tile_n = c.tile_n;
  plan.stages = c.stages;
  const int64_t tiles = wgmma_tiles(p.m, p.n, c);
  const int64_t slots = int64_t{std::max(device.sm_count, 1)} * c.ctas_per_sm;
  const int64_t ctas = force_ctas > 0 ? force_ctas : slots;
  // Whole clusters, at least one (the launch may take fewer if the GPU holds fewer at once).
  plan.ctas = static_cast<int>(
      std::max<int64_t>(c.cluster_m, std::min(tiles, ctas) / c.cluster_m * c.cluster_m));
  if (staged) {
    plan.staged_k = k_walked;
    const size_t row_bytes = size_t(plan.staged_k) * 2;
    const int64_t cap = std::max<int64_t>(256, int64_t(kStageABytes / row_bytes) / 256 * 256);
    plan.stage_rows = static_cast<int>(std::min<int64_t>(p.m, cap));
    plan.workspace_bytes =
        align256(size_t(p.n) * row_bytes) + size_t(plan.stage_rows) * row_bytes;
  }
  return plan;
}

}  // namespace

GemmPlan gemm_invariant_plan(const GemmProblem& p, const GemmDevice& device,
                             GemmSchedule force_schedule, GemmPath force_path, int force_config,
                             int force_ctas) {
  if (p.in_type != GemmType::kFP32 && force_path != GemmPath::kMmaSync && p.k > 0 &&
      device.cc_major == 9 && wgmma_available()) {
    return wgmma_plan(p, device, force_config, force_ctas);
  }

  GemmPlan plan;
  plan.chunk_k = gemm_invariant_chunk_k(p.in_type);
  plan.chunks = ceil_div(p.k, plan.chunk_k);
  plan.path = p.in_type == GemmType::kFP32 ? GemmPath::kFfma : GemmPath::kMmaSync;

  int in_cta_tile_m = 128, split_tile_m = 64;
  switch (plan.path) {
    case GemmPath::kFfma:
      in_cta_tile_m = split_tile_m = 64;
      plan.tile_n = 64;
      plan.tile_k = 16;
      break;
    case GemmPath::kMmaSync:
      split_tile_m = p.m <= 16 ? 16 : 64;
      plan.tile_n = 128;
      plan.tile_k = 64;
      break;
    default: break;
  }

  // Split-chunks pays for its workspace round trip and its reduction pass, and its work grows
  // with M; in-CTA costs one full K walk per tile whatever the tile's fill. Measured on an H200
  // (bf16, N = 4096 and 14336, K = 4096 and 14336): split-chunks wins up to M = 64 always and up
  // to M = 128 while in-CTA would leave more than half the SMs idle; in-CTA wins from there on.
  const int64_t in_cta_tiles =
      int64_t{ceil_div(p.m, in_cta_tile_m)} * ceil_div(p.n, plan.tile_n);
  const size_t split_ws = size_t(plan.chunks) * size_t(p.m) * size_t(p.n) * sizeof(float);
  bool split = (p.m <= 64 || (p.m <= 128 && 2 * in_cta_tiles < device.sm_count)) &&
               split_ws <= kMaxSplitWorkspace;
  if (force_schedule == GemmSchedule::kSplitChunks) split = true;
  if (force_schedule == GemmSchedule::kInCta) split = false;
  if (plan.chunks == 0) split = false;  // K == 0: nothing to split, out = bias

  plan.schedule = split ? GemmSchedule::kSplitChunks : GemmSchedule::kInCta;
  plan.tile_m = split ? split_tile_m : in_cta_tile_m;
  switch (plan.path) {
    case GemmPath::kFfma: plan.stages = 1; break;
    case GemmPath::kMmaSync: plan.stages = !split ? 4 : plan.tile_m == 16 ? 6 : 4; break;
    default: break;
  }
  plan.workspace_bytes = split ? split_ws : 0;
  return plan;
}

cudaError_t gemm_invariant_launch(const GemmProblem& prob, const GemmPlan& plan, void* workspace,
                                  size_t workspace_bytes, cudaStream_t stream) {
  if (prob.m < 0 || prob.n < 0 || prob.k < 0) return cudaErrorInvalidValue;
  if (prob.m == 0 || prob.n == 0) return cudaSuccess;
  const bool split = plan.schedule == GemmSchedule::kSplitChunks;
  if (plan.workspace_bytes > 0 && (workspace == nullptr || workspace_bytes < plan.workspace_bytes))
    return cudaErrorInvalidValue;
  if (plan.tile_k <= 0 || plan.chunk_k % plan.tile_k != 0) return cudaErrorInvalidValue;
  if (plan.path == GemmPath::kWgmma && (plan.config < 0 || plan.ctas <= 0))
    return cudaErrorInvalidValue;

  GemmKernelParams kp{};
  kp.a = prob.a;
  kp.w = prob.w;
  kp.bias = prob.bias;
  kp.out = prob.out;
  kp.ws = static_cast<float*>(workspace);
  kp.m = prob.m;
  kp.n = prob.n;
  kp.k = prob.k;
  kp.lda = prob.lda;
  kp.ldw = prob.ldw;
  kp.ldo = prob.ldo;
  kp.in_type = static_cast<int>(prob.in_type);
  kp.out_type = static_cast<int>(prob.out_type);
  kp.tile_k = plan.tile_k;
  kp.tiles_per_chunk = plan.chunk_k / plan.tile_k;
  kp.k_tiles = ceil_div(prob.k, plan.tile_k);
  kp.chunks = plan.chunks;
  kp.vec16 = rows_16b_aligned(prob) ? 1 : 0;
  const uintptr_t pair_align = prob.out_type == GemmType::kFP32 ? 8 : 4;
  kp.pair_out = prob.ldo % 2 == 0 && reinterpret_cast<uintptr_t>(prob.out) % pair_align == 0;
  kp.stage_boxes = plan.stage_boxes ? 1 : 0;

  if (plan.path == GemmPath::kWgmma && plan.staged_k > 0) {
    return launch_wgmma_staged(prob, plan, kp, workspace, stream);
  }

  cudaError_t st = cudaErrorInvalidValue;
  switch (plan.path) {
    case GemmPath::kMmaSync: st = launch_mma_sync(kp, split, plan.tile_m, stream); break;
    case GemmPath::kWgmma: st = launch_wgmma(kp, plan.config, plan.ctas, stream); break;
    case GemmPath::kFfma: st = launch_ffma(kp, split, stream); break;
    case GemmPath::kAuto: break;
  }
  if (st != cudaSuccess || !split) return st;
  return launch_chunk_reduce(kp, stream);
}

}  // namespace nvdet::kernels
