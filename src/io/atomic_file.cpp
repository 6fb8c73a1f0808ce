#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ffn/error.hpp"

namespace ffn::io {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(what + " '" + path + "': " + std::strerror(err));
}

// A new, empty file in path's folder, named after it (path.tmp.XXXXXX, mkstemp's unique
// suffix): its descriptor, or −1 with errno set; `tmp` receives its name.
int create_temporary_beside(const std::string& path, std::string& tmp) {
  tmp = path + ".tmp.XXXXXX";
  return mkstemp(tmp.data());
}

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<Chunk>& chunks) {
  std::string tmp;
  const int fd = create_temporary_beside(path, tmp);
  if (fd < 0) fail("cannot create a temporary file for", path, errno);
  auto abandon = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(what, path, err);
  };
  for (const auto& c : chunks) {
    const char* p = static_cast<const char*>(c.data);
    size_t left = c.bytes;
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        abandon("cannot write");
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  // mkstemp creates the file 0600; give it the permissions an ordinary file gets.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) abandon("cannot set permissions of");
  if (::fsync(fd) != 0) abandon("cannot flush");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot close", path, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot rename the temporary file onto", path, err);
  }
}

}  // namespace ffn::io

namespace ffn {

void write_file_atomically(const std::string& path, std::string_view content) {
  io::write_file_atomically(path, {{content.data(), content.size()}});
}

void check_file_writable(const std::string& path, const std::string& what) {
  if (path.empty()) throw Error(what + ": the path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(what + " '" + path + "': is a folder, not a file");
  std::string tmp;
  const int fd = io::create_temporary_beside(path, tmp);
  if (fd < 0) {
    const int err = errno;
    throw Error(what + " '" + path + "': cannot be written (" + std::strerror(err) + ")");
  }
  ::close(fd);
  ::unlink(tmp.c_str());
}

}  // namespace ffn
