// Atomic file writes: the content goes to a temporary file in the destination's folder,
// is flushed to disk, then renamed over the destination, so a crash leaves either the old
// file or the new one, never a torn one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ffn::io {

struct Chunk {
  const void* data;
  size_t bytes;
};

// Throws ffn::Error naming the path and the system error.
void write_file_atomically(const std::string& path, const std::vector<Chunk>& chunks);

}  // namespace ffn::io
