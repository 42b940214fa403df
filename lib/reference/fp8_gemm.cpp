// The FP8 GEMM of the CPU backends (README.md "FP8"): out[i, j] from a[i, :] quantised by the
// call's activation scheme and the quantised weight w[j, :] (lib/ops/fp8_quant.h). The codes'
// values are exact floats and each product of two is exact in fp32 (at most 8 significant bits),
// so only the additions round, and their order is the plan:
//
//   K is cut into 128-wide groups g (the last may be shorter). P_g = the sum over k in g,
//   sequentially from zero, of qa[i, k] * qw[j, k] (one accumulator, as a tensor-core MMA chain).
//   Scales that change along K (group_128 activations, block_128x128 weights) are applied per
//   group: T += P_g * (sa[i, g] * sw[j, g]); otherwise T += P_g and the scales come once at the
//   end: out = sa[i] * (sw[j] * T) (the order of CUTLASS's scaled-mm epilogue as vLLM uses it).
//   Then + bias[j], one rounding to the output dtype.
//
//   cpu-reference:  the same in double (P_g exact), one split, rounded once: the oracle;
//   cpu-invariant:  fp32, one split: T adds P_0, P_1, ... in ascending order (promotion every
//                   128 of K); nothing depends on m or on other rows, so a row's bits are fixed by
//                   its own values and scales: invariant for static, dynamic_token and group_128;
//                   dynamic_tensor's scale is a max over the whole batch, so no kernel can be
//                   invariant there and this one is not;
//   cpu-variant:    fp32 split-K by the batch as its bf16 GEMM (4 splits at m <= 16, 2 at
//                   m <= 64, MoE: by the expert's rows): each split sums its whole groups in
//                   order, the splits are added by the fixed tree of tree_sum.
#include <fmt/format.h>

#include <cmath>
#include <type_traits>

#include "lib/core/error.h"
#include "lib/core/parallel.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"
#include "lib/reference/gemm_panels.h"

namespace nvdet::cpu {
namespace {

// The call's codes as exact floats, packed for gemm_segment; `qa` already quantised.
PackedGemm pack_codes(const Fp8Activations& qa, const Fp8Weight& w, const GemmArgs& args) {
  std::vector<float> a(qa.codes.size());
  parallel_for(qa.rows, qa.cols, [&](int64_t r) {
    for (int64_t c = 0; c < qa.cols; ++c)
      a[r * qa.cols + c] = fp8_to_float(qa.codes[r * qa.cols + c], args.fp8.format);
  });
  return pack_gemm_values(
      qa.rows, w.rows, w.cols, std::move(a),
      [&](int64_t col, float* out) {
        for (int64_t c = 0; c < w.cols; ++c)
          out[c] = fp8_to_float(w.codes[col * w.cols + c], w.format);
      },
      args.bias != nullptr ? to_float(*args.bias) : std::vector<float>());
}

std::string act_scale_note(const Fp8Activations& qa) {
  switch (qa.kind) {
    case Fp8ActScale::kStatic: return fmt::format("{:.9g} (static)", qa.scales[0]);
    case Fp8ActScale::kDynamicTensor:
      if (qa.stage_scale) return "";  // the stage's note gives it (fp8_stage_note)
      return fmt::format("{:.9g} (max over the batch's {} row{})", qa.scales[0], qa.rows,
                         qa.rows == 1 ? "" : "s");
    case Fp8ActScale::kDynamicToken: return "per row";
    case Fp8ActScale::kGroup128: return "per row and 128-wide K group";
  }
  return "";
}

// The plan's accumulator type: double for the reference, float for the others.
template <class Acc>
HostTensor fp8_gemm(const GemmArgs& args, int split_k, RunNotes* notes) {
  const Fp8Weight& w = *args.fp8_w;
  if (args.fp8.accumulation != Fp8Accumulation::kPromoted) {
    throw_input_error("gemm: the CPU backends compute FP8 with accumulation 'promoted' only");
  }
  const Fp8Activations qa = quantize_activations(*args.a, args.fp8);
  const PackedGemm g = pack_codes(qa, w, args);
  const int64_t groups = (g.k + kFp8Group - 1) / kFp8Group;
  const bool per_group = qa.scale_cols > 1 || w.scale_cols > 1;
  // Splits of whole groups: split s covers groups [s * per_split, (s + 1) * per_split).
  const int64_t per_split = (groups + split_k - 1) / split_k;
  const int num_splits = static_cast<int>((groups + per_split - 1) / per_split);
  int padded = 1;
  while (padded < num_splits) padded *= 2;

  std::vector<Acc> out(static_cast<size_t>(g.m * g.n));
  parallel_for(g.num_panels(), g.panel_work(), [&](int64_t p) {
    Acc part[kGemmRows][kGemmLanes];
    std::vector<Acc> split_totals(static_cast<size_t>(padded) * kGemmRows * kGemmLanes);
    std::vector<float> column(static_cast<size_t>(padded));
    for (int64_t rb = 0; rb < g.num_row_blocks(); ++rb) {
      std::fill(split_totals.begin(), split_totals.end(), Acc(0));
      for (int s = 0; s < num_splits; ++s) {
        Acc* total = split_totals.data() + static_cast<size_t>(s) * kGemmRows * kGemmLanes;
        for (int64_t gi = s * per_split; gi < std::min(groups, (s + 1) * per_split); ++gi) {
          const int64_t k0 = gi * kFp8Group;
          gemm_segment<Acc>(g, rb * kGemmRows, p, k0, std::min(g.k, k0 + kFp8Group), part);
          for (int r = 0; r < kGemmRows; ++r) {
            const int64_t row = std::min(rb * kGemmRows + r, g.m - 1);
            for (int l = 0; l < kGemmLanes; ++l) {
              Acc term = part[r][l];
              if (per_group) {
                const int64_t col = std::min(p * kGemmLanes + l, g.n - 1);
                const Acc scale =
                    static_cast<Acc>(qa.scale(row, gi)) * static_cast<Acc>(w.scale(col, gi));
                term = term * scale;
              }
              total[r * kGemmLanes + l] += term;
            }
          }
        }
      }
      for (int r = 0; r < kGemmRows && rb * kGemmRows + r < g.m; ++r) {
        const int64_t row = rb * kGemmRows + r;
        for (int l = 0; l < kGemmLanes && p * kGemmLanes + l < g.n; ++l) {
          const int64_t col = p * kGemmLanes + l;
          Acc sum = split_totals[static_cast<size_t>(r) * kGemmLanes + l];
          if constexpr (std::is_same_v<Acc, float>) {
            if (num_splits > 1) {
              for (int s = 0; s < padded; ++s)
                column[s] =
                    s < num_splits
                        ? split_totals[(static_cast<size_t>(s) * kGemmRows + r) * kGemmLanes + l]
                        : 0.0f;
              sum = tree_sum(column.data(), padded);
            }
          }
          if (!per_group) {
            sum = static_cast<Acc>(qa.scale(row, 0)) * (static_cast<Acc>(w.scale(col, 0)) * sum);
          }
          out[row * g.n + col] = g.bias.empty() ? sum : sum + static_cast<Acc>(g.bias[col]);
        }
      }
    }
  });
  if (notes) {
    (*notes)["fp8"] = fp8_scheme_text(args.fp8);
    if (std::string note = act_scale_note(qa); !note.empty()) (*notes)["act_scale"] = note;
    (*notes)["k_group"] = std::to_string(kFp8Group);
    if constexpr (std::is_same_v<Acc, double>) {
      (*notes)["accumulation"] = std::string("double");
    } else {
      (*notes)["split_k"] = std::to_string(num_splits);
      if (num_splits > 1) (*notes)["split_len"] = std::to_string(per_split * kFp8Group);
    }
  }
  return make_output(args.out_dtype, {g.m, g.n}, std::span<const Acc>(out));
}

}  // namespace

HostTensor reference_fp8_gemm(const GemmArgs& args, RunNotes* notes) {
  return fp8_gemm<double>(args, 1, notes);
}

HostTensor invariant_fp8_gemm(const GemmArgs& args, RunNotes* notes) {
  return fp8_gemm<float>(args, 1, notes);
}

HostTensor variant_fp8_gemm_with_split_k(const GemmArgs& args, int split_k, RunNotes* notes) {
  return fp8_gemm<float>(args, split_k, notes);
}

}  // namespace nvdet::cpu
