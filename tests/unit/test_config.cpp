#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

#include "ffn/config.hpp"
#include "expect_error.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

using test::expect_error;
// The Llama reference rule written independently of the library: floor(2·(4d)/3) by
// integer division (exact), the multiplier as Python's int(m * h) on doubles.
int64_t llama_formula(int64_t dim, int64_t multiple_of, std::optional<double> m) {
  int64_t hidden = (2 * (4 * dim)) / 3;
  if (m) hidden = static_cast<int64_t>(std::trunc(*m * static_cast<double>(hidden)));
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

TEST(HiddenRule, MatchesLlamaFormulaForEveryWidthUpTo20000) {
  const Variant swiglu{true, Activation::swish};
  for (int64_t multiple : {1, 8, 64, 256, 1024})
    for (std::optional<double> m : {std::optional<double>{}, std::optional<double>{1.3}, std::optional<double>{1.5}})
      for (int64_t d = 1; d <= 20000; ++d) {
        const int64_t want = llama_formula(d, multiple, m);
        ASSERT_EQ(llama_hidden(d, multiple, m), want) << "d=" << d << " multiple_of=" << multiple;
        ASSERT_EQ(derive_hidden({swiglu, d, std::nullopt, {multiple, m}, false}).hidden, want)
            << "d=" << d << " multiple_of=" << multiple;
      }
}

TEST(HiddenRule, PublishedLlamaSizes) {
  EXPECT_EQ(llama_hidden(4096, 256, std::nullopt), 11008);  // Llama-2-7B
  EXPECT_EQ(llama_hidden(5120, 256, std::nullopt), 13824);  // Llama-2-13B
  EXPECT_EQ(llama_hidden(8192, 4096, 1.3), 28672);          // Llama-2-70B, Llama-3-70B
  EXPECT_EQ(llama_hidden(4096, 1024, 1.3), 14336);          // Llama-3-8B
}

TEST(HiddenRule, DefaultsMirrorTheSeeds) {
  // Gated blocks: 8/3 rule with multiple_of 256; 2-matrix blocks: exactly 4·d.
  EXPECT_EQ(resolve({parse_variant("swiglu"), 4096, std::nullopt, {}, false}).hidden, 11008);
  EXPECT_EQ(resolve({parse_variant("gelu"), 4096, std::nullopt, {}, false}).hidden, 16384);
  EXPECT_EQ(resolve({parse_variant("gelu"), 100, std::nullopt, {}, false}).hidden, 400);
  EXPECT_EQ(resolve({parse_variant("geglu"), 100, std::nullopt, {}, false}).hidden, 512);  // 266 → 512
  // An explicit hidden size wins over the rule.
  EXPECT_EQ(resolve({parse_variant("swiglu"), 4096, 1000, {256, 1.3}, false}).hidden, 1000);
}

TEST(HiddenRule, DerivationText) {
  const auto d = derive_hidden({parse_variant("swiglu"), 4096, std::nullopt, {}, false});
  EXPECT_EQ(d.start, 10922);
  EXPECT_EQ(d.text, "8/3·4096 = 10922.67 → 10922 → round up to a multiple of 256 → 11008");
  const auto m = derive_hidden({parse_variant("swiglu"), 4096, std::nullopt, {1024, 1.3}, false});
  EXPECT_EQ(m.after_multiplier, 14198);
  EXPECT_EQ(m.hidden, 14336);
}

TEST(Variant, NamesRoundTrip) {
  for (const Variant& v : named_variants()) EXPECT_EQ(parse_variant(variant_name(v)), v);
  EXPECT_EQ(named_variants().size(), 9u);
  EXPECT_EQ(parse_variant("swiglu"), (Variant{true, Activation::swish}));
  EXPECT_EQ(parse_variant("glu"), (Variant{true, Activation::sigmoid}));
  EXPECT_EQ(parse_variant("bilinear"), (Variant{true, Activation::identity}));
  EXPECT_EQ(parse_variant("reglu"), (Variant{true, Activation::relu}));
  EXPECT_EQ(parse_variant("geglu"), (Variant{true, Activation::gelu}));
  EXPECT_EQ(parse_variant("gelu"), (Variant{false, Activation::gelu}));
  EXPECT_EQ(parse_variant("silu"), (Variant{false, Activation::swish}));
  // T5 v1.1's gated GELU uses the tanh form: a pair without a Shazeer name.
  EXPECT_EQ(parse_variant("gated_gelu_tanh"), (Variant{true, Activation::gelu_tanh}));
  EXPECT_EQ(parse_variant("gated-gelu_tanh"), (Variant{true, Activation::gelu_tanh}));
  EXPECT_EQ(variant_name({true, Activation::gelu_tanh}), "gated_gelu_tanh");
  EXPECT_EQ(variant_name({false, Activation::identity}), "identity");
  // gpt-oss's experts: named, round-tripping, yet not one of Shazeer's nine.
  const Variant oai{true, Activation::clamped_swish};
  EXPECT_EQ(variant_name(oai), "swiglu_oai");
  EXPECT_EQ(parse_variant("swiglu_oai"), oai);
  EXPECT_EQ(parse_variant("gated_clamped_swish"), oai);
  EXPECT_EQ(activation_name(Activation::clamped_swish), "clamped_swish");
  for (const Variant& v : named_variants()) EXPECT_NE(v, oai);
}

// Hugging Face's three (quick_gelu, relu2, relu6): by their names, 2-matrix and gated, and
// every activation's {2-matrix, gated} pair round-trips through its canonical name.
TEST(Variant, HuggingFaceActivationsByName) {
  EXPECT_EQ(parse_variant("quick_gelu"), (Variant{false, Activation::quick_gelu}));
  EXPECT_EQ(parse_variant("relu2"), (Variant{false, Activation::relu2}));
  EXPECT_EQ(parse_variant("relu6"), (Variant{false, Activation::relu6}));
  EXPECT_EQ(parse_variant("gated_quick_gelu"), (Variant{true, Activation::quick_gelu}));
  EXPECT_EQ(parse_variant("gated_relu2"), (Variant{true, Activation::relu2}));
  EXPECT_EQ(parse_variant("gated-relu6"), (Variant{true, Activation::relu6}));
  EXPECT_EQ(variant_name({true, Activation::relu2}), "gated_relu2");
  EXPECT_EQ(variant_name({false, Activation::relu6}), "relu6");
  EXPECT_EQ(activation_name(Activation::quick_gelu), "quick_gelu");
  for (const Activation a : {Activation::relu, Activation::gelu, Activation::gelu_tanh, Activation::swish,
                             Activation::sigmoid, Activation::identity, Activation::clamped_swish,
                             Activation::quick_gelu, Activation::relu2, Activation::relu6})
    for (const bool gated : {false, true}) {
      const Variant v{gated, a};
      EXPECT_EQ(parse_variant(variant_name(v)), v) << variant_name(v);
      if (a != Activation::clamped_swish || gated) {
        EXPECT_NO_THROW(validate({v, 8, 16, true})) << variant_name(v);
      }
    }
  expect_error([] { parse_variant("relu7"); }, {"relu7", "quick_gelu", "relu2", "relu6"});
}

// Every key of transformers' ACT2FN (activations.py's ACT2CLS, 24 keys as of transformers
// 4.57) is either the same function as one of ffn's or refused with the reason, by name.
// The expected mapping is restated here from the classes' formulas, independently of
// config.cpp's table.
TEST(HuggingFaceActivations, EveryAct2FnKeyMappedOrRefusedWithItsReason) {
  const std::pair<const char*, Activation> same[] = {
      {"gelu", Activation::gelu},                   // nn.functional.gelu (erf)
      {"gelu_python", Activation::gelu},            // x·0.5·(1 + erf(x/√2))
      {"gelu_new", Activation::gelu_tanh},          // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
      {"gelu_fast", Activation::gelu_tanh},         // the same, regrouped
      {"gelu_accurate", Activation::gelu_tanh},     // the same, √(2/π) precomputed
      {"gelu_pytorch_tanh", Activation::gelu_tanh}, // gelu(approximate="tanh")
      {"gelu_python_tanh", Activation::gelu_tanh},  // the same in Python
      {"linear", Activation::identity},
      {"quick_gelu", Activation::quick_gelu},       // x·σ(1.702·x)
      {"relu", Activation::relu},
      {"relu2", Activation::relu2},                 // square(relu(x))
      {"relu6", Activation::relu6},                 // hardtanh(x, 0, 6)
      {"sigmoid", Activation::sigmoid},
      {"silu", Activation::swish},
      {"swish", Activation::swish},
  };
  for (const auto& [name, a] : same) {
    EXPECT_EQ(activation_from_hf_name(name), a) << name;
    EXPECT_EQ(hf_activation_refusal(name), "") << name;
  }
  // Refused, each reason naming what the function does that ffn's do not.
  const std::pair<const char*, const char*> refused[] = {
      {"gelu_10", "[-10, 10]"}, {"hardswish", "Hardswish"}, {"laplace", "erf"},
      {"leaky_relu", "slope"},  {"mish", "softplus"},       {"prelu", "learned"},
      {"sqrtsoftplus", "softplus"}, {"tanh", "Tanh"},       {"xielu", "learned"},
  };
  for (const auto& [name, phrase] : refused) {
    EXPECT_EQ(activation_from_hf_name(name), std::nullopt) << name;
    const std::string reason = hf_activation_refusal(name);
    EXPECT_NE(reason.find(phrase), std::string::npos) << name << ": " << reason;
  }
  EXPECT_EQ(std::size(same) + std::size(refused), 24u);  // every ACT2FN key, no more
  // A name outside ACT2FN is neither mapped nor refused with a reason.
  for (const char* unknown : {"gelu_11", "Relu", "", "swiglu"}) {
    EXPECT_EQ(activation_from_hf_name(unknown), std::nullopt) << unknown;
    EXPECT_EQ(hf_activation_refusal(unknown), "") << unknown;
  }
  // hf_activation_names: the mapped names (with ffn's extra "identity"), sorted.
  const std::string names = hf_activation_names();
  EXPECT_EQ(names,
            "gelu, gelu_accurate, gelu_fast, gelu_new, gelu_python, gelu_python_tanh, gelu_pytorch_tanh, identity, "
            "linear, quick_gelu, relu, relu2, relu6, sigmoid, silu, swish");
}

// clamped_swish clamps and shifts the up projection: a 2-matrix block has none to shift.
TEST(ConfigErrors, ClampedSwishNeedsAGatedBlock) {
  const Variant two_matrix{false, Activation::clamped_swish};
  EXPECT_EQ(parse_variant("clamped_swish"), two_matrix);
  expect_error([&] { resolve({two_matrix, 64, std::nullopt, {}, false}); }, {"variant.gated", "clamped_swish"});
  expect_error([&] { validate({two_matrix, 64, 256, true}); }, {"variant.gated", "clamped_swish"});
  EXPECT_NO_THROW(validate({{true, Activation::clamped_swish}, 64, 256, true}));
}

TEST(ConfigErrors, NameTheFieldAndTheValue) {
  const Variant sw{true, Activation::swish};
  expect_error([&] { parse_variant("swigly"); }, {"variant", "swigly", "swiglu"});
  expect_error([&] { parse_variant(""); }, {"variant", "''"});
  expect_error([&] { resolve({sw, 0, std::nullopt, {}, false}); }, {"d_model", "0"});
  expect_error([&] { resolve({sw, -5, std::nullopt, {}, false}); }, {"d_model", "-5"});
  expect_error([&] { resolve({sw, 64, std::nullopt, {0, std::nullopt}, false}); }, {"multiple_of", "0"});
  expect_error([&] { resolve({sw, 64, std::nullopt, {-256, std::nullopt}, false}); }, {"multiple_of", "-256"});
  expect_error([&] { resolve({sw, 64, std::nullopt, {256, 0.0}, false}); }, {"ffn_dim_multiplier", "0"});
  expect_error([&] { resolve({sw, 64, std::nullopt, {256, -1.5}, false}); }, {"ffn_dim_multiplier", "-1.5"});
  expect_error([&] { resolve({sw, 64, std::nullopt, {256, std::nan("")}, false}); }, {"ffn_dim_multiplier", "nan"});
  expect_error([&] { resolve({sw, 64, std::nullopt, {256, INFINITY}, false}); }, {"ffn_dim_multiplier", "inf"});
  expect_error([&] { resolve({sw, 64, 0, {}, false}); }, {"hidden", "0"});
  expect_error([&] { resolve({sw, 64, -3, {}, false}); }, {"hidden", "-3"});
  // 3 · 2^31 · 2^40 · 8 bytes overflows int64.
  expect_error([&] { resolve({sw, int64_t{1} << 31, int64_t{1} << 40, {}, false}); },
               {"d_model = 2147483648", "hidden = 1099511627776", "overflow"});
  expect_error([&] { resolve({sw, int64_t{1} << 41, std::nullopt, {}, false}); }, {"d_model", "2199023255552"});
  expect_error([&] { validate({sw, 8, std::numeric_limits<int64_t>::max(), false}); }, {"hidden", "overflow"});
}

TEST(ConfigErrors, LargestValidSizesPass) {
  // A llama-sized block and a very wide one whose counts still fit 64 bits.
  EXPECT_NO_THROW(resolve({{true, Activation::swish}, 18432, 73728, {}, true}));
  EXPECT_NO_THROW(validate({{true, Activation::swish}, int64_t{1} << 20, int64_t{1} << 37, false}));
}

}  // namespace
}  // namespace ffn
