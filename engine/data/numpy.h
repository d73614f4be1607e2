// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// NumPy's array files: .npy (np.save; format versions 1.0, 2.0 and 3.0) and .npz (np.savez
// and np.savez_compressed: a zip of .npy files, STORED or DEFLATE).
//
//   Tensor x = nns::data::read_npy_file("x.npy");  // float32 [60000, 784]
//   for (auto& [name, t] : nns::data::read_npz_file("mnist.npz")) ...  // "x_train", ...
//
// float16/32/64 keep their dtype, bool is kBool and every integer type becomes kInt64 (a
// uint64 value above INT64_MAX is refused); big-endian data is swapped and Fortran-ordered
// arrays come back contiguous, row-major. Complex, object, string, datetime and structured
// arrays are refused. Every problem throws serialize::FileError naming the file (and the
// array, in an .npz); the header is parsed strictly, sizes are checked against the file
// before anything is allocated, and nothing in a file can crash the reader.
#include <string>
#include <utility>
#include <vector>

#include "engine/serialize/bytes.h"
#include "engine/tensor/tensor.h"

namespace nns::data {

Tensor read_npy(const serialize::ByteSource& source);
Tensor read_npy_file(const std::string& path);

// The arrays in archive order, named without the ".npy" suffix (np.savez's positional arrays
// are "arr_0", "arr_1", ...).
std::vector<std::pair<std::string, Tensor>> read_npz(const serialize::ByteSource& source);
std::vector<std::pair<std::string, Tensor>> read_npz_file(const std::string& path);

}  // namespace nns::data
