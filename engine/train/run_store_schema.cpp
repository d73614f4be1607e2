// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/run_store_schema.h"

namespace nns::train {

const graph::Json& run_store_schema() {
  // Compiled in from a file of this repository: a parse error is a build's fault, found by
  // the first test that opens a store.
  static const graph::Json schema = graph::Json::parse(kRunStoreSchemaText);
  return schema;
}

}  // namespace nns::train
