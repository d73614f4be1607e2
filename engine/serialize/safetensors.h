// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// safetensors (huggingface): an 8-byte header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data. The reader validates as the
// reference implementation does (STATE_DICT_FORMATS.md A.3) and also rejects duplicate keys
// and tensor fields the format's schema forbids (the reference parser ignores them);
// the writer produces the reference's bytes (A.4).
#include <string>
#include <utility>
#include <vector>

#include "engine/nn/module.h"
#include "engine/serialize/bytes.h"

namespace nns::serialize {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsFile {
  nn::StateDict tensors;  // in data-offset order
  Metadata metadata;      // `__metadata__`, in the header's order
};

// The header is checked whole before any tensor is allocated. A dtype the engine lacks
// (I32, U8, F8_*, ...) is refused after validation, naming the tensor.
SafetensorsFile read_safetensors(const ByteSource& source);
// Tensors are written contiguous (views and shared storages are copied); keys must be
// unique by construction of StateDict. Throws ValueError when the header would exceed the
// format's 100 MB limit.
void write_safetensors(const nn::StateDict& tensors, const Metadata& metadata, ByteSink& sink);

}  // namespace nns::serialize
