// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Everything in nns::data: data sets, the built-in generators (points, images, sequences) and
// their catalog, CSV files and the data loader.
#include "engine/data/catalog.h"
#include "engine/data/csv.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/data/generators.h"
#include "engine/data/sequences.h"
