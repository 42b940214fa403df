#pragma once
// silu(g) * u = g / (1 + exp(-g)) * u with the portable exp: SwiGLU's activation as the MoE
// block's host step computes it (lib/backend/moe_pipeline.h), the same expression as the
// decoder's SwiGLU (kernels/decode_elementwise.cu). Plain C++ on the host, like portable_math.cuh.
#include "kernels/portable_math.cuh"

namespace nvdet::kernels::portable {

NVDET_PORTABLE_FN float silu_mul(float g, float u) { return mul(div(g, add(1.0f, exp(-g))), u); }

}  // namespace nvdet::kernels::portable
