#include "lib/core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/core/checked_parse.h"
#include "lib/core/child_process.h"
#include "lib/core/error.h"
#include "lib/core/temporary_files.h"

namespace nvdet {
namespace {

// Running out of room while writing is the machine's condition, not the user's mistake: exit 3.
// Everything else (no such folder, no permission, a read-only file system) is exit 2.
bool out_of_room(int err) { return err == ENOSPC || err == EFBIG || err == EDQUOT || err == EIO; }

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view what, int err) {
  const std::string message =
      "cannot write " + std::string(what) + " '" + path.string() + "': " + std::strerror(err);
  if (out_of_room(err)) throw_runtime_error(message);
  throw_input_error(message);
}

// Every temporary nvdet creates (the files of writes in progress, a synthetic checkpoint's
// folder), for the signal handler to remove. Fixed storage and atomics only: a handler may touch
// nothing else. A temporary is registered before it is created, so a signal can never leave one
// behind unregistered.
constexpr int kTempSlots = 32;
constexpr size_t kTempPathMax = 4096;
char g_temp_paths[kTempSlots][kTempPathMax];
std::atomic<bool> g_temp_claimed[kTempSlots];  // slot taken by a write
std::atomic<bool> g_temp_ready[kTempSlots];    // its name is complete: the handler may unlink it
std::atomic<bool> g_temp_folder[kTempSlots];   // a folder: its files go first, then the folder

int register_temp(const std::filesystem::path& temp, bool folder = false) {
  const std::string& s = temp.native();
  if (s.size() >= kTempPathMax) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    bool expected = false;
    if (!g_temp_claimed[i].compare_exchange_strong(expected, true)) continue;
    std::memcpy(g_temp_paths[i], s.c_str(), s.size() + 1);
    g_temp_folder[i].store(folder);
    g_temp_ready[i].store(true);
    return i;
  }
  return -1;  // more concurrent writes than slots: the write still works, only not cleaned up
}

void unregister_temp(int slot) {
  if (slot < 0) return;
  g_temp_ready[slot].store(false);
  g_temp_claimed[slot].store(false);
}

// Removes the files directly inside `dir` and then `dir`, with system calls only (opendir and
// readdir allocate, which a signal handler must not): getdents64 lists the entries.
void remove_folder_in_handler(const char* dir) {
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buf[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
        unsigned short reclen = 0;
        std::memcpy(&reclen, buf + at + 16, sizeof reclen);
        const char* name = buf + at + 19;
        if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))))
          ::unlinkat(fd, name, 0);
        at += reclen;
      }
    }
    ::close(fd);
  }
  ::rmdir(dir);
}

std::atomic<int> g_files_written{0};  // completed atomic writes (reports, manifests, dumps)

// Async-signal-safe pieces of the interruption line: fixed buffers, write(2) only.
void put(char* line, size_t& at, size_t cap, const char* text) {
  while (*text && at + 1 < cap) line[at++] = *text++;
}
void put_int(char* line, size_t& at, size_t cap, int v) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 15);
  while (n > 0 && at + 1 < cap) line[at++] = digits[--n];
}

// One line on stderr: what the interruption removed and how many files were complete before it,
// so that a CI log says which reports to trust.
extern "C" void remove_temps_and_exit(int sig) {
  static char line[1024];
  size_t at = 0;
  put(line, at, sizeof line, "nvdet: interrupted by ");
  put(line, at, sizeof line, sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal");
  put(line, at, sizeof line, ": ");
  // Child processes first (the shards of --devices): they stop and remove their own temporaries
  // before their folder is removed here.
  if (const int children = stop_children_for_signal(sig); children > 0) {
    put(line, at, sizeof line, "stopped ");
    put_int(line, at, sizeof line, children);
    put(line, at, sizeof line, children == 1 ? " child process; " : " child processes; ");
  }
  int removed = 0;
  for (int i = 0; i < kTempSlots; ++i) {
    if (!g_temp_ready[i].load()) continue;
    const bool gone = g_temp_folder[i].load() ? (remove_folder_in_handler(g_temp_paths[i]), true)
                                              : ::unlink(g_temp_paths[i]) == 0;
    if (!gone) continue;
    put(line, at, sizeof line, removed ? ", " : "removed the unfinished ");
    put(line, at, sizeof line, g_temp_paths[i]);
    ++removed;
  }
  if (!removed) put(line, at, sizeof line, "no file was being written");
  put(line, at, sizeof line, "; ");
  put_int(line, at, sizeof line, g_files_written.load());
  put(line, at, sizeof line, " files written before it are complete\n");
  if (at + 1 == sizeof line) line[at - 1] = '\n';
  (void)!::write(STDERR_FILENO, line, at);
  ::_exit(128 + sig);
}

std::string reason_not_regular(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "it is a folder, not a regular file";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "it is a device node, not a regular file";
  if (S_ISFIFO(st.st_mode)) return "it is a FIFO, not a regular file";
  if (S_ISSOCK(st.st_mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

[[noreturn]] void fail_reason(const std::filesystem::path& path, std::string_view what,
                              const std::string& reason) {
  throw_input_error("cannot write " + std::string(what) + " '" + path.string() + "': " + reason);
}

// Throws when something other than a regular file or a symbolic link sits at `path`.
void refuse_non_regular(const std::filesystem::path& path, std::string_view what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent (or unreadable: the write will say)
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return;
  fail_reason(path, what, reason_not_regular(st));
}

// Test hook: NVDET_TEST_HOLD_WRITE_MS keeps each temporary file in place that long before it is
// renamed, so that a test can interrupt nvdet while a write is in progress and check that the
// temporary file is removed. Compiled only into checking builds (-DNVDET_TEST_HOOKS=ON): a
// release nvdet never reads the variable, so no environment can slow its writes down.
void hold_for_tests() {
#ifdef NVDET_TEST_HOOKS
  const char* ms = std::getenv("NVDET_TEST_HOLD_WRITE_MS");
  if (!ms || !*ms) return;
  const std::optional<int64_t> v = parse_integer<int64_t>(ms);
  if (v && *v > 0 && *v < 600000) ::usleep(static_cast<useconds_t>(*v) * 1000);
#endif
}

// A temporary name in the target's own folder (rename across file systems is not atomic),
// unique per process and per call so that concurrent writers never share one.
std::filesystem::path temp_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  std::string name = ".";
  name.append(path.filename().string()).append(".tmp-").append(std::to_string(::getpid()));
  name.append("-").append(std::to_string(counter++));
  return path.parent_path() / name;
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       std::string_view what) {
  AtomicFileSet one;
  one.stage(path, content, what);
  one.commit();
}

AtomicFileSet::~AtomicFileSet() { discard(); }

void AtomicFileSet::discard() {
  for (const Staged& s : staged_) {
    ::unlink(s.temp.c_str());
    unregister_temp(s.slot);
  }
  staged_.clear();
}

void AtomicFileSet::stage(const std::filesystem::path& path, std::string_view content,
                          std::string_view what) {
  if (path.filename().empty()) fail(path, what, EISDIR);
  refuse_non_regular(path, what);
  const std::filesystem::path temp = temp_path_for(path);
  const int slot = register_temp(temp);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    unregister_temp(slot);
    fail(path, what, err);
  }

  auto abandon = [&](int err) {
    ::close(fd);
    ::unlink(temp.c_str());
    unregister_temp(slot);
    fail(path, what, err);
  };
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon(errno);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  hold_for_tests();
  // The data must be on disk before the rename makes it visible, or a crash could leave an
  // empty file under the final name.
  if (::fsync(fd) != 0) abandon(errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    unregister_temp(slot);
    fail(path, what, err);
  }
  staged_.push_back({path, temp, std::string(what), slot});
}

std::vector<std::filesystem::path> AtomicFileSet::commit() {
  // Checked again just before the renames: something may have appeared at a target while the
  // contents were written. Every target is checked before any is replaced.
  try {
    for (const Staged& s : staged_) refuse_non_regular(s.path, s.what);
  } catch (...) {
    discard();
    throw;
  }
  std::vector<std::filesystem::path> written;
  std::vector<std::filesystem::path> dirs;
  while (!staged_.empty()) {
    const Staged s = staged_.front();
    staged_.erase(staged_.begin());
    if (::rename(s.temp.c_str(), s.path.c_str()) != 0) {
      const int err = errno;
      ::unlink(s.temp.c_str());
      unregister_temp(s.slot);
      discard();
      fail(s.path, s.what, err);
    }
    unregister_temp(s.slot);
    g_files_written.fetch_add(1);
    written.push_back(s.path);
    const std::filesystem::path dir = s.path.parent_path().empty() ? "." : s.path.parent_path();
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  // Make the renames themselves durable. Best effort: some file systems refuse fsync on a
  // folder, and the files are complete either way.
  for (const std::filesystem::path& dir : dirs) {
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }
  return written;
}

void check_output_file(const std::filesystem::path& path, std::string_view what) {
  if (path.filename().empty()) fail(path, what, EISDIR);
  refuse_non_regular(path, what);
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) fail(path, what, errno);
  if (!S_ISDIR(st.st_mode)) {
    std::string reason = "its parent '";
    reason.append(dir.string()).append("' is not a folder");
    fail_reason(path, what, reason);
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(path, what, errno);
}

void prepare_output_dir(const std::filesystem::path& dir, std::string_view what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail_reason(dir, what, ec.message());
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) fail(dir, what, errno);
  if (!S_ISDIR(st.st_mode)) fail_reason(dir, what, "not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail(dir, what, errno);
}

TemporaryFolder::TemporaryFolder(std::filesystem::path path)
    : path_(std::move(path)), slot_(register_temp(path_, true)) {}

TemporaryFolder::~TemporaryFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  unregister_temp(slot_);
}

std::filesystem::path temporary_base(const std::string& purpose) {
  const char* env = std::getenv("TMPDIR");
  const std::string dir = env ? env : "/tmp";
  std::string why;
  struct stat st {};
  if (dir.empty()) {
    why = "it is set but empty";
  } else if (::stat(dir.c_str(), &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISDIR(st.st_mode)) {
    why = "it is not a folder";
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    why = std::string("it is not writable: ") + std::strerror(errno);
  }
  if (why.empty()) return dir;
  throw_runtime_error((env ? "TMPDIR '" + dir + "'" : std::string("/tmp")) +
                      " cannot hold temporary files (" + why + "); nvdet needs it for " + purpose +
                      (env ? "; set TMPDIR to a writable folder" : ""));
}

std::optional<int> test_device_count() {
#ifdef NVDET_TEST_HOOKS
  if (const char* n = std::getenv("NVDET_TEST_DEVICE_COUNT")) {
    if (const std::optional<int> v = parse_integer<int>(n); v && *v >= 0 && *v <= 64) return v;
  }
#endif
  return std::nullopt;
}

bool test_hooks_built() {
#ifdef NVDET_TEST_HOOKS
  return true;
#else
  return false;
#endif
}

void install_interrupt_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = remove_temps_and_exit;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  // Past `ulimit -f` the kernel sends SIGXFSZ, whose default action kills the process without a
  // word and leaves the temporary behind; ignored, the write fails with EFBIG instead.
  ::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace nvdet
