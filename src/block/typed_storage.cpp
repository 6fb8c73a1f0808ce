// A block's matrices stored as bf16, f16, q8_0 or q4_0 (Block::stored_as), and the guard
// that keeps f32-only code (training, backward, the reference) off such a block.
#include <cstring>
#include <string>

#include "ffn/block.hpp"
#include "ffn/error.hpp"
#include "ffn/quant.hpp"

namespace ffn {
namespace {

// m's rows encoded as t, rows split across the pool (each row is encoded independently).
TypedMatrix encode(const Matrix& m, const char* name, WeightType t, ThreadPool& pool) {
  TypedMatrix out;
  out.type = t;
  if (m.empty()) return out;
  const auto& info = weight_type_info(t);
  const int64_t n = m.cols();
  if (n % info.block_elements != 0)
    throw Error(std::string(name) + " rows have " + std::to_string(n) + " weights; " + std::string(info.name) +
                " stores rows in blocks of " + std::to_string(info.block_elements));
  out.rows = m.rows();
  out.cols = n;
  out.row_bytes = n / info.block_elements * info.block_bytes;
  out.bytes.resize(static_cast<size_t>(out.rows * out.row_bytes));
  pool.run([&](int ith, int nth) {
    const auto [r0, r1] = split_range(out.rows, ith, nth);
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = m.row(r);
      std::byte* dst = out.bytes.data() + r * out.row_bytes;
      switch (t) {
        case WeightType::f32:
          std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
          break;
        case WeightType::bf16:
        case WeightType::f16:
          for (int64_t i = 0; i < n; ++i) {
            const uint16_t h = t == WeightType::bf16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
            std::memcpy(dst + 2 * i, &h, 2);
          }
          break;
        case WeightType::q8_0:
          quantize_row_q8_0(src, reinterpret_cast<BlockQ8_0*>(dst), n);
          break;
        case WeightType::q4_0:
          quantize_row_q4_0(src, reinterpret_cast<BlockQ4_0*>(dst), n);
          break;
      }
    }
  });
  return out;
}

void check_stored(const TypedMatrix& m, const char* name, WeightType t, int64_t rows, int64_t cols) {
  const auto& info = weight_type_info(t);
  const std::string n = name;
  if (m.type != t)
    throw Error(n + " is stored as " + std::string(weight_type_info(m.type).name) + ", the other matrices as " +
                std::string(info.name));
  if (m.rows != rows || m.cols != cols)
    throw Error(n + " is [" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + "]; the block needs [" +
                std::to_string(rows) + ", " + std::to_string(cols) + "]");
  if (cols % info.block_elements != 0)
    throw Error(n + " rows have " + std::to_string(cols) + " weights; " + std::string(info.name) +
                " stores rows in blocks of " + std::to_string(info.block_elements));
  const int64_t row_bytes = cols / info.block_elements * info.block_bytes;
  if (m.row_bytes != row_bytes || static_cast<int64_t>(m.bytes.size()) != rows * row_bytes)
    throw Error(n + " holds " + std::to_string(m.bytes.size()) + " bytes in rows of " + std::to_string(m.row_bytes) +
                "; " + std::string(info.name) + " needs " + std::to_string(rows) + " rows of " +
                std::to_string(row_bytes));
}

void check_bias(const Matrix& b, const char* name, bool wanted, int64_t n) {
  if (wanted ? (b.rows() != 1 || b.cols() != n) : !b.empty())
    throw Error(std::string(name) + " has " + std::to_string(b.size()) + " values; the block needs " +
                std::to_string(wanted ? n : 0));
}

}  // namespace

Block Block::from_stored(const BlockConfig& config, TypedWeights weights) {
  validate(config);
  const WeightType t = weights.up.type;
  if (t == WeightType::f32) throw Error("from_stored: the matrices are f32; construct an f32 Block instead");
  const int64_t D = config.d_model, H = config.hidden;
  const bool gated = config.variant.gated;
  if (gated)
    check_stored(weights.gate, "gate", t, H, D);
  else if (!weights.gate.empty())
    throw Error("gate is given but the block is not gated");
  check_stored(weights.up, "up", t, H, D);
  check_stored(weights.down, "down", t, D, H);
  check_bias(weights.gate_bias, "gate bias", config.bias && gated, H);
  check_bias(weights.up_bias, "up bias", config.bias, H);
  check_bias(weights.down_bias, "down bias", config.bias, D);
  Block b(config, Unallocated{});
  b.weight_type_ = t;
  b.typed_ = std::move(weights);
  return b;
}

BlockWeights& Block::weights() { return const_cast<BlockWeights&>(static_cast<const Block&>(*this).weights()); }

const BlockWeights& Block::weights() const {
  if (packed_)
    throw Error("this block is packed for inference (Block::packed) and keeps no row-major f32 copy; training, "
                "backward and the reference need the f32 block it was packed from");
  if (weight_type_ != WeightType::f32)
    throw Error("this block stores its weights as " + std::string(weight_type_info(weight_type_).name) +
                " and keeps no f32 copy; training, backward and the reference need an f32 block");
  return weights_;
}

Block Block::stored_as(WeightType t, ThreadPool* pool) const {
  if (packed_) throw Error("stored_as: the block is packed; convert from the f32 block it was packed from");
  if (weight_type_ != WeightType::f32)
    throw Error("stored_as: the block is already stored as " + std::string(weight_type_info(weight_type_).name) +
                "; convert from its f32 block");
  ThreadPool& p = pool ? *pool : default_thread_pool();
  if (t == WeightType::f32) {
    Block b(config_, Unallocated{});
    for (auto [dst, src] : {std::pair{&b.weights_.gate, &weights_.gate},
                            {&b.weights_.up, &weights_.up},
                            {&b.weights_.down, &weights_.down},
                            {&b.weights_.gate_bias, &weights_.gate_bias},
                            {&b.weights_.up_bias, &weights_.up_bias},
                            {&b.weights_.down_bias, &weights_.down_bias}})
      *dst = src->clone();
    return b;
  }
  Block b(config_, Unallocated{});
  b.weight_type_ = t;
  b.typed_.gate = encode(weights_.gate, "gate", t, p);
  b.typed_.up = encode(weights_.up, "up", t, p);
  b.typed_.down = encode(weights_.down, "down", t, p);
  b.typed_.gate_bias = weights_.gate_bias.clone();
  b.typed_.up_bias = weights_.up_bias.clone();
  b.typed_.down_bias = weights_.down_bias.clone();
  return b;
}

}  // namespace ffn
