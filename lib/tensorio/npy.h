#pragma once
// numpy .npy files: the magic "\x93NUMPY", a version (1.0: 2-byte header length; 2.0 and 3.0:
// 4-byte; 3.0 allows UTF-8 in the header), a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces to a 64-byte
// boundary and ended by '\n', then the raw data.
//
// Read: descr b1, i1/i2/i4/i8, u1/u2/u4/u8, f2, f4, f8 in either byte order ('<', '>', '|', '=';
// big-endian data is swapped to little-endian), and V2 (raw 2-byte records, as bfloat16 arrays
// from some libraries are saved). fortran_order True is accepted and transposed to C order, so
// a Fortran-ordered array compares equal to the C-ordered array of the same values. Structured
// dtypes, object arrays and files shorter than their shape says throw kBadInput naming the file.
//
// numpy has no bfloat16: bf16 data is usually saved as 2-byte integers (<u2 / <i2). `as` says
// how to read such data: with as == bf16 (or fp16), u2/i2/V2 data is taken bit for bit as that
// type. Asking for a type the file's data cannot be read as (f4 data as bf16) throws kBadInput.
//
// Write: version 1.0 when the header fits (2.0 otherwise), little-endian, C order; bf16 is
// written as '<u2' (numpy cannot name it), fp16 as '<f2', fp32 as '<f4'. Atomic.
#include <filesystem>
#include <optional>

#include "lib/core/tensor.h"
#include "lib/tensorio/any_tensor.h"

namespace nvdet {

AnyTensor read_npy(const std::filesystem::path& path, std::optional<ElemType> as = std::nullopt);
// The raw .npy bytes of a file's contents (`what` names it in error messages).
AnyTensor parse_npy(std::string_view bytes, const std::string& what,
                    std::optional<ElemType> as = std::nullopt);

void write_npy(const std::filesystem::path& path, const AnyTensor& t);
void write_npy(const std::filesystem::path& path, const HostTensor& t);
// The bytes write_npy writes.
std::string encode_npy(const AnyTensor& t);

}  // namespace nvdet
