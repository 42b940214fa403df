#pragma once
// A backend computes what its support table claims: for every backend op and dtype its record
// says it computes on this machine, the backend, created from its record, runs a small seeded
// call of that op and agrees with cpu-reference. A flavor that claims an op it does not handle
// (its run throws "does not compute", or returns the wrong shape) fails here. Shared by the CPU
// test (tests/backend_claims_test.cpp) and the GPU one (tests/gpu_backend_claims_test.cpp).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "tests/cpu_kernel_fixtures.h"

namespace nvdet::testing {

// The inputs of one small call of `op` in `dtype` (outputs in `dtype` too, which every backend
// takes, cudnn included), owning its tensors.
struct ClaimCall {
  HostTensor a, w, x, weight, router;
  std::vector<HostTensor> gate_up, down;
  std::unique_ptr<AttentionBatch> attention;
  OpArgs args;
};

inline std::unique_ptr<ClaimCall> make_claim_call(OpKind op, DType dtype) {
  auto c = std::make_unique<ClaimCall>();
  switch (op) {
    case OpKind::kGemm: {
      c->a = seeded_rows(dtype, 64, {11, 12, 13});
      c->w = seeded_rows(dtype, 64, {21, 22, 23, 24, 25, 26, 27, 28}, 0.125f);
      c->args = GemmArgs{&c->a, &c->w, nullptr, dtype, false};
      break;
    }
    case OpKind::kRmsNorm:
      c->x = seeded_rows(dtype, 64, {31, 32, 33});
      c->weight = seeded_vector(dtype, 64, 34);
      c->args = RmsNormArgs{&c->x, &c->weight, 1e-6f, dtype};
      break;
    case OpKind::kLogSoftmax:
      c->x = seeded_rows(dtype, 96, {41, 42, 43});
      c->args = LogSoftmaxArgs{&c->x, dtype};
      break;
    case OpKind::kAttentionDecode:
      c->attention = make_attention_batch(dtype, {{51, 40}, {52, 17}}, 4, 2, 64, false);
      c->args = c->attention->decode(dtype);
      break;
    case OpKind::kAttentionPrefill:
      c->attention = make_attention_batch(dtype, {{61, 40, 8, 16}, {62, 21, 5, 0}}, 4, 2, 64, true);
      c->args = c->attention->prefill(dtype);
      break;
    case OpKind::kMoe: {
      constexpr int64_t kHidden = 64, kInter = 32, kExperts = 4;
      c->x = seeded_rows(dtype, kHidden, {71, 72, 73, 74, 75});
      c->router = seeded_rows(dtype, kHidden, {81, 82, 83, 84}, 0.125f);
      for (int64_t e = 0; e < kExperts; ++e) {
        std::vector<uint64_t> gu, dn;
        for (int64_t r = 0; r < 2 * kInter; ++r) gu.push_back(1000 + 100 * e + r);
        for (int64_t r = 0; r < kHidden; ++r) dn.push_back(5000 + 100 * e + r);
        c->gate_up.push_back(seeded_rows(dtype, kHidden, gu, 0.125f));
        c->down.push_back(seeded_rows(dtype, kInter, dn, 0.125f));
      }
      MoeArgs m;
      m.x = &c->x;
      m.router = &c->router;
      for (const HostTensor& t : c->gate_up) m.gate_up.push_back(&t);
      for (const HostTensor& t : c->down) m.down.push_back(&t);
      m.top_k = 2;
      m.out_dtype = dtype;
      c->args = m;
      break;
    }
    case OpKind::kModel:
    case OpKind::kProbe:
      return nullptr;  // a scenario op, not a backend op: no support table names it
  }
  return c;
}

// The backend ops a support table can name.
inline std::vector<OpKind> backend_ops() {
  return {OpKind::kGemm,
          OpKind::kRmsNorm,
          OpKind::kLogSoftmax,
          OpKind::kAttentionDecode,
          OpKind::kAttentionPrefill,
          OpKind::kMoe};
}

// Runs every claimed (op, dtype) of `r` that this machine can run; returns how many ran. The
// tolerance, 5e-2 of max |reference| or 4 ulp of a 16-bit output, is loose on purpose: the
// kernels' own tests hold them to their real bounds; this one asks whether the op is handled.
inline int expect_backend_computes_its_claims(const BackendRegistration& r,
                                              const DeviceFacts& device) {
  std::unique_ptr<Backend> backend, reference;
  int ran = 0;
  for (const OpKind op : backend_ops()) {
    for (const DType dtype : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      const Support answer = r.supports(op, dtype, device);
      if (!answer.ok()) continue;  // not claimed, or not on this machine
      const std::string what =
          r.info.name + " " + std::string(op_name(op)) + " " + std::string(dtype_name(dtype));
      const std::unique_ptr<ClaimCall> call = make_claim_call(op, dtype);
      if (!backend) backend = r.make();
      if (!reference) reference = make_backend("cpu-reference");
      HostTensor got, want;
      try {
        got = backend->run(call->args, nullptr);
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << " is claimed by the support table but refused: " << e.what();
        continue;
      }
      want = reference->run(call->args, nullptr);
      expect_close_to_reference(got, want, 5e-2, 4, what);
      ++ran;
    }
  }
  return ran;
}

}  // namespace nvdet::testing
