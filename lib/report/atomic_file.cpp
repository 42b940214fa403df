#include "lib/report/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "lib/core/error.h"

namespace nvdet {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view what, int err) {
  throw_input_error("cannot write " + std::string(what) + " '" + path.string() +
                    "': " + std::strerror(err));
}

// A temporary name in the target's own folder (rename across file systems is not atomic),
// unique per process and per call so that concurrent writers never share one.
std::filesystem::path temp_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  const std::string name = "." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) +
                           "-" + std::to_string(counter++);
  return path.parent_path() / name;
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content,
                       std::string_view what) {
  if (path.filename().empty()) fail(path, what, EISDIR);
  const std::filesystem::path temp = temp_path_for(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, what, errno);

  auto abandon = [&](int err) {
    ::close(fd);
    ::unlink(temp.c_str());
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
  // The data must be on disk before the rename makes it visible, or a crash could leave an
  // empty file under the final name.
  if (::fsync(fd) != 0) abandon(errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    fail(path, what, err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    fail(path, what, err);
  }
  // Make the rename itself durable. Best effort: some file systems refuse fsync on a folder,
  // and the file is complete either way.
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace nvdet
