// Constructors of the tensor sources, one per format; open_tensor_source() picks one.
#pragma once

#include <memory>
#include <string>

#include "io/tensor_source.hpp"

namespace ffn::io {

std::unique_ptr<TensorSource> open_safetensors_source(const std::string& path);
std::unique_ptr<TensorSource> open_sharded_source(const std::string& index_path);
std::unique_ptr<TensorSource> open_gguf_source(const std::string& path);

}  // namespace ffn::io
