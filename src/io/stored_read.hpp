// Reading a window of a weight tensor, as f32 or as the bytes a weight type stores
// (internal to the loaders: checkpoint.cpp for dense blocks, moe_checkpoint.cpp for experts).
// A tensor of more than two dimensions is seen as [product of the leading ones][last]: the
// 3-D expert tensors [E][rows][cols] give expert e's rows at e·rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ffn/inference_block.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "io/tensor_source.hpp"

namespace ffn::io {

// Reads rows [r0, r0 + m.rows()) and columns [c0, c0 + m.cols()) of a weight in nn.Linear
// layout [out][in] into m; a Conv1D weight is stored [in][out], so its window is transposed.
void read_weight(const io::TensorSource& src, const std::string& name, bool conv1d, Matrix& m, int64_t r0 = 0,
                 int64_t c0 = 0);

// Rows [r0, r1) and columns [c0, c1) of a weight in nn.Linear layout as a StoredMatrix of
// type `want`, or of the type the file stores it in when want is empty (f32 if that is no
// weight type). The file's bytes are copied as they are when it stores that type, in
// nn.Linear layout, and the columns fall on whole blocks; otherwise the window is read as
// f32 (which names the tensor and its type when ffn cannot read it) and encoded.
StoredMatrix read_stored(const io::TensorSource& src, const std::string& name, bool conv1d, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1, std::optional<WeightType> want, ThreadPool& pool);

}  // namespace ffn::io
