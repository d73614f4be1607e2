// SPDX-License-Identifier: GPL-3.0-or-later
// Saves that fail for real: a full filesystem (a tmpfs of 256 KiB), a read-only one, a folder
// the process may not write to, and a saving process killed (SIGKILL) at many moments. Every
// writer (project, state dict .pt and .safetensors, training checkpoint) must leave the file
// it replaces byte for byte as it was and no temporary behind, and its error must name the
// file and the system's reason. The mounts are made in a forked child in a mount namespace of
// its own, so nothing outside the test sees them; the child reports back through a pipe.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/graph/project.h"
#include "engine/serialize/bytes.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/factories.h"
#include "engine/train/checkpoint.h"
#include "support/test_util.h"

namespace nns {
namespace {

using serialize::FileError;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> folder(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// One of the file writers, saving version 0 or 1 of a file that holds about 4 * n bytes of
// data (distinguishable by content), and its reader, which throws unless the file is whole.
struct Writer {
  std::string file;  // its extension picks the format
  std::function<void(const std::string& path, int64_t n, int version)> save;
  std::function<void(const std::string& path)> load;
};

nn::StateDict weights(int64_t n, int version) {
  nn::StateDict sd;
  sd.insert("weight", full({n}, version + 1.0));
  return sd;
}

std::vector<Writer> writers() {
  return {
      {"model.nns",
       [](const std::string& path, int64_t n, int version) {
         graph::Project p;
         p.name = version ? "NetB" : "NetA";
         p.extra["notes"] = std::string(static_cast<size_t>(4 * n), version ? 'b' : 'a');
         graph::save_project(p, path);
       },
       [](const std::string& path) { graph::load_project(path); }},
      {"model.pt",
       [](const std::string& path, int64_t n, int version) {
         serialize::save_state_dict_file(weights(n, version), path);
       },
       [](const std::string& path) { serialize::load_state_dict_file(path); }},
      {"model.safetensors",
       [](const std::string& path, int64_t n, int version) {
         serialize::save_state_dict_file(weights(n, version), path);
       },
       [](const std::string& path) { serialize::load_state_dict_file(path); }},
      {"checkpoint.pt",
       [](const std::string& path, int64_t n, int version) {
         train::TrainingState state;
         state.model = weights(n, version);
         state.step = version;
         train::save_checkpoint(state, path);
       },
       [](const std::string& path) { train::load_checkpoint(path); }},
  };
}

// ---- Running a fault in a child process ---------------------------------------------------

// Thrown in the child when the system does not allow the fault to be set up.
struct Skip {
  std::string why;
};

struct ChildReport {
  int status = 0;  // the exit code, or 128 + the signal
  std::string text;
};

constexpr int kSkipped = 77;

// Runs body in a forked child (mount namespaces and user ids change the whole process) and
// returns what body returned: the child exits 0 with it, kSkipped with a Skip's reason, 2 with
// an unexpected error.
ChildReport run_in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, std::string("pipe: ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    std::string text;
    try {
      text = body();
    } catch (const Skip& s) {
      code = kSkipped;
      text = s.why;
    } catch (const std::exception& e) {
      code = 2;
      text = std::string("unexpected error: ") + e.what();
    }
    for (size_t done = 0; done < text.size();) {
      const ssize_t put = ::write(fds[1], text.data() + done, text.size() - done);
      if (put <= 0) break;
      done += static_cast<size_t>(put);
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildReport report;
  char buffer[4096];
  for (ssize_t got; (got = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    report.text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  report.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return report;
}

void write_proc_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw Skip{"cannot write " + path};
}

// In the child: a mount namespace of its own (with a user namespace when not root), in which
// a tmpfs of 256 KiB is mounted on dir.
void mount_private_tmpfs(const std::string& dir) {
  if (::unshare(CLONE_NEWNS) != 0) {
    const std::string plain = std::strerror(errno);
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      throw Skip{"no mount namespace: unshare(CLONE_NEWNS): " + plain +
                 "; with a user namespace: " + std::strerror(errno)};
    }
    write_proc_file("/proc/self/setgroups", "deny");
    write_proc_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
    write_proc_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    throw Skip{std::string("cannot make the mounts private: ") + std::strerror(errno)};
  }
  // 0755: writable by its owner only (a tmpfs is 1777 by default).
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=256k,mode=0755") != 0) {
    throw Skip{std::string("cannot mount a tmpfs: ") + std::strerror(errno)};
  }
}

void remount(const std::string& dir, bool read_only) {
  const unsigned long flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
  if (::mount(nullptr, dir.c_str(), nullptr, flags, nullptr) != 0) {
    throw Skip{std::string("cannot remount the tmpfs: ") + std::strerror(errno)};
  }
}

uint64_t free_bytes(const std::string& dir) {
  struct statvfs s {};
  ::statvfs(dir.c_str(), &s);
  return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

// Saves a small version 0 to path, then lets `fault` break the filesystem and saves a larger
// version 1 (400 KB), which must fail; what came of it, a line each: the error, whether the
// previous file is as it was, the folder, and whether the failed save's space is free again.
std::string failed_save(const Writer& w, const std::string& path,
                        const std::function<void()>& fault) {
  w.save(path, 1000, 0);
  const std::string before = read_bytes(path);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  fault();
  const uint64_t free_before = free_bytes(dir);
  std::string report;
  try {
    w.save(path, 100000, 1);
    report += "saved\n";
  } catch (const FileError& e) {
    report += std::string(e.what()) + "\n";
  }
  report += read_bytes(path) == before ? "the previous file as it was\n" : "the file changed\n";
  report += "folder: " + joined(folder(dir)) + "\n";
  report += free_bytes(dir) == free_before ? "free space as before\n" : "space lost\n";
  return report;
}

std::string expected_report(const std::string& path, const std::string& file,
                            const std::string& error) {
  return path + ": " + error + "\nthe previous file as it was\nfolder: " + file +
         "\nfree space as before\n";
}

class FileFaults : public test::TempDirTest {
 protected:
  // The folder's name gets the process id: test runs of two build trees may overlap.
  void SetUp() override {
    TempDirTest::SetUp();
    std::filesystem::remove(dir_);
    dir_ += "_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
};

TEST_F(FileFaults, AFullFilesystemLeavesThePreviousFileAndNoTemporary) {
  const std::string dir = dir_.string();
  for (const Writer& w : writers()) {
    SCOPED_TRACE(w.file);
    const std::string path = dir + "/" + w.file;
    const ChildReport r = run_in_child([&] {
      mount_private_tmpfs(dir);
      return failed_save(w, path, [] {});
    });
    if (r.status == kSkipped) GTEST_SKIP() << r.text;
    ASSERT_EQ(r.status, 0) << r.text;
    EXPECT_EQ(r.text, expected_report(path, w.file, "write failed: No space left on device"));
  }
}

TEST_F(FileFaults, AReadOnlyFilesystemLeavesThePreviousFile) {
  const std::string dir = dir_.string();
  for (const Writer& w : writers()) {
    SCOPED_TRACE(w.file);
    const std::string path = dir + "/" + w.file;
    const ChildReport r = run_in_child([&] {
      mount_private_tmpfs(dir);
      return failed_save(w, path, [&] { remount(dir, /*read_only=*/true); });
    });
    if (r.status == kSkipped) GTEST_SKIP() << r.text;
    ASSERT_EQ(r.status, 0) << r.text;
    EXPECT_EQ(r.text, expected_report(path, w.file,
                                      "cannot create a temporary file next to it: "
                                      "Read-only file system"));
  }
}

// Root may write into any folder, so as root the child becomes nobody (65534) first, in a
// private tmpfs (so that the free space it compares is its own, not a busy /tmp's); others get
// a folder without write permission.
TEST_F(FileFaults, AFolderWithoutWritePermissionLeavesThePreviousFile) {
  const std::string dir = dir_.string();
  std::filesystem::permissions(dir_, std::filesystem::perms(0755));
  const bool root = ::geteuid() == 0;
  for (const Writer& w : writers()) {
    SCOPED_TRACE(w.file);
    const std::string path = dir + "/" + w.file;
    const ChildReport r = run_in_child([&] {
      if (root) mount_private_tmpfs(dir);
      return failed_save(w, path, [&] {
        ::chmod(path.c_str(), 0644);  // readable by nobody, to compare
        if (root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
          throw Skip{std::string("cannot become nobody: ") + std::strerror(errno)};
        }
        if (!root) std::filesystem::permissions(dir, std::filesystem::perms(0555));
      });
    });
    std::filesystem::permissions(dir_, std::filesystem::perms(0755));
    if (r.status == kSkipped) GTEST_SKIP() << r.text;
    ASSERT_EQ(r.status, 0) << r.text;
    EXPECT_EQ(r.text, expected_report(path, w.file,
                                      "cannot create a temporary file next to it: "
                                      "Permission denied"));
    std::filesystem::remove(path);
  }
}

// Forks a child that saves version 1, 0, 1, ... of w's file to path over and over, writing a
// byte to the pipe it returns after each save.
pid_t start_saving(const Writer& w, const std::string& path, int64_t n, int& saves) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    try {
      for (int v = 1;; v ^= 1) {
        w.save(path, n, v);
        if (::write(fds[1], "s", 1) != 1) ::_exit(4);
      }
    } catch (...) {
      ::_exit(3);
    }
  }
  ::close(fds[1]);
  saves = fds[0];
  return pid;
}

// Waits (a minute at most) for the child's next finished save.
bool next_save(int saves) {
  pollfd p{saves, POLLIN, 0};
  char c;
  return ::poll(&p, 1, 60000) == 1 && ::read(saves, &c, 1) == 1;
}

// Kills the child; true if the kill is what ended it.
bool kill_child(pid_t pid, int saves) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(saves);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

bool has_temporary(const std::string& dir, const std::string& file) {
  for (const std::string& name : folder(dir)) {
    if (name.rfind(file + ".tmp-", 0) == 0) return true;
  }
  return false;
}

// Waits (a minute at most) until a save has made its temporary of file in dir.
bool wait_for_temporary(const std::string& dir, const std::string& file) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!has_temporary(dir, file)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// A child saves a 4 MB file over and over (version 1, 0, 1, ...) and is killed 30 times: at
// even rounds at moments spread over a whole save (after it has finished one), at odd rounds
// at moments spread over the time the temporary exists (a project is turned into JSON before
// its temporary is made, which is most of its save). After each kill the file must be exactly
// one of the two versions, byte for byte (each is checked to load once), and kills must have
// landed mid-save (a temporary left behind).
TEST_F(FileFaults, AKillDuringASaveLeavesOneWholeVersion) {
  constexpr int64_t kFloats = 1 << 20;
  constexpr int kRounds = 30;
  for (const Writer& w : writers()) {
    if (w.file == "checkpoint.pt") continue;  // the same writer as model.pt's
    SCOPED_TRACE(w.file);
    // A project's 4 MB are turned into JSON slowly: 1 MB makes saves as long as the others'.
    const int64_t n = w.file == "model.nns" ? kFloats / 4 : kFloats;
    const std::string dir = (dir_ / "target").string();
    std::filesystem::create_directories(dir);
    std::vector<std::string> versions;
    for (int v = 0; v < 2; ++v) {
      const std::filesystem::path ref_dir = dir_ / ("version" + std::to_string(v));
      std::filesystem::create_directories(ref_dir);
      const std::string ref = (ref_dir / w.file).string();  // same name: a .pt holds its stem
      w.save(ref, n, v);
      ASSERT_NO_THROW(w.load(ref));
      versions.push_back(read_bytes(ref));
    }
    ASSERT_NE(versions[0], versions[1]);
    const std::string path = dir + "/" + w.file;
    w.save(path, n, 0);

    // How long a save takes in a child that is already saving, and how much of it the
    // temporary exists.
    int saves = -1;
    pid_t pid = start_saving(w, path, n, saves);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(next_save(saves));
    const auto begun = std::chrono::steady_clock::now();
    ASSERT_TRUE(wait_for_temporary(dir, w.file));
    const auto made = std::chrono::steady_clock::now();
    ASSERT_TRUE(next_save(saves));
    const auto one_save = std::chrono::steady_clock::now() - begun;
    const auto with_temporary = std::chrono::steady_clock::now() - made;
    ASSERT_TRUE(kill_child(pid, saves));

    int mid_save = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (const std::string& name : folder(dir)) {
        if (name != w.file) std::filesystem::remove(dir + "/" + name);
      }
      pid = start_saving(w, path, n, saves);
      ASSERT_GT(pid, 0);
      if (round % 2 == 0) {
        ASSERT_TRUE(next_save(saves)) << "round " << round << ": the child saved nothing";
        std::this_thread::sleep_for(one_save * (round + 1) / kRounds);
      } else {
        ASSERT_TRUE(wait_for_temporary(dir, w.file)) << "round " << round;
        std::this_thread::sleep_for(with_temporary * round / kRounds);
      }
      ASSERT_TRUE(kill_child(pid, saves)) << "round " << round << ": the child stopped by itself";

      const std::vector<std::string> names = folder(dir);
      ASSERT_LE(names.size(), 2u) << joined(names);
      ASSERT_EQ(names[0], w.file) << joined(names);
      if (names.size() == 2) {
        EXPECT_EQ(names[1].rfind(w.file + ".tmp-", 0), 0u) << names[1];
        ++mid_save;
      }
      const std::string bytes = read_bytes(path);
      EXPECT_TRUE(bytes == versions[0] || bytes == versions[1])
          << "round " << round << ": " << bytes.size() << " bytes, neither version";
    }
    EXPECT_GT(mid_save, 0) << "no kill landed during a save";
    RecordProperty(w.file + "_kills_mid_save", mid_save);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
}

// A killed save's temporary is removed by a later save of the same file once it is an hour
// old; a younger one may be another process's save in progress, and other names are not its.
TEST_F(FileFaults, AKilledSavesTemporaryIsRemovedOnceStale) {
  const auto stale = [&](const std::string& name) {
    const std::string path = write(name, "partial");
    const struct timespec times[2] = {{::time(nullptr) - 2 * 3600, 0},
                                      {::time(nullptr) - 2 * 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  };
  stale("model.pt.tmp-AbC123");
  stale("model.pt.tmp-AbC1234");
  stale("other.pt.tmp-Old123");
  write("model.pt.tmp-Fresh1", "a save in progress");
  serialize::save_state_dict_file(weights(4, 0), (dir_ / "model.pt").string());
  EXPECT_EQ(folder(dir_.string()),
            (std::vector<std::string>{"model.pt", "model.pt.tmp-AbC1234", "model.pt.tmp-Fresh1",
                                      "other.pt.tmp-Old123"}));
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 0777;
}

// A new file gets 0666 less the umask, as any program's new file does; a replaced file keeps
// its permissions (a private file stays private).
TEST_F(FileFaults, ASaveKeepsTheReplacedFilesPermissions) {
  const mode_t umask = ::umask(027);
  const std::string path = (dir_ / "model.nns").string();
  graph::save_project(graph::Project{}, path);
  EXPECT_EQ(mode_of(path), 0640u);
  ::chmod(path.c_str(), 0600);
  graph::save_project(graph::Project{}, path);
  EXPECT_EQ(mode_of(path), 0600u);
  serialize::save_state_dict_file(weights(4, 0), path + ".pt");
  EXPECT_EQ(mode_of(path + ".pt"), 0640u);
  ::umask(umask);
}

// Saving through a symbolic link writes the file it points to; the link stays a link.
TEST_F(FileFaults, ASaveThroughASymbolicLinkReplacesItsTarget) {
  std::filesystem::create_directories(dir_ / "real");
  const std::string real = (dir_ / "real" / "model.nns").string();
  graph::save_project(graph::Project{}, real);
  std::filesystem::create_symlink("real/model.nns", dir_ / "link.nns");
  graph::Project p;
  p.name = "Linked";
  graph::save_project(p, (dir_ / "link.nns").string());
  EXPECT_TRUE(std::filesystem::is_symlink(dir_ / "link.nns"));
  EXPECT_EQ(graph::load_project(real).name, "Linked");
  EXPECT_EQ(folder((dir_ / "real").string()), std::vector<std::string>{"model.nns"});
  EXPECT_EQ(folder(dir_.string()), (std::vector<std::string>{"link.nns", "real"}));
}

}  // namespace
}  // namespace nns
