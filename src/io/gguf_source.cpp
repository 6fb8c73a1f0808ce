// Tensor source over a GGUF file. GGUF lists dimensions innermost first (ne[0] is the row
// length); PyTorch order is the reverse, so an nn.Linear weight [out, in] is ne = {in, out}.
#include "core/weight_type_table.hpp"
#include "ffn/gguf.hpp"
#include "io/source_factories.hpp"

namespace ffn::io {
namespace {

class GgufSource final : public TensorSource {
 public:
  explicit GgufSource(const std::string& path) : file_(path) {
    for (const auto& [name, t] : file_.tensors())
      tensors_[name] = {std::vector<int64_t>(t.ne.rbegin(), t.ne.rend()), std::string(ggml_type_name(t.type))};
  }
  const std::map<std::string, SourceTensor>& tensors() const override { return tensors_; }
  void read_f32(const std::string& name, float* out) const override { file_.read_f32(name, out); }
  void read_f32_window(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                       float* out) const override {
    file_.read_f32_window(name, r0, r1, c0, c1, out);
  }
  const std::string& path() const override { return file_.path(); }
  std::optional<Stored> stored(const std::string& name) const override {
    const GgufTensorInfo& t = file_.tensor(name);
    WeightType type;
    if (!weight_type_from_gguf(static_cast<uint32_t>(t.type), type)) return std::nullopt;
    // A NaN or infinite block scale would turn every output it touches into NaN: refused
    // here, naming the file and tensor.
    const int64_t cols = t.ne.empty() ? 0 : t.ne[0];
    if (cols > 0) check_block_scales(type, t.data, t.elements / cols, cols, file_.path() + ": tensor '" + name + "'");
    return Stored{type, t.data, t.bytes};
  }
  std::map<std::string, std::string> metadata() const override {
    std::map<std::string, std::string> out;
    for (const auto& key : file_.metadata_keys())
      if (auto s = file_.metadata_string(key)) out[key] = *s;
    return out;
  }
  std::optional<int64_t> metadata_int(const std::string& key) const override { return file_.metadata_int(key); }
  std::optional<double> metadata_float(const std::string& key) const override { return file_.metadata_float(key); }
  std::optional<bool> metadata_bool(const std::string& key) const override { return file_.metadata_bool(key); }

 private:
  GgufFile file_;
  std::map<std::string, SourceTensor> tensors_;
};

}  // namespace

std::unique_ptr<TensorSource> open_gguf_source(const std::string& path) { return std::make_unique<GgufSource>(path); }

}  // namespace ffn::io
