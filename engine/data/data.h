#pragma once
// Everything in nns::data: data sets, the built-in generators and their catalog, CSV files and
// the data loader.
#include "engine/data/catalog.h"
#include "engine/data/csv.h"
#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/data/generators.h"
