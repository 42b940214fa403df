#pragma once
// `nvdet diff A B`: two tensor files (or two `--dump` folders) compared bit for bit. A and B may
// be .npy or .safetensors files in any mix (a .npy and a .safetensors holding the same values,
// dtype and shape compare identical: values are compared, not file bytes), or two folders, whose
// .safetensors files are paired by their path inside the folder.
//
// Pairing: one tensor on each side -> those two (names may differ); --tensor NAME -> the tensor
// of that name on each side that has names (a .npy side has one unnamed tensor); otherwise every
// name both sides hold, with the names only one side holds listed (and counted as a difference).
//
// Errors that are the user's (unreadable or corrupt file, dtypes or shapes that differ, nothing
// to pair) throw Error(kBadInput): exit 2 with one sentence.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/compare/compare.h"
#include "lib/tensorio/any_tensor.h"

namespace nvdet {

struct DiffOptions {
  std::string tensor;          // --tensor NAME ("" = all)
  std::optional<ElemType> as;  // --dtype: read 2-byte integers as bf16/fp16
  std::optional<double> atol;  // --atol: pass when every |a - b| <= atol (bits still reported)
};

struct TensorDiff {
  std::string name;              // the pairing key ("" for a lone pair)
  std::string a_label, b_label;  // "a.npy", "b.safetensors:w"
  ElemType type = ElemType::kF32;
  std::vector<int64_t> shape;
  TensorComparison cmp;
  bool passed = true;  // identical, or within --atol
};

struct DiffResult {
  std::string a, b;
  std::vector<TensorDiff> tensors;
  std::vector<std::string> only_in_a, only_in_b;
  std::optional<double> atol;
  bool identical = true;  // every pair bit for bit, and nothing on one side only
  bool passed = true;     // identical, or every pair within --atol and nothing on one side only
};

DiffResult diff_tensor_files(const std::filesystem::path& a, const std::filesystem::path& b,
                             const DiffOptions& options);

// The first mismatch in the audit's words: "element (1, 2) [flat 5]: 1.25 vs 1.2500001 (bits
// 0x3fa00000 vs 0x3fa00001, 1 ulp)". `rows` adds the first differing row and the row count.
std::string render_diff_text(const DiffResult& r, bool rows);
// {"a", "b", "identical", "passed", "first_mismatch" (the first differing pair's, same object as
// the audit report's), "tensors": [{name, a, b, dtype, shape, identical, first_mismatch,
// max_abs_diff, max_rel_diff, mismatch_count, first_mismatch_row, mismatched_rows, rows}],
// "only_in_a", "only_in_b"}.
nlohmann::ordered_json diff_to_json(const DiffResult& r);

}  // namespace nvdet
