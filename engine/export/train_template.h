// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The template of the exported train.py (train_template.cpp), its data parts and the recorder
// it imports.

namespace nns::exporting {

extern const char* const kTrainTemplate;
// Its {{DATA_CODE}}: load_data(), the train set and the test tensors, from data.pt's tensors; or,
// for a user's files, from source_dataset(), which one of the sources below defines, and the
// split's indices in data.pt.
extern const char* const kDataPtLoader;
extern const char* const kFilesLoader;
extern const char* const kImageFolderSource;  // torchvision's ImageFolder
extern const char* const kMnistSource;        // MNIST idx files
extern const char* const kCifarSource;        // CIFAR binary batches; {{HUNDRED}}: CIFAR-100
extern const char* const kNumpySource;        // .npz and .npy arrays
// resources/python/nnstudio_runs.py, written beside train.py: it records the run into a run
// store `nnstudio-cli runs` and the window read (generated from the file by CMake).
extern const char* const kRecorderModule;

}  // namespace nns::exporting
