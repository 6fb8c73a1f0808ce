// A read-only memory mapping of a whole regular file: the checkpoint readers parse headers
// in place and hand out tensor bytes without copying them.
#pragma once

#include <cstddef>
#include <string>

namespace ffn {

class MappedFile {
 public:
  // Throws ffn::Error naming the path: missing, not a regular file, or not mappable. An
  // empty file maps to size() == 0 and data() == nullptr.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  // Moving hands the mapping over (a reader takes the mapping its opener checked the magic
  // of, so that a file is opened once); the moved-from object holds none.
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;

  const std::string& path() const { return path_; }
  const std::byte* data() const { return static_cast<const std::byte*>(map_); }
  size_t size() const { return size_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ffn
