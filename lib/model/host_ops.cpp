#include "lib/model/host_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/portable_math.cuh"
#include "lib/core/error.h"

namespace nvdet {
namespace {

const auto load = load_element;
const auto store = store_element;

}  // namespace

HostTensor embed_tokens(const HostTensor& table, std::span<const int32_t> tokens) {
  const int64_t hidden = table.dim(1);
  const size_t row_bytes = static_cast<size_t>(hidden) * dtype_size(table.dtype());
  HostTensor out(table.dtype(), {static_cast<int64_t>(tokens.size()), hidden});
  std::byte* dst = out.mutable_data();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= table.dim(0)) {
      throw_input_error("token id " + std::to_string(tokens[i]) +
                        " is outside the vocabulary (0.." + std::to_string(table.dim(0) - 1) + ")");
    }
    std::memcpy(dst + i * row_bytes, table.data() + tokens[i] * row_bytes, row_bytes);
  }
  return out;
}

Rope::Rope(const ModelConfig& c)
    : head_dim_(c.head_dim), q_heads_(c.num_heads), kv_heads_(c.num_kv_heads) {
  const RopeScaling& s = c.rope_scaling;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int32_t i = 0; i < head_dim_ / 2; ++i) {
    double f = std::pow(static_cast<double>(c.rope_theta),
                        -2.0 * static_cast<double>(i) / static_cast<double>(head_dim_));
    switch (s.type) {
      case RopeType::kDefault: break;
      case RopeType::kLinear: f /= s.factor; break;
      case RopeType::kLlama3: {
        // Wavelengths longer than original_max / low_freq_factor are slowed by `factor`,
        // those shorter than original_max / high_freq_factor kept, and the band between blends
        // the two linearly in original_max / wavelength (transformers' llama3 rope_type).
        const double wavelen = kTwoPi / f;
        const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
        const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
        if (wavelen > low_wavelen) {
          f /= s.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                                (s.high_freq_factor - s.low_freq_factor);
          f = (1.0 - smooth) * f / s.factor + smooth * f;
        }
        break;
      }
    }
    inv_freq_.push_back(f);
  }
}

void Rope::cos_sin(int32_t position, float* cos_out, float* sin_out) const {
  for (int32_t i = 0; i < head_dim_ / 2; ++i) {
    const double angle = static_cast<double>(position) * inv_freq_[i];
    cos_out[i] = static_cast<float>(std::cos(angle));
    sin_out[i] = static_cast<float>(std::sin(angle));
  }
}

void Rope::apply(HostTensor& qkv, std::span<const int32_t> positions) const {
  const int64_t width = qkv.dim(1);
  const int32_t half = head_dim_ / 2;
  const int32_t rotated_heads = q_heads_ + kv_heads_;  // Q heads then K heads; V follows
  const DType t = qkv.dtype();
  std::byte* base = qkv.mutable_data();
  std::vector<float> cosv(static_cast<size_t>(half)), sinv(static_cast<size_t>(half));
  for (size_t r = 0; r < positions.size(); ++r) {
    cos_sin(positions[r], cosv.data(), sinv.data());
    for (int32_t h = 0; h < rotated_heads; ++h) {
      const int64_t head = static_cast<int64_t>(r) * width + int64_t{h} * head_dim_;
      for (int32_t i = 0; i < half; ++i) {
        const float x0 = load(base, t, head + i);
        const float x1 = load(base, t, head + i + half);
        // Two products then one sum each, in fp32 (no fused multiply-add: the build forbids
        // contraction, so every compiler gives these bits).
        const float p0 = x0 * cosv[i], p1 = x1 * sinv[i];
        const float p2 = x1 * cosv[i], p3 = x0 * sinv[i];
        store(base, t, head + i, p0 - p1);
        store(base, t, head + i + half, p2 + p3);
      }
    }
  }
}

HostTensor add(const HostTensor& a, const HostTensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    throw std::invalid_argument("add: tensors differ in dtype or shape");
  }
  HostTensor out(a.dtype(), a.shape());
  std::byte* o = out.mutable_data();
  for (int64_t i = 0; i < a.numel(); ++i) {
    store(o, a.dtype(), i, load(a.data(), a.dtype(), i) + load(b.data(), b.dtype(), i));
  }
  return out;
}

HostTensor combine_rows(const HostTensor& y, std::span<const int32_t> slot,
                        std::span<const float> weight, int64_t k, const HostTensor* shared,
                        const float* shared_gate) {
  const int64_t rows = static_cast<int64_t>(slot.size()) / k, hidden = y.dim(1);
  HostTensor out(y.dtype(), {rows, hidden});
  std::byte* o = out.mutable_data();
  for (int64_t r = 0; r < rows; ++r) {
    // sigmoid(g) = 1 / (1 + exp(-g)) with the portable exp, as combine_experts computes it.
    const float s =
        shared ? kernels::portable::div(
                     1.0f, kernels::portable::add(1.0f, kernels::portable::exp(-shared_gate[r])))
               : 0.0f;
    for (int64_t c = 0; c < hidden; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const size_t at = static_cast<size_t>(r * k + j);
        acc += weight[at] * load(y.data(), y.dtype(), int64_t{slot[at]} * hidden + c);
      }
      if (shared) acc += s * load(shared->data(), shared->dtype(), r * hidden + c);
      store(o, y.dtype(), r * hidden + c, acc);
    }
  }
  return out;
}

HostTensor swiglu(const HostTensor& gate_up) {
  const int64_t rows = gate_up.dim(0);
  const int64_t inter = gate_up.dim(1) / 2;
  const DType t = gate_up.dtype();
  HostTensor out(t, {rows, inter});
  std::byte* o = out.mutable_data();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < inter; ++j) {
      const float g = load(gate_up.data(), t, r * 2 * inter + j);
      const float u = load(gate_up.data(), t, r * 2 * inter + inter + j);
      // portable::exp, not std::exp: the device decoder (kernels/decode_elementwise.cu) computes
      // the same expression with the same exp, and no libm exp is bitwise equal to CUDA's.
      const float silu =
          kernels::portable::div(g, kernels::portable::add(1.0f, kernels::portable::exp(-g)));
      store(o, t, r * inter + j, kernels::portable::mul(silu, u));
    }
  }
  return out;
}

HostTensor reshaped(const HostTensor& t, std::vector<int64_t> shape) {
  HostTensor out(t.dtype(), std::move(shape));
  if (out.nbytes() != t.nbytes()) throw std::invalid_argument("reshaped: element counts differ");
  std::memcpy(out.mutable_data(), t.data(), t.nbytes());
  return out;
}

int32_t argmax_row(const HostTensor& logits, int64_t row) {
  const int64_t v = logits.dim(1);
  const float* x = logits.data_as<float>() + row * v;
  int32_t best = 0;
  float best_value = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (int64_t i = 0; i < v; ++i) {
    if (std::isnan(x[i])) continue;
    if (!found || x[i] > best_value) {
      best = static_cast<int32_t>(i);
      best_value = x[i];
      found = true;
    }
  }
  return best;
}

}  // namespace nvdet
