#include "lib/core/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/core/error.h"

namespace nvdet {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

std::string named(std::string_view what, const std::filesystem::path& path) {
  return std::string(what) + " '" + path.string() + "'";
}

}  // namespace

int open_regular_file(const std::filesystem::path& path, std::string_view what, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw_input_error("cannot read " + named(what, path) + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw_input_error("cannot read " + named(what, path) + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_input_error(named(what, path) + " is not a regular file (it is " + kind_of(st.st_mode) +
                      ")");
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string read_bounded_file(const std::filesystem::path& path, uint64_t max_bytes,
                              std::string_view what) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, what, &size);
  if (size > max_bytes) {
    ::close(fd);
    throw_input_error(named(what, path) + " is " + std::to_string(size) +
                      " bytes, more than the limit of " + std::to_string(max_bytes) + " for a " +
                      std::string(what));
  }
  std::string text(static_cast<size_t>(size), '\0');
  size_t got = 0;
  // Read one byte more than the size: a file that has it is growing, or is a /proc-style file
  // whose size says nothing about its content.
  char probe = 0;
  while (true) {
    char* dst = got < text.size() ? text.data() + got : &probe;
    const size_t want = got < text.size() ? text.size() - got : 1;
    const ssize_t n = ::read(fd, dst, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw_input_error("cannot read " + named(what, path) + ": " + std::strerror(err));
    }
    if (n == 0) break;
    if (got >= text.size()) {
      ::close(fd);
      throw_input_error(size == 0 ? named(what, path) +
                                        " is a special file whose size is not known in advance "
                                        "(e.g. under /proc); copy it to a regular file"
                                  : named(what, path) + " grew while it was read");
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);  // a file that shrank while read: what was there
  return text;
}

}  // namespace nvdet
