// Loading a tensor-parallel slice of a checkpoint (Checkpoint::load_trainable with a hidden range): for every
// format and layout — safetensors F32 and BF16 (read through windows of the mapping), a
// GPT-2 Conv1D checkpoint (stored transposed), GGUF (whole tensor, then the window) — each
// rank's slice must be exactly (bit for bit: no arithmetic, only reads and conversions)
// the slice cut from the whole block loaded the usual way.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "expect_error.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/distributed.hpp"
#include "io/gguf.hpp"
#include "io/safetensors.hpp"
#include "same_bits.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::same_bits;

using test::expect_error;

// Every rank's slice (H split over 3, unevenly) against the whole block's.
void expect_slices_match(const std::string& path, const LoadOptions& base) {
  const Checkpoint ck(path);
  const Block whole = ck.load_trainable(base).block;
  EXPECT_EQ(std::get<BlockConfig>(ck.inspect(base).config).hidden, whole.config().hidden);
  for (int r = 0; r < 3; ++r) {
    const HiddenSlice s = hidden_slice(whole.config().hidden, r, 3);
    const Block got = ck.load_trainable(base, s.begin, s.end).block;
    const Block want = slice_block(whole, s, true);
    const std::string what = path + " rank " + std::to_string(r);
    EXPECT_EQ(got.config().hidden, s.size()) << what;
    EXPECT_TRUE(same_bits(got.weights().gate, want.weights().gate)) << what << " gate";
    EXPECT_TRUE(same_bits(got.weights().up, want.weights().up)) << what << " up";
    EXPECT_TRUE(same_bits(got.weights().down, want.weights().down)) << what << " down";
    EXPECT_TRUE(same_bits(got.weights().gate_bias, want.weights().gate_bias)) << what << " gate bias";
    EXPECT_TRUE(same_bits(got.weights().up_bias, want.weights().up_bias)) << what << " up bias";
    EXPECT_TRUE(same_bits(got.weights().down_bias, want.weights().down_bias)) << what << " down bias";
  }
}

TEST(CheckpointSlice, SafetensorsF32AndBf16) {
  const test::TempDir dir("checkpoint_slice_st");
  const Block b = Block::random({parse_variant("swiglu"), 24, 100, true}, 7);
  const auto& w = b.weights();
  for (TensorDtype dtype : {TensorDtype::f32, TensorDtype::bf16}) {
    const std::string path = dir.file(dtype == TensorDtype::f32 ? "f32.safetensors" : "bf16.safetensors");
    write_safetensors(path, {{"gate.weight", dtype, {100, 24}, w.gate.data()},
                             {"up.weight", dtype, {100, 24}, w.up.data()},
                             {"down.weight", dtype, {24, 100}, w.down.data()},
                             {"gate.bias", dtype, {100}, w.gate_bias.data()},
                             {"up.bias", dtype, {100}, w.up_bias.data()},
                             {"down.bias", dtype, {24}, w.down_bias.data()}});
    LoadOptions o;
    o.variant = parse_variant("swiglu");
    expect_slices_match(path, o);
  }
}

TEST(CheckpointSlice, Gpt2Conv1dStoredTransposed) {
  const test::TempDir dir("checkpoint_slice_gpt2");
  const int64_t D = 16, H = 37;
  const Block b = Block::random({parse_variant("gelu"), D, H, true}, 8);
  // Conv1D stores c_fc as [D][H] and c_proj as [H][D]: the transposes of nn.Linear's.
  std::vector<float> fc(size_t(D * H)), proj(size_t(H * D));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = 0; d < D; ++d) {
      fc[size_t(d * H + h)] = b.weights().up.row(h)[d];
      proj[size_t(h * D + d)] = b.weights().down.row(d)[h];
    }
  const std::string path = dir.file("gpt2.safetensors");
  write_safetensors(path, {{"h.0.mlp.c_fc.weight", TensorDtype::f32, {D, H}, fc.data()},
                           {"h.0.mlp.c_fc.bias", TensorDtype::f32, {H}, b.weights().up_bias.data()},
                           {"h.0.mlp.c_proj.weight", TensorDtype::f32, {H, D}, proj.data()},
                           {"h.0.mlp.c_proj.bias", TensorDtype::f32, {D}, b.weights().down_bias.data()}});
  LoadOptions o;
  o.variant = parse_variant("gelu");
  expect_slices_match(path, o);
  const Block whole = Checkpoint(path).load_trainable(o).block;
  EXPECT_TRUE(same_bits(whole.weights().down, b.weights().down));
}

// A fused gate and up [2H, D] (Phi-3's gate_up_proj, gate rows first) with its fused bias
// [2H]: the whole block is the one the separate tensors give, bit for bit, and so is every
// rank's slice (gate rows [h0, h1) and up rows [H + h0, H + h1) of the one tensor).
TEST(CheckpointSlice, FusedGateUpIsTwoRowWindows) {
  const test::TempDir dir("checkpoint_slice_fused");
  const int64_t D = 16, H = 37;
  const Block b = Block::random({parse_variant("swiglu"), D, H, true}, 9);
  const auto& w = b.weights();
  std::vector<float> gate_up(w.gate.data(), w.gate.data() + H * D), gate_up_bias(w.gate_bias.data(),
                                                                                w.gate_bias.data() + H);
  gate_up.insert(gate_up.end(), w.up.data(), w.up.data() + H * D);
  gate_up_bias.insert(gate_up_bias.end(), w.up_bias.data(), w.up_bias.data() + H);
  for (TensorDtype dtype : {TensorDtype::f32, TensorDtype::bf16}) {
    const std::string folder = dir.file(dtype == TensorDtype::f32 ? "f32" : "bf16");
    std::filesystem::create_directories(folder);
    write_safetensors(folder + "/model.safetensors",
                      {{"model.layers.0.mlp.gate_up_proj.weight", dtype, {2 * H, D}, gate_up.data()},
                       {"model.layers.0.mlp.gate_up_proj.bias", dtype, {2 * H}, gate_up_bias.data()},
                       {"model.layers.0.mlp.down_proj.weight", dtype, {D, H}, w.down.data()},
                       {"model.layers.0.mlp.down_proj.bias", dtype, {D}, w.down_bias.data()}});
    test::write_text(folder + "/config.json", R"({"model_type": "phi3", "hidden_act": "silu"})");
    const std::string split = dir.file(dtype == TensorDtype::f32 ? "split_f32.safetensors" : "split_bf16.safetensors");
    write_safetensors(split, {{"gate.weight", dtype, {H, D}, w.gate.data()},
                              {"up.weight", dtype, {H, D}, w.up.data()},
                              {"down.weight", dtype, {D, H}, w.down.data()},
                              {"gate.bias", dtype, {H}, w.gate_bias.data()},
                              {"up.bias", dtype, {H}, w.up_bias.data()},
                              {"down.bias", dtype, {D}, w.down_bias.data()}});
    const LoadedBlock fused = Checkpoint(folder).load_trainable({});
    EXPECT_EQ(fused.scheme, "hugging face fused");
    EXPECT_NE(fused.family.find("Phi-3"), std::string::npos) << fused.family;
    EXPECT_EQ(fused.block.config().variant, parse_variant("swiglu"));
    const Block separate = Checkpoint(split).load_trainable({0, parse_variant("swiglu")}).block;
    EXPECT_TRUE(same_bits(fused.block.weights().gate, separate.weights().gate));
    EXPECT_TRUE(same_bits(fused.block.weights().up, separate.weights().up));
    EXPECT_TRUE(same_bits(fused.block.weights().gate_bias, separate.weights().gate_bias));
    EXPECT_TRUE(same_bits(fused.block.weights().up_bias, separate.weights().up_bias));
    expect_slices_match(folder, {});
  }
}

TEST(CheckpointSlice, GgufQ8_0) {
  const test::TempDir dir("checkpoint_slice_gguf");
  const int64_t D = 64, H = 96;
  const Block b = Block::random({parse_variant("swiglu"), D, H, false}, 9);
  GgufWriter g;
  g.add_tensor("blk.0.ffn_gate.weight", GgmlType::q8_0, {D, H}, b.weights().gate.data());
  g.add_tensor("blk.0.ffn_up.weight", GgmlType::q8_0, {D, H}, b.weights().up.data());
  g.add_tensor("blk.0.ffn_down.weight", GgmlType::q8_0, {H, D}, b.weights().down.data());
  const std::string path = dir.file("q8.gguf");
  g.write(path);
  LoadOptions o;
  o.variant = parse_variant("swiglu");
  expect_slices_match(path, o);
}

TEST(CheckpointSlice, RangeOutsideTheBlockIsAnError) {
  const test::TempDir dir("checkpoint_slice_err");
  const Block b = Block::random({parse_variant("swiglu"), 8, 20, false}, 1);
  const std::string path = dir.file("w.safetensors");
  write_safetensors(path, {{"gate.weight", TensorDtype::f32, {20, 8}, b.weights().gate.data()},
                           {"up.weight", TensorDtype::f32, {20, 8}, b.weights().up.data()},
                           {"down.weight", TensorDtype::f32, {8, 20}, b.weights().down.data()}});
  LoadOptions o;
  o.variant = parse_variant("swiglu");
  for (const auto& range : {std::pair<int64_t, int64_t>{10, 21}, {5, 5}, {-1, 3}})
    expect_error([&] { Checkpoint(path).load_trainable(o, range.first, range.second); },
                 {"hidden units [", "are not a slice of the block's"});
}

}  // namespace
}  // namespace ffn
