// SPDX-License-Identifier: GPL-3.0-or-later
// Finding and running the tracer (resources/python/nns_torch_trace.py). The window runs the
// same command line in a QProcess (ui/app/torch_import_dialog.cpp); the CLI runs it here.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/graph/node_types.h"
#include "engine/tensor/error.h"
#include "engine/torch_import/torch_import.h"

extern char** environ;

namespace nns::torch_import {
namespace {

constexpr const char* kTracer = "nns_torch_trace.py";

// Removes a folder when it goes out of scope.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "nns-torch-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw ValueError("cannot make a temporary folder: " + std::string(std::strerror(errno)));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

struct Finished {
  int exit_code = -1;
  std::string error_output;
};

// Runs argv, passing each stdout line that starts with "progress: " to `progress` and keeping
// stderr; the tracer writes little, so both pipes are read as they fill.
Finished run(const std::vector<std::string>& argv,
             const std::function<void(const std::string&)>& progress) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw ValueError("cannot start " + argv[0] + ": " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw ValueError("cannot run the Python interpreter '" + argv[0] + "': " + std::strerror(rc) +
                     " (give one with --python PY or $NNSTUDIO_PYTHON, one that imports torch)");
  }
  std::string out_buffer, err;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_pipes = 2;
  char chunk[4096];
  while (open_pipes > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (pollfd& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(f.fd, chunk, sizeof chunk);
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_pipes;
        continue;
      }
      if (&f == &fds[1]) {
        err.append(chunk, static_cast<size_t>(n));
        continue;
      }
      out_buffer.append(chunk, static_cast<size_t>(n));
      for (size_t nl; (nl = out_buffer.find('\n')) != std::string::npos;) {
        const std::string line = out_buffer.substr(0, nl);
        out_buffer.erase(0, nl + 1);
        const std::string prefix = "progress: ";
        if (progress && line.rfind(prefix, 0) == 0) progress(line.substr(prefix.size()));
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Finished f;
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  f.error_output = err;
  return f;
}

}  // namespace

bool is_pytorch_source(const std::string& source) {
  return std::filesystem::path(source).extension() != ".onnx";
}

std::string python_for(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("NNSTUDIO_PYTHON"); env && *env) return env;
  return "python3";
}

std::string find_tracer(const std::string& program_dir) {
  std::vector<std::filesystem::path> dirs;
  if (!program_dir.empty())
    dirs.push_back(std::filesystem::path(program_dir) / ".." / "share" / "nnstudio" / "python");
  dirs.emplace_back(NNS_TRACER_SOURCE_DIR);
  std::string tried;
  for (const auto& dir : dirs) {
    const std::filesystem::path path = dir / kTracer;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec))
      return std::filesystem::weakly_canonical(path, ec).string();
    tried += (tried.empty() ? "" : ", ") + path.string();
  }
  throw ValueError("the PyTorch tracer " + std::string(kTracer) + " is missing (looked in " +
                   tried + "): reinstall NN Studio");
}

std::vector<std::string> leaf_types() {
  std::vector<std::string> names;
  for (const graph::NodeType& t : graph::node_types()) {
    if (t.kind == graph::NodeKind::Module) names.push_back(t.name);
  }
  return names;
}

std::vector<std::string> tracer_arguments(const std::string& tracer, const Request& request,
                                          const std::string& out_dir) {
  std::string leaves;
  for (const std::string& name : leaf_types()) leaves += (leaves.empty() ? "" : ",") + name;
  std::vector<std::string> args{tracer, "--source", request.source, "--leaves",
                                leaves, "--out",    out_dir};
  for (const std::string& input : request.inputs) {
    args.push_back("--input");
    args.push_back(input);
  }
  return args;
}

std::string tracer_failure(const std::string& python, int exit_code,
                           const std::string& error_output) {
  std::string text = error_output;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (exit_code == 3)
    return text +
           "\nThe PyTorch import needs a Python that has torch: install it there, or name one "
           "with --python PY (in the window: the Python field) or $NNSTUDIO_PYTHON (Debian's "
           "python3-torch is /usr/bin/python3)";
  if (text.empty())
    return "the PyTorch tracer (" + python + ") failed with exit status " +
           std::to_string(exit_code) + " and said nothing";
  return text;
}

graph::ImportedProject import_pytorch(const Request& request, const std::string& program_dir,
                                      const std::function<void(const std::string&)>& progress) {
  const std::string tracer = find_tracer(program_dir);
  const std::string python = python_for(request.python);
  TempDir dir;
  std::vector<std::string> argv{python};
  for (std::string& a : tracer_arguments(tracer, request, dir.path)) argv.push_back(std::move(a));
  const Finished f = run(argv, progress);
  if (f.exit_code != 0) throw ValueError(tracer_failure(python, f.exit_code, f.error_output));
  if (progress) progress("building the project");
  return read_trace(dir.path);
}

}  // namespace nns::torch_import
