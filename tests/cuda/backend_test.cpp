// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend seen from the CPU side, on every machine: the loader's reasons (no library,
// a file that is not one, a library without the entry point), nnstudio-cli devices, the one
// line of train --device cuda without a GPU, the project's device setting, and that neither the
// engine nor the programs link the CUDA runtime. These run without a GPU; the GPU's own tests
// (op_table_test.cpp, training_test.cpp) skip there with the reason.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/cuda_test_util.h"
#include "engine/graph/project.h"
#include "engine/tensor/factories.h"
#include "engine/train/session.h"

namespace nns {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command line with stdout and stderr captured apart.
CliRun run(const std::string& command) {
  const fs::path dir = fs::temp_directory_path() / ("nns_cuda_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string line = command + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(line.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  fs::remove_all(dir);
  return r;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(CudaBackend, WithoutADeviceEveryCudaRequestSaysWhy) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string reason = cuda::unavailable_reason();
  ASSERT_FALSE(reason.empty());
  EXPECT_TRUE(cuda::devices().empty());
  EXPECT_FALSE(device_available(test::kCuda0));
  try {
    (void)randn({2, 3}).to(test::kCuda0);
    FAIL() << "to(cuda) without a device did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
  EXPECT_THROW(empty({4}, TensorOptions(kFloat32).device(test::kCuda0)), DeviceError);
  // TF32 stays off; asking for it without a backend is an error only when the library is missing.
  EXPECT_FALSE(cuda::allow_tf32());
  const CudaMemoryStats m = cuda::memory_stats(0);
  EXPECT_EQ(m.allocated, 0u);
}

TEST(CudaBackend, TheBackendLibraryIsFoundBesideTheEngine) {
  // The build puts it there (engine/cuda/CMakeLists.txt), so the loader gets past the file.
  EXPECT_EQ(fs::path(cuda::backend_path()).filename(), cuda::kBackendFile);
  EXPECT_TRUE(fs::exists(cuda::backend_path())) << cuda::backend_path();
  EXPECT_NE(cuda::backend(), nullptr) << cuda::unavailable_reason();
}

TEST(CudaBackend, TheLibrarysErrorsReachTheEngineAsDeviceErrors) {
  // Thrown inside libnnstudio-cuda.so (a library of its own, hidden symbols) and caught here
  // as the engine's nns::DeviceError: the session reports a CUDA failure with its words.
  const CudaBackendTables* t = cuda::backend();
  ASSERT_NE(t, nullptr) << cuda::unavailable_reason();
  if (cuda::device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  try {
    t->allocator->allocate(16, 0);
    FAIL() << "allocating on a machine without a GPU did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA error cuda"), std::string::npos) << e.what();
  }
  float x = 1.0f;
  EXPECT_THROW(t->copy_host_to_device(&x, &x, sizeof x, 0), DeviceError);
}

TEST(CudaBackend, DevicesListsTheCpuAndEachGpuOrWhyThereIsNone) {
  const CliRun r = run(NNS_PATH(NNS_CLI) + " devices");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("cpu ", 0), 0u) << r.out;
  const std::vector<CudaDeviceProperties> gpus = cuda::devices();
  if (gpus.empty()) {
    EXPECT_NE(r.out.find("no CUDA device: " + cuda::unavailable_reason()), std::string::npos)
        << r.out;
  } else {
    for (const CudaDeviceProperties& p : gpus) {
      EXPECT_NE(r.out.find("cuda:" + std::to_string(p.index) + "  " + p.name), std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find("compute capability " + std::to_string(p.major) + "." +
                           std::to_string(p.minor)),
                std::string::npos)
          << r.out;
    }
  }
}

TEST(CudaBackend, TheLoaderNamesWhatIsWrongWithTheLibrary) {
  const std::string cli = NNS_PATH(NNS_CLI);
  const CliRun missing = run("NNSTUDIO_CUDA_BACKEND=/nonexistent/libx.so " + cli + " devices");
  EXPECT_NE(missing.out.find("no CUDA device: the CUDA backend library /nonexistent/libx.so "
                             "named by NNSTUDIO_CUDA_BACKEND does not exist"),
            std::string::npos)
      << missing.out;
  const fs::path text = fs::temp_directory_path() / "nns_not_a_library.so";
  std::ofstream(text) << "not a shared library\n";
  const CliRun garbage = run("NNSTUDIO_CUDA_BACKEND=" + text.string() + " " + cli + " devices");
  fs::remove(text);
  EXPECT_NE(garbage.out.find("cannot be loaded"), std::string::npos) << garbage.out;
  // A real library without the entry point: the engine itself.
  const CliRun other =
      run("NNSTUDIO_CUDA_BACKEND=" + NNS_PATH(NNS_ENGINE_LIB) + " " + cli + " devices");
  EXPECT_NE(other.out.find("has no entry point nnstudio_cuda_backend_v1"), std::string::npos)
      << other.out;
}

TEST(CudaBackend, TrainOnCudaWithoutAGpuIsOneLineNamingCudaAndWhy) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const CliRun r = run(NNS_PATH(NNS_CLI) + " train " + NNS_PATH(NNS_SOURCE_DIR) +
                       "/resources/examples/spirals.nns --device cuda --epochs 1 --no-record");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("CUDA device cuda:0 is not available: " + cuda::unavailable_reason()),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  // forward --device too, before it reads anything.
  const CliRun f = run(NNS_PATH(NNS_CLI) + " forward " + NNS_PATH(NNS_SOURCE_DIR) +
                       "/resources/examples/spirals.nns --input x --output y --device cuda:1");
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("CUDA device cuda:1 is not available"), std::string::npos) << f.err;
}

TEST(CudaBackend, TheProjectsDeviceSettingIsSavedAndChecked) {
  graph::Project p;
  EXPECT_EQ(p.training.device, "cpu");
  // The CPU's setting is not written: a CPU project's file reads as before.
  EXPECT_EQ(graph::project_to_json(p).find("\"device\""), std::string::npos);
  p.training.device = "cuda:1";
  const graph::Project back = graph::parse_project(graph::project_to_json(p));
  EXPECT_EQ(back.training.device, "cuda:1");
  graph::Json j = graph::Json::parse(graph::project_to_json(p));
  j["training"]["device"] = "gpu";
  try {
    graph::parse_project(j.dump(), "x.nns");
    FAIL() << "a bad device was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("training.device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"gpu\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(train::training_device("cpu"), kCPU);
  EXPECT_THROW(train::training_device("tpu"), ValueError);
  if (cuda::device_count() == 0) {
    EXPECT_THROW(train::training_device("cuda"), DeviceError);
  } else {
    EXPECT_EQ(train::training_device("cuda"), test::kCuda0);
    EXPECT_THROW(train::training_device("cuda:" + std::to_string(cuda::device_count())),
                 DeviceError);
  }
}

TEST(CudaBackend, TheEngineAndTheProgramsDoNotLinkTheCudaRuntime) {
  for (const std::string& file : {NNS_PATH(NNS_ENGINE_LIB), NNS_PATH(NNS_CLI)}) {
    const CliRun r = run("ldd " + file);
    ASSERT_EQ(r.code, 0) << file << ": " << r.err;
    EXPECT_EQ(r.out.find("libcudart"), std::string::npos) << file << ":\n" << r.out;
    EXPECT_EQ(r.out.find("libcublas"), std::string::npos) << file << ":\n" << r.out;
  }
  // The backend library does.
  const CliRun b = run("ldd " + NNS_PATH(NNS_CUDA_BACKEND_LIB));
  EXPECT_NE(b.out.find("libcudart.so"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("libcublas.so"), std::string::npos) << b.out;
}

}  // namespace
}  // namespace nns
