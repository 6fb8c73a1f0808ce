// Determinism: forward and backward give bit-identical results for 1, 2, 3 and 4 threads
// and across repeated runs, for every weight type the block runs in. Each dot product is
// summed in one fixed order whatever the split across threads (rows and tiles are
// partitioned, never the reduction), which is what these tests hold the code to.
// kWeightTypes lists the weight types trained in f32 (forward + backward); the stored types
// (forward only) have their own test below.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ffn/accounting.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/thread_pool.hpp"
#include "same_bits.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using test::random_matrix;

using test::same_bits;

// The weight types whose forward and backward are checked here. Today's blocks compute in
// f32 (round_weights_to rounds the f32 weights to a storage type and back).
const WeightType kWeightTypes[] = {WeightType::f32};

struct Results {
  Matrix y, dx;
  BlockGradients g;
};

Results run(const Block& block, const Matrix& x, const Matrix& dy, int threads) {
  ThreadPool pool(threads);
  const int64_t T = x.rows(), D = x.cols();
  Results r{Matrix(T, D), Matrix(T, D), zero_gradients(block.config())};
  Matrix y_train(T, D);
  ForwardCache cache;
  block.forward(x.view(), r.y.view(), &pool);
  forward_train(block, x.view(), y_train.view(), cache, false, &pool);
  EXPECT_TRUE(same_bits(y_train, r.y)) << "forward_train differs from forward";
  backward(block, x.view(), cache, dy.view(), r.dx.view(), r.g, &pool);
  return r;
}

void expect_same(const Results& a, const Results& b, const std::string& what) {
  EXPECT_TRUE(same_bits(a.y, b.y)) << what << ": y";
  EXPECT_TRUE(same_bits(a.dx, b.dx)) << what << ": dx";
  EXPECT_TRUE(same_bits(a.g.gate, b.g.gate)) << what << ": dW_gate";
  EXPECT_TRUE(same_bits(a.g.up, b.g.up)) << what << ": dW_up";
  EXPECT_TRUE(same_bits(a.g.down, b.g.down)) << what << ": dW_down";
  EXPECT_TRUE(same_bits(a.g.gate_bias, b.g.gate_bias)) << what << ": db_gate";
  EXPECT_TRUE(same_bits(a.g.up_bias, b.g.up_bias)) << what << ": db_up";
  EXPECT_TRUE(same_bits(a.g.down_bias, b.g.down_bias)) << what << ": db_down";
}

TEST(Determinism, ForwardAndBackwardAcrossThreadCountsAndRunsForEveryWeightType) {
  struct Case {
    Variant variant;
    int64_t d, hidden, tokens;
    bool bias;
  };
  // Token counts on both sides of the kernels' change of path (row-wise below 64 tokens,
  // packed from 64), widths that are not multiples of the tiles.
  const Case cases[] = {{{true, Activation::swish}, 48, 136, 5, true},
                        {{true, Activation::swish}, 48, 136, 70, false},
                        {{false, Activation::gelu}, 33, 100, 67, true}};
  for (const WeightType type : kWeightTypes) {
    for (const Case& c : cases) {
      Block block = Block::random({c.variant, c.d, c.hidden, c.bias}, 3);
      round_weights_to(block, type);
      const Matrix x = random_matrix(c.tokens, c.d, 11), dy = random_matrix(c.tokens, c.d, 12);
      const std::string name =
          std::string(weight_type_info(type).name) + " " + variant_name(c.variant) + " T=" + std::to_string(c.tokens);
      const Results first = run(block, x, dy, 1);
      for (int threads = 1; threads <= 4; ++threads)
        expect_same(first, run(block, x, dy, threads), name + ", " + std::to_string(threads) + " threads");
      expect_same(first, run(block, x, dy, 3), name + ", a second run on 3 threads");
    }
  }
}

// Inference blocks in bf16, f16, q8_0, q4_0 (forward only: training needs f32), below and
// above the kernels' token block, at widths that are multiples of 32 as the block formats
// need.
TEST(Determinism, StoredTypesForwardAcrossThreadCountsAndRuns) {
  for (const WeightType type : {WeightType::bf16, WeightType::f16, WeightType::q8_0, WeightType::q4_0}) {
    for (const int64_t tokens : {int64_t(5), int64_t(259)}) {
      const InferenceBlock block(Block::random({{true, Activation::swish}, 64, 160, true}, 4), type);
      const Matrix x = random_matrix(tokens, 64, 13);
      auto forward = [&](int threads) {
        ThreadPool pool(threads);
        Matrix y(tokens, 64);
        block.forward(x.view(), y.view(), &pool);
        return y;
      };
      const Matrix first = forward(1);
      const std::string name = std::string(weight_type_info(type).name) + " T=" + std::to_string(tokens);
      for (int threads = 2; threads <= 4; ++threads)
        EXPECT_TRUE(same_bits(first, forward(threads))) << name << ", " << threads << " threads";
      EXPECT_TRUE(same_bits(first, forward(3))) << name << ", a second run on 3 threads";
    }
  }
}

}  // namespace
}  // namespace ffn
