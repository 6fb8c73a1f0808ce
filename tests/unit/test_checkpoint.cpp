#include <gtest/gtest.h>

#include "ffn/checkpoint.hpp"
#include "expect_error.hpp"
#include "ffn/error.hpp"
#include "test_files.hpp"

namespace ffn {
namespace {

using test::expect_error;
using test::f32_bytes;
using test::safetensors_bytes;
using test::StTensor;
using test::TempPath;
using test::write_bytes;

StTensor tensor(const std::string& name, std::vector<int64_t> shape, float start = 0.0f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + 0.01f * float(i);
  return {name, "F32", shape, f32_bytes(v)};
}

const Variant kSwiGLU{true, Activation::swish};
const Variant kGelu{false, Activation::gelu};

TEST(Checkpoint, LoadsTheSeedsNames) {
  TempPath p("block.safetensors");
  write_bytes(p.str(), safetensors_bytes({tensor("gate.weight", {6, 4}, 1.0f), tensor("up.weight", {6, 4}, 2.0f),
                                          tensor("down.weight", {4, 6}, 3.0f), tensor("gate.bias", {6}),
                                          tensor("up.bias", {6}), tensor("down.bias", {4}, 5.0f)}));
  const LoadedBlock loaded = Checkpoint(p.str()).load_trainable({0, kSwiGLU});
  const Block& b = loaded.block;
  EXPECT_EQ(loaded.scheme, "seeds");
  EXPECT_EQ(b.config().d_model, 4);
  EXPECT_EQ(b.config().hidden, 6);
  EXPECT_TRUE(b.config().bias);
  EXPECT_EQ(b.weights().gate.row(0)[0], 1.0f);
  EXPECT_EQ(b.weights().up.row(0)[1], 2.01f);
  EXPECT_EQ(b.weights().down.row(3)[5], 3.0f + 0.01f * 23);
  EXPECT_EQ(b.weights().down_bias.data()[0], 5.0f);
}

TEST(Checkpoint, MismatchesAreErrorsThatSayWhatWasFound) {
  TempPath p("bad.safetensors");
  write_bytes(p.str(), safetensors_bytes({tensor("fc1.weight", {6, 4}), tensor("fc2.weight", {4, 6})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kSwiGLU}); }, {"no feed-forward block", "fc1.weight [6, 4]", "fc2.weight"});

  write_bytes(p.str(), safetensors_bytes({tensor("up.weight", {6, 4}), tensor("down.weight", {4, 6})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kSwiGLU}); }, {"no gate projection", "swiglu"});
  EXPECT_NO_THROW(Checkpoint(p.str()).load_trainable({0, kGelu}));

  write_bytes(p.str(), safetensors_bytes({tensor("gate.weight", {6, 4}), tensor("up.weight", {6, 4}),
                                          tensor("down.weight", {4, 6})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kGelu}); }, {"gate projection", "gelu", "choose a gated variant"});

  write_bytes(p.str(), safetensors_bytes({tensor("gate.weight", {6, 5}), tensor("up.weight", {6, 4}),
                                          tensor("down.weight", {4, 6})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kSwiGLU}); }, {"gate.weight", "[6, 5]", "expected [6, 4]"});

  write_bytes(p.str(), safetensors_bytes({tensor("up.weight", {6, 4}), tensor("down.weight", {6, 4})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kGelu}); }, {"down.weight", "[6, 4]", "expected [4, 6]"});

  write_bytes(p.str(), safetensors_bytes({tensor("up.weight", {24}), tensor("down.weight", {4, 6})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kGelu}); }, {"up.weight", "[24]"});

  write_bytes(p.str(), safetensors_bytes({tensor("up.weight", {6, 4}), tensor("down.weight", {4, 6}),
                                          tensor("up.bias", {6})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kGelu}); }, {"all or none", "down.bias"});

  write_bytes(p.str(), safetensors_bytes({tensor("up.weight", {6, 4}), tensor("down.weight", {4, 6}),
                                          tensor("up.bias", {5}), tensor("down.bias", {4})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kGelu}); }, {"up.bias", "[5]", "expected [6]"});

  write_bytes(p.str(), safetensors_bytes({tensor("up.weight", {0, 4}), tensor("down.weight", {4, 0})}));
  expect_error([&] { Checkpoint(p.str()).load_trainable({0, kGelu}); }, {"hidden = 0"});
}

}  // namespace
}  // namespace ffn
