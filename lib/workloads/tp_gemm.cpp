#include "lib/workloads/tp_gemm.h"

#include <cstring>
#include <numeric>
#include <string>

#include "lib/backend/nccl_collective.h"
#include "lib/core/error.h"

namespace nvdet {
namespace {

void check_tp(int tp) {
  if (tp < 1 || tp > kMaxTp)
    throw_input_error("'tp' must be from 1 to " + std::to_string(kMaxTp) + ", got " +
                      std::to_string(tp));
}

GemmArgs gemm_args(const HostTensor& a, const HostTensor& w, const HostTensor* bias,
                   DType out_dtype) {
  GemmArgs g;
  g.a = &a;
  g.w = &w;
  g.bias = bias != nullptr && !bias->empty() ? bias : nullptr;
  g.out_dtype = out_dtype;
  return g;
}

// Rank 0's call notes are the context's (every rank runs the same kernel on the same shape).
HostTensor run_rank(Backend& backend, const GemmArgs& g, int rank, RunNotes* notes) {
  return backend.run(g, rank == 0 ? notes : nullptr);
}

}  // namespace

TpOptions tp_options(const Scenario& s, const Context& c) {
  TpOptions o;
  const int64_t tp = c.integer(Axis::kTp);
  if (tp < 1 || tp > kMaxTp)
    throw_input_error("'tp' must be from 1 to " + std::to_string(kMaxTp) + ", got " +
                      std::to_string(tp));
  o.tp = static_cast<int>(tp);
  const std::string& word = c.word(Axis::kAllreduce);
  if (!parse_all_reduce_algo(word, &o.allreduce))
    throw_input_error("unknown 'allreduce' value '" + word + "'");
  const int64_t channels = c.integer(Axis::kChannels);
  if (channels < 0 || channels > kMaxAllReduceChannels)
    throw_input_error("'channels' must be from 0 to " + std::to_string(kMaxAllReduceChannels) +
                      ", got " + std::to_string(channels));
  o.channels = static_cast<int>(channels);
  o.nccl = s.nccl;
  return o;
}

std::vector<int> tp_values(const Scenario& s) {
  std::vector<int> out;
  for (const SweepAxis& a : s.sweep) {
    if (a.axis != Axis::kTp) continue;
    for (const AxisValue& v : a.values) {
      const int64_t tp = std::get<int64_t>(v);
      if (tp > kMaxTp)
        throw_input_error(a.where, "'tp' must be from 1 to " + std::to_string(kMaxTp) + ", got " +
                                       std::to_string(tp));
      out.push_back(static_cast<int>(tp));
    }
  }
  if (out.empty()) out.push_back(1);
  return out;
}

void check_each_tp(const Scenario& s, const std::function<void(int tp)>& check) {
  for (const SweepAxis& a : s.sweep) {
    if (a.axis != Axis::kTp) continue;
    for (const AxisValue& v : a.values) {
      try {
        check(static_cast<int>(std::get<int64_t>(v)));
      } catch (const Error& e) {
        if (e.code() != ExitCode::kBadInput || !e.where().file.empty()) throw;
        throw_input_error(a.where, e.what());
      }
    }
  }
}

void check_row_split(int64_t k, int tp) {
  if (k % tp != 0)
    throw_input_error("tp " + std::to_string(tp) + " does not divide k = " + std::to_string(k) +
                      " evenly (row-parallel split)");
}

void check_column_split(const std::vector<int64_t>& groups, int tp) {
  for (const int64_t g : groups)
    if (g % tp != 0)
      throw_input_error("tp " + std::to_string(tp) + " does not divide " + std::to_string(g) +
                        " output columns evenly (column-parallel split)");
}

HostTensor column_slice(const HostTensor& x, int64_t begin, int64_t count) {
  if (x.rank() == 1) {  // a bias vector: elements [begin, begin + count)
    HostTensor out(x.dtype(), {count});
    const size_t elem = dtype_size(x.dtype());
    std::memcpy(out.mutable_data(), x.data() + begin * elem, static_cast<size_t>(count) * elem);
    return out;
  }
  const int64_t rows = x.dim(0), width = x.dim(1);
  HostTensor out(x.dtype(), {rows, count});
  const size_t elem = dtype_size(x.dtype());
  std::byte* dst = out.mutable_data();
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * count * elem, x.data() + (r * width + begin) * elem,
                static_cast<size_t>(count) * elem);
  return out;
}

HostTensor concat_columns(const std::vector<HostTensor>& pieces) {
  if (pieces.size() == 1) return pieces.front();
  const int64_t rows = pieces.front().dim(0);
  int64_t width = 0;
  for (const HostTensor& p : pieces) width += p.dim(1);
  HostTensor out(pieces.front().dtype(), {rows, width});
  const size_t elem = dtype_size(out.dtype());
  std::byte* dst = out.mutable_data();
  int64_t col = 0;
  for (const HostTensor& p : pieces) {
    const int64_t w = p.dim(1);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + (r * width + col) * elem, p.data() + r * w * elem,
                  static_cast<size_t>(w) * elem);
    col += w;
  }
  return out;
}

ColumnParallelLinear::ColumnParallelLinear(const HostTensor& w, const HostTensor* bias, int tp,
                                           std::vector<int64_t> groups)
    : groups_(std::move(groups)) {
  check_tp(tp);
  const int64_t n = w.dim(0);
  if (groups_.empty()) groups_ = {n};
  if (std::accumulate(groups_.begin(), groups_.end(), int64_t{0}) != n)
    throw_input_error("a column-parallel weight's groups must add up to its " + std::to_string(n) +
                      " rows");
  check_column_split(groups_, tp);
  const bool has_bias = bias != nullptr && !bias->empty();
  for (int r = 0; r < tp; ++r) {
    std::vector<HostTensor> rows, biases;
    int64_t first = 0;
    for (const int64_t g : groups_) {
      const int64_t part = g / tp;
      rows.push_back(w.slice_rows(first + r * part, part));
      if (has_bias) biases.push_back(column_slice(*bias, first + r * part, part));
      first += g;
    }
    HostTensor wr(w.dtype(), {n / tp, w.dim(1)});
    int64_t row = 0;
    for (const HostTensor& piece : rows) {
      copy_rows(piece, wr, row);
      row += piece.dim(0);
    }
    w_.push_back(std::move(wr));
    if (has_bias) {
      HostTensor br(bias->dtype(), {n / tp});
      const size_t elem = dtype_size(bias->dtype());
      size_t at = 0;
      for (const HostTensor& piece : biases) {
        std::memcpy(br.mutable_data() + at, piece.data(), piece.nbytes());
        at += static_cast<size_t>(piece.numel()) * elem;
      }
      bias_.push_back(std::move(br));
    }
  }
}

std::vector<HostTensor> ColumnParallelLinear::run(Backend& backend, const HostTensor& x,
                                                  DType out_dtype, RunNotes* notes) const {
  std::vector<HostTensor> out;
  for (int r = 0; r < tp(); ++r) {
    const GemmArgs g = gemm_args(x, w_[r], bias_.empty() ? nullptr : &bias_[r], out_dtype);
    out.push_back(run_rank(backend, g, r, notes));
  }
  if (notes) {
    (*notes)["tp"] = std::to_string(tp());
    (*notes)["tp_split"] = tp() == 1 ? "none" : "column (all-gather, no reduction)";
  }
  return out;
}

HostTensor ColumnParallelLinear::gather(const std::vector<HostTensor>& per_rank) const {
  if (per_rank.size() == 1) return per_rank.front();
  std::vector<HostTensor> pieces;
  int64_t first = 0;
  for (const int64_t g : groups_) {
    const int64_t part = g / tp();
    for (const HostTensor& rank_out : per_rank)
      pieces.push_back(column_slice(rank_out, first, part));
    first += part;
  }
  return concat_columns(pieces);
}

RowParallelLinear::RowParallelLinear(const HostTensor& w, const HostTensor* bias, int tp) {
  check_tp(tp);
  const int64_t k = w.dim(1);
  check_row_split(k, tp);
  shard_k_ = k / tp;
  for (int r = 0; r < tp; ++r) w_.push_back(tp == 1 ? w : column_slice(w, r * shard_k_, shard_k_));
  if (bias != nullptr && !bias->empty()) bias_ = *bias;
}

std::vector<HostTensor> RowParallelLinear::split(const HostTensor& x) const {
  if (tp() == 1) return {x};
  std::vector<HostTensor> out;
  for (int r = 0; r < tp(); ++r) out.push_back(column_slice(x, r * shard_k_, shard_k_));
  return out;
}

HostTensor RowParallelLinear::run(Backend& backend, const std::vector<HostTensor>& x_shards,
                                  DType out_dtype, const TpOptions& options,
                                  RunNotes* notes) const {
  if (static_cast<int>(x_shards.size()) != tp())
    throw_input_error("a row-parallel GEMM of tp " + std::to_string(tp()) + " needs " +
                      std::to_string(tp()) + " input shards");
  const HostTensor* bias = bias_.empty() ? nullptr : &bias_;
  // The K-chunk plan at every tp, 1 included: on a backend whose run() reduces K another way
  // (cuda-invariant's wgmma path) tp 1 then gives the same bits as the sharded tps.
  const int64_t k_chunk = backend.gemm_k_chunk(x_shards[0].dtype());
  if (options.allreduce == AllReduceAlgo::kFixed && k_chunk > 0)
    return run_k_chunk_plan(backend, x_shards, out_dtype, k_chunk, notes);
  if (tp() == 1) {
    HostTensor out = backend.run(gemm_args(x_shards[0], w_[0], bias, out_dtype), notes);
    if (notes) (*notes)["tp"] = "1";
    return out;
  }
  std::vector<HostTensor> partials;
  for (int r = 0; r < tp(); ++r)
    partials.push_back(run_rank(
        backend, gemm_args(x_shards[r], w_[r], r == 0 ? bias : nullptr, out_dtype), r, notes));
  std::vector<const HostTensor*> ranks;
  for (const HostTensor& p : partials) ranks.push_back(&p);
  HostTensor out;
  std::string used;
  if (options.allreduce == AllReduceAlgo::kNccl) {
    out = nccl_all_reduce(ranks, options.nccl, notes);
    used = "nccl";
  } else {
    const int64_t bytes = partials[0].numel() * static_cast<int64_t>(dtype_size(out_dtype));
    const AllReducePlan plan = plan_all_reduce(options.allreduce, options.channels, tp(), bytes);
    out = simulate_all_reduce(ranks, plan);
    used = describe(plan) + " (" + std::string(dtype_name(out_dtype)) + " wire, requested " +
           std::string(all_reduce_algo_name(options.allreduce)) + ")";
  }
  if (notes) {
    (*notes)["tp"] = std::to_string(tp());
    (*notes)["tp_split"] = "row";
    (*notes)["allreduce"] = used;
  }
  return out;
}

HostTensor RowParallelLinear::run_k_chunk_plan(Backend& backend,
                                               const std::vector<HostTensor>& x_shards,
                                               DType out_dtype, int64_t k_chunk,
                                               RunNotes* notes) const {
  if (shard_k_ % k_chunk != 0)
    throw_input_error("the TP-invariant plan of backend '" + backend.info().name +
                      "' needs K / tp to be a multiple of its " + std::to_string(k_chunk) +
                      "-wide K chunks; tp " + std::to_string(tp()) + " gives " +
                      std::to_string(shard_k_));
  std::vector<HostTensor> partials;
  for (int r = 0; r < tp(); ++r)
    partials.push_back(backend.gemm_k_chunk_partials(
        gemm_args(x_shards[r], w_[r], nullptr, out_dtype), r == 0 ? notes : nullptr));
  const int64_t m = x_shards[0].dim(0), n = w_[0].dim(0);
  HostTensor out(out_dtype, {m, n});
  for (int64_t i = 0; i < m * n; ++i) {
    float total = 0.0f;
    for (const HostTensor& p : partials) {
      const int64_t chunks = p.dim(0);
      const float* v = p.data_as<float>();
      for (int64_t c = 0; c < chunks; ++c) total += v[c * m * n + i];
    }
    if (!bias_.empty()) total += bias_.get(i % n);
    out.set(i, total);
  }
  if (notes) {
    (*notes)["tp"] = std::to_string(tp());
    (*notes)["tp_split"] = "row";
    (*notes)["allreduce"] = "fixed, K-chunk order: fp32 partials of " + std::to_string(k_chunk) +
                            "-wide chunks all-gathered and added in global chunk order";
  }
  return out;
}

}  // namespace nvdet
