// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The template of the exported train.py (train_template.cpp).

namespace nns::exporting {

extern const char* const kTrainTemplate;

}  // namespace nns::exporting
