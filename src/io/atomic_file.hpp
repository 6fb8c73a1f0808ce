// Files written whole or not at all: the content goes to a temporary file in the
// destination's folder, is flushed to disk, then renamed over the destination, so a crash
// or a full disk leaves either the old file or the new one, never a torn one. The library's
// own writers (npy, safetensors, GGUF) write their chunks this way; the CLI writes its text
// results (`ffn bench --json`, SVG pictures) by the text form.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ffn::io {

struct Chunk {
  const void* data;
  size_t bytes;
};

// Throws ffn::Error naming the path and the system error.
void write_file_atomically(const std::string& path, const std::vector<Chunk>& chunks);

}  // namespace ffn::io

namespace ffn {

// The same for one text. Throws ffn::Error naming the path and the system error.
void write_file_atomically(const std::string& path, std::string_view content);

// Throws ffn::Error naming `what` (e.g. "--json"), the path and the system error unless a
// file can be written there now: creates and removes a temporary file in its folder. For
// commands that write their results only at the end of a long run, so that a wrong path
// fails at once rather than after the work.
void check_file_writable(const std::string& path, const std::string& what);

}  // namespace ffn
