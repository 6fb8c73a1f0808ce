// .npy reader and writer (float32, C order). Format: "\x93NUMPY", major, minor, a header
// length (u16 in 1.0; u32 in 2.0/3.0), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (T, D), } padded with spaces to a
// multiple of 64 bytes and ended by '\n', then the data.
#include "io/npy.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "ffn/error.hpp"
#include "io/atomic_file.hpp"

namespace ffn {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeader = 1 << 20;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// A strict parser of the header dict: string keys; values are strings, True/False or
// tuples of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  void parse(std::string& descr, std::optional<bool>& fortran, std::optional<std::vector<int64_t>>& shape) {
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        descr = string_literal();
      } else if (key == "fortran_order") {
        fortran = boolean();
      } else if (key == "shape") {
        shape = tuple();
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++i_;
    }
    ++i_;
    skip_space();
    if (i_ != s_.size()) fail("unexpected text after the header dict");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_ + ": malformed .npy header (" + what + ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") return i_ += 4, true;
    if (s_.substr(i_, 5) == "False") return i_ += 5, false;
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("shape entries must be non-negative integers");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (INT64_MAX - 9) / 10) fail("a shape entry overflows 64 bits");
        v = v * 10 + (s_[i_++] - '0');
      }
      dims.push_back(v);
      if (dims.size() > 32) fail("more than 32 dimensions");
      skip_space();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("expected ',' or ')' in shape");
    }
    ++i_;
    return dims;
  }

  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw Error("cannot open '" + path + "' for reading");
  struct stat st {};
  if (fstat(fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode)) throw Error("'" + path + "' is not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);

  unsigned char pre[12];
  if (std::fread(pre, 1, 8, f.get()) != 8 || std::memcmp(pre, kMagic, 6) != 0)
    throw Error(path + ": not a .npy file (bad magic)");
  const int major = pre[6];
  uint64_t header_len = 0, prefix = 0;
  if (major == 1) {
    if (std::fread(pre + 8, 1, 2, f.get()) != 2) throw Error(path + ": truncated .npy preamble");
    header_len = pre[8] | (pre[9] << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (std::fread(pre + 8, 1, 4, f.get()) != 4) throw Error(path + ": truncated .npy preamble");
    header_len = pre[8] | (pre[9] << 8) | (pre[10] << 16) | (static_cast<uint64_t>(pre[11]) << 24);
    prefix = 12;
  } else {
    throw Error(path + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > kMaxHeader) throw Error(path + ": .npy header length " + std::to_string(header_len) + " is absurd");
  if (prefix + header_len > file_size) throw Error(path + ": truncated .npy header");
  std::string header(header_len, '\0');
  if (std::fread(header.data(), 1, header_len, f.get()) != header_len) throw Error(path + ": truncated .npy header");

  std::string descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  HeaderParser(header, path).parse(descr, fortran, shape);
  if (!shape || !fortran || descr.empty()) throw Error(path + ": .npy header lacks descr, fortran_order or shape");
  if (descr != "<f4")
    throw Error(path + ": dtype '" + descr + "' is not supported; ffn reads float32 ('<f4') arrays");
  if (*fortran) throw Error(path + ": Fortran-order arrays are not supported; save a C-order array");

  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d != 0 && count > INT64_MAX / 4 / d) throw Error(path + ": shape's element count overflows");
    count *= d;
  }
  const uint64_t data_bytes = static_cast<uint64_t>(count) * 4;
  const uint64_t available = file_size - prefix - header_len;
  if (available != data_bytes)
    throw Error(path + ": shape says " + std::to_string(data_bytes) + " data bytes but the file holds " +
                std::to_string(available));

  NpyArray out{*shape, AlignedFloats(count)};
  if (count > 0 && std::fread(out.data.data(), 4, static_cast<size_t>(count), f.get()) != static_cast<size_t>(count))
    throw Error(path + ": read error in the data");
  return out;
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  std::string dims;  // "()", "(3,)" or "(3, 4)", as Python writes tuples
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0) throw Error("write_npy '" + path + "': negative dimension " + std::to_string(d));
    if (d != 0 && count > INT64_MAX / 4 / d) throw Error("write_npy '" + path + "': element count overflows");
    count *= d;
    dims += (i ? ", " : "") + std::to_string(d);
  }
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad so that the data starts at a multiple of 64 bytes, header ending in '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 65535) throw Error("write_npy '" + path + "': header too long");
  std::string preamble(kMagic, 6);
  preamble.push_back('\x01');
  preamble.push_back('\x00');
  preamble.push_back(static_cast<char>(header.size() & 0xFF));
  preamble.push_back(static_cast<char>(header.size() >> 8));
  io::write_file_atomically(path, {{preamble.data(), preamble.size()},
                                   {header.data(), header.size()},
                                   {data, static_cast<size_t>(count) * 4}});
}

}  // namespace ffn
