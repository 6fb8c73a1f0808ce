// The activation kernels of every ISA's table against double-precision formulas
// evaluated at the same f32 inputs: a dense sweep of [−30, 30], magnitudes from 1e−45 to
// 1e5 of both signs, ±100, ±1e4, subnormals, the edge of expf's overflow, ±0, ±Inf, NaN,
// and the limits of clamped_swish (7) and relu6 (0 and 6) with their neighbours. An exact
// value beyond f32's range (relu2(1e30)) must come out as Inf of its sign.
//
// Tolerance, per element: |f32 − exact| ≤ (16 + 4·κ(x))·u·|exact| + 1e−36, u = 2⁻²⁴, where
// κ(x) = |x·f′(x)/f(x)| is the condition number of f at x. Why each term:
//   16·u — SLEEF's exp/tanh are within 1.0 ulp, erfc_f32's erfc within 6 ulp (libm's a
//          few), plus up to five f32 roundings in the formula (e.g. 0.5·x·(1 + tanh(·)));
//   4·κ·u — the formula's inner argument (−x/√2, x + 0.044715·x³, −x) is itself rounded, by
//          up to ~3u, and f amplifies a relative error in its argument by about κ (for gelu
//          at x = −10 that is ~100: the result is then good to ~10⁻⁵, as PyTorch's f32 is);
//   1e−36 — results near f32's underflow: e.g. silu(−89) is −2·10⁻³⁷ exactly but expf(89)
//          overflows, so the f32 formula gives −0, as PyTorch's does.
// A wrong constant (0.0447 for 0.044715 moves gelu_tanh(2) by ~10⁻⁴ relative), a lost
// factor, or erf where erfc belongs (cancellation: ~10⁻³ relative at x = −5) is far outside.
// The erfc inside gelu is checked here at the same inputs within its own bound (6 ulp);
// test_erfc.cpp sweeps it densely and bounds its mean error too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "float_grids.hpp"
#include "isa_param.hpp"
#include "kernels/activation_kernels.hpp"
#include "kernels/kernels.hpp"

namespace ffn {
namespace {

using kernels::Named;
using kernels::Op;

constexpr double kU = 0x1p-24;

struct Formula {
  Activation activation;
  std::function<double(double)> f;   // act(x)
  std::function<double(double)> df;  // act'(x), as autograd has it
  // clamped_swish: the function below its limit, whose conditions κ the tolerances take
  // there (a difference across the kink would not be one); above the limit f is constant and
  // f' = 0, evaluated exactly (κ = 0).
  std::function<double(double)> smooth_f = nullptr, smooth_df = nullptr;
};

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
// Written so that double itself does not cancel: 1 − σ(x) = σ(−x), 1 + tanh(s) = 2σ(2s).
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_inner(double x) { return std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x); }
// gpt-oss's gate (config.hpp) below its limit, m·σ(1.702·m), and its derivative.
double oai_swish(double m) { return m * sigmoid(1.702 * m); }
double oai_swish_grad(double m) { return sigmoid(1.702 * m) * (1 + 1.702 * m * sigmoid(-1.702 * m)); }
constexpr float kAboveSeven = 0x1.c00002p+2f, kBelowSeven = 0x1.bffffep+2f;  // 7's neighbours
constexpr float kAboveSix = 0x1.800002p+2f, kBelowSix = 0x1.7ffffep+2f;      // 6's (relu6's limit)

std::vector<Formula> formulas() {
  return {
      {Activation::relu, [](double x) { return x < 0 ? 0.0 : x; }, [](double x) { return x > 0 ? 1.0 : 0.0; }},
      {Activation::gelu, [](double x) { return x * normal_cdf(x); },
       [](double x) { return normal_cdf(x) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }},
      {Activation::gelu_tanh, [](double x) { return x * sigmoid(2 * tanh_inner(x)); },
       [](double x) {
         const double s2 = 2 * tanh_inner(x);  // 0.5·(1 + t) = σ(2s), 1 − t² = 4σ(2s)σ(−2s)
         return sigmoid(s2) + 2 * x * sigmoid(s2) * sigmoid(-s2) * std::sqrt(2.0 / M_PI) * (1 + 3 * 0.044715 * x * x);
       }},
      {Activation::swish, [](double x) { return x * sigmoid(x); },
       [](double x) { return sigmoid(x) * (1 + x * sigmoid(-x)); }},
      {Activation::sigmoid, [](double x) { return sigmoid(x); }, [](double x) { return sigmoid(x) * sigmoid(-x); }},
      {Activation::identity, [](double x) { return x; }, [](double) { return 1.0; }},
      // min(x, 7)·σ(1.702·min(x, 7)); autograd's clamp passes the gradient at 7 itself.
      {Activation::clamped_swish, [](double x) { return oai_swish(std::min(x, 7.0)); },
       [](double x) { return x <= 7.0 ? oai_swish_grad(x) : 0.0; }, oai_swish, oai_swish_grad},
      // transformers' QuickGELUActivation: x·σ(1.702·x), the clamped Swish without its clamp.
      {Activation::quick_gelu, oai_swish, oai_swish_grad},
      // ReLUSquaredActivation: relu(x)², slope 2·relu(x) (continuous at 0).
      {Activation::relu2, [](double x) { return x < 0 ? 0.0 : x * x; }, [](double x) { return x > 0 ? 2 * x : 0.0; }},
      // nn.ReLU6: min(max(x, 0), 6); aten's hardtanh_backward: 1 strictly inside (0, 6), 0 at the ends.
      {Activation::relu6, [](double x) { return std::clamp(x, 0.0, 6.0); },
       [](double x) { return x > 0 && x < 6 ? 1.0 : 0.0; }},
  };
}

std::vector<float> sweep_inputs() {
  std::vector<float> x;
  for (int i = -30 * 64; i <= 30 * 64; ++i) x.push_back(static_cast<float>(i) / 64.0f);
  test::append_signed_magnitudes(x);
  for (float s : {100.0f, 1e4f, 1e30f, FLT_TRUE_MIN, FLT_MIN, 1e-40f, 87.0f, 88.5f, 89.0f, 103.0f, 105.0f})
    for (float sign : {1.0f, -1.0f}) x.push_back(sign * s);
  x.push_back(0.0f);
  x.push_back(-0.0f);
  for (float s : {kBelowSeven, 7.0f, kAboveSeven, kBelowSix, 6.0f, kAboveSix})  // clamped_swish's and relu6's
    for (float sign : {1.0f, -1.0f}) x.push_back(sign * s);                     // limits and their neighbours
  x.push_back(1.0f);  // length 7881: not a multiple of any vector width, so tails run too
  return x;
}

// κ(x) = |x·g′(x)/g(x)| by a central difference in double (relative step 1e−6).
double condition(const std::function<double(double)>& g, double x) {
  const double gx = g(x);
  if (gx == 0.0 || x == 0.0 || !std::isfinite(gx)) return 0.0;
  const double h = std::abs(x) * 1e-6;
  const double slope = (g(x + h) - g(x - h)) / (2 * h);
  return std::abs(x * slope / gx);
}

void expect_close(const char* what, Activation a, float x, float got, double exact, double kappa) {
  if (std::fabs(exact) > FLT_MAX) {  // relu2(1e30) = 1e60: beyond f32, so ±Inf, as PyTorch's square gives
    EXPECT_EQ(double(got), std::copysign(INFINITY, exact)) << what << " of " << activation_name(a) << " at x = " << x;
    return;
  }
  const double tol = (16.0 + 4.0 * kappa) * kU * std::abs(exact) + 1e-36;
  EXPECT_LE(std::abs(double(got) - exact), tol)
      << what << " of " << activation_name(a) << " at x = " << x << " (" << std::hexfloat << x << std::defaultfloat
      << "): got " << got << ", exact " << exact << ", κ = " << kappa;
}

class ActivationTest : public testing::TestWithParam<Isa> {};

// The four activation entries of one ISA's table, which the tests below check together —
// each against the formulas and against the others (every table has all four:
// KernelRegistry.EveryTableHasEveryOpNamedForIt).
const test::CheckedOps kRowsOps = test::checks_ops({Op::f32_activation_rows});
const test::CheckedOps kGatedRowsOps = test::checks_ops({Op::f32_gated_activation_rows});
const test::CheckedOps kBackwardOps = test::checks_ops({Op::f32_activation_backward});
const test::CheckedOps kGatedBackwardOps = test::checks_ops({Op::f32_gated_activation_backward});

struct Activations {
  Named<kernels::F32ActivationRows> activation;
  Named<kernels::F32GatedActivationRows> gated;
  Named<kernels::F32ActivationBackward> backward;
  Named<kernels::F32GatedActivationBackward> gated_backward;
};

template <class Fn>
Named<Fn> the_entry(Isa isa, const test::CheckedOps& ops) {
  const auto entries = test::registered_entries<Fn>(isa, ops);
  EXPECT_EQ(entries.size(), 1u) << isa_name(isa) << ": " << kernels::op_name(ops.ops.front());
  return entries.empty() ? Named<Fn>{} : entries.front();
}

Activations activations_of(Isa isa) {
  return {the_entry<kernels::F32ActivationRows>(isa, kRowsOps),
          the_entry<kernels::F32GatedActivationRows>(isa, kGatedRowsOps),
          the_entry<kernels::F32ActivationBackward>(isa, kBackwardOps),
          the_entry<kernels::F32GatedActivationBackward>(isa, kGatedBackwardOps)};
}

// One row of n values, in place, through the table's row-wise entry points.
void activation_in_place(const Activations& k, Activation a, float* v, int64_t n) { k.activation(a, 1, n, v, n, v, n); }
void gated_in_place(const Activations& k, Activation a, const float* g, float* u, int64_t n) {
  k.gated(a, 1, n, g, n, u, n, u, n);
}

TEST_P(ActivationTest, ValuesAndDerivativesWithinTheStatedBound) {
  const Activations k = activations_of(GetParam());
  ASSERT_TRUE(k.activation && k.backward);
  const std::vector<float> x = sweep_inputs();
  const int64_t n = static_cast<int64_t>(x.size());
  for (const Formula& fm : formulas()) {
    std::vector<float> v = x;
    activation_in_place(k, fm.activation, v.data(), n);
    std::vector<float> dh(n, 1.0f), h(n), dz(n);
    k.backward(fm.activation, x.data(), dh.data(), h.data(), dz.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::memcmp(&v[i], &h[i], sizeof(float)), 0) << "backward's h differs from forward at " << x[i];
      const double xi = x[i];
      if (std::isinf(xi)) continue;
      const bool smooth = !fm.smooth_f || xi <= 7.0;  // κ of f itself; above clamped_swish's limit 0
      const double kf = !smooth ? 0.0 : condition(fm.smooth_f ? fm.smooth_f : fm.f, xi);
      const double kdf = !smooth ? 0.0 : condition(fm.smooth_df ? fm.smooth_df : fm.df, xi);
      expect_close("value", fm.activation, x[i], v[i], fm.f(xi), kf);
      if (fm.activation == Activation::relu && xi == 0) continue;  // the kink: autograd's 0, checked below
      expect_close("derivative", fm.activation, x[i], dz[i], fm.df(xi), kdf);
    }
  }
}

TEST_P(ActivationTest, SpecialValues) {
  const Activations k = activations_of(GetParam());
  ASSERT_TRUE(k.activation && k.backward);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const Formula& fm : formulas()) {
    std::vector<float> v = {nan, -nan, inf, -inf, 0.0f, -0.0f};
    activation_in_place(k, fm.activation, v.data(), 6);
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1])) << activation_name(fm.activation) << ": NaN must propagate";
    std::vector<float> seven = {7.0f};  // clamped_swish(+Inf) is its value at the limit
    activation_in_place(k, fm.activation, seven.data(), 1);
    const float at_inf = fm.activation == Activation::sigmoid         ? 1.0f
                         : fm.activation == Activation::clamped_swish ? seven[0]
                         : fm.activation == Activation::relu6         ? 6.0f
                                                                      : inf;
    EXPECT_EQ(v[2], at_inf) << activation_name(fm.activation) << "(+Inf)";
    EXPECT_EQ(v[4], static_cast<float>(fm.f(0.0)));
  }
  // relu keeps −0 and NaN (v < 0 is false for both), and relu'(0) = 0 as autograd has it.
  std::vector<float> z = {-0.0f, 0.0f, nan}, dh = {1, 1, 1}, h(3), dz(3);
  k.backward(Activation::relu, z.data(), dh.data(), h.data(), dz.data(), 3);
  EXPECT_TRUE(std::signbit(h[0]));
  EXPECT_TRUE(std::isnan(h[2]));
  EXPECT_EQ(dz[0], 0.0f);
  EXPECT_EQ(dz[1], 0.0f);
}

// The three activations from transformers' table at the values where PyTorch's own choices
// show (torch 1.13's F.relu6, torch.square(F.relu(x)) and x·sigmoid(1.702·x), forward and
// autograd): −0 kept by relu6 and quick_gelu, squared to +0 by relu2; NaN kept; ±Inf as the
// formula gives it (quick_gelu(−Inf) = −Inf·0 = NaN); relu6' = 0 at 0 and at 6 and for NaN
// (hardtanh_backward's vectorised loop), 1 just inside; relu2' = NaN for NaN; quick_gelu'
// = NaN at ±Inf (the product rule's ∞·0).
TEST_P(ActivationTest, HuggingFaceActivationsSpecialValuesAsPyTorch) {
  const Activations k = activations_of(GetParam());
  ASSERT_TRUE(k.activation && k.backward);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> z = {-0.0f, nan, inf, -inf, 0.0f, 6.0f, -1.0f, 7.0f, kBelowSix, 0x1p-149f};
  const int64_t n = static_cast<int64_t>(z.size());
  struct Expected {
    Activation a;
    std::vector<float> h, dz;  // dz for dh = −1
  };
  const Expected cases[] = {
      {Activation::relu6, {-0.0f, nan, 6, 0, 0, 6, 0, 6, kBelowSix, 0x1p-149f}, {0, 0, 0, 0, 0, 0, 0, 0, -1, -1}},
      {Activation::relu2, {0.0f, nan, inf, 0, 0, 36, 0, 49, kBelowSix * kBelowSix, 0}, {0, nan, -inf, 0, 0, -12, 0, -14,
                                                                                       -2 * kBelowSix, -0x1p-148f}},
  };
  for (const Expected& e : cases) {
    std::vector<float> dh(n, -1.0f), h(n), dz(n);
    k.backward(e.a, z.data(), dh.data(), h.data(), dz.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const auto at = [&] { return ::testing::Message() << activation_name(e.a) << " at " << z[i]; };
      if (std::isnan(e.h[i])) {
        EXPECT_TRUE(std::isnan(h[i])) << at() << ": h = " << h[i];
      } else {
        EXPECT_EQ(h[i], e.h[i]) << at();
        EXPECT_EQ(std::signbit(h[i]), std::signbit(e.h[i])) << at() << ": the sign of zero";
      }
      if (std::isnan(e.dz[i])) {
        EXPECT_TRUE(std::isnan(dz[i])) << at() << ": dz = " << dz[i];
      } else {
        EXPECT_EQ(dz[i], e.dz[i]) << at() << ": dz";
      }
    }
  }
  std::vector<float> dh(n, -1.0f), h(n), dz(n);
  k.backward(Activation::quick_gelu, z.data(), dh.data(), h.data(), dz.data(), n);
  EXPECT_TRUE(std::signbit(h[0]) && h[0] == 0.0f) << "quick_gelu(-0) = " << h[0];
  EXPECT_TRUE(std::isnan(h[1]) && std::isnan(h[3])) << "quick_gelu(NaN), quick_gelu(-Inf)";
  EXPECT_EQ(h[2], inf);
  EXPECT_EQ(dz[0], -0.5f);  // σ(0) = 1/2, times dh = −1
  EXPECT_TRUE(std::isnan(dz[1]) && std::isnan(dz[2]) && std::isnan(dz[3])) << dz[1] << " " << dz[2] << " " << dz[3];
}

// Each element depends on its own inputs only: any split of an array (threads, tiles,
// masked tails) gives the same bits as one call over the whole array.
TEST_P(ActivationTest, SplittingAnArrayChangesNoBit) {
  const Activations k = activations_of(GetParam());
  ASSERT_TRUE(k.activation && k.gated && k.backward && k.gated_backward);
  std::vector<float> g(71), u(71);
  for (int i = 0; i < 71; ++i) {
    g[i] = std::sin(0.37f * i) * 6.0f;
    u[i] = std::cos(0.11f * i);
  }
  for (const Formula& fm : formulas()) {
    std::vector<float> whole = u;
    gated_in_place(k, fm.activation, g.data(), whole.data(), 71);
    for (int64_t cut : {1, 7, 8, 15, 16, 17, 33}) {
      std::vector<float> parts = u;
      gated_in_place(k, fm.activation, g.data(), parts.data(), cut);
      gated_in_place(k, fm.activation, g.data() + cut, parts.data() + cut, 71 - cut);
      EXPECT_EQ(std::memcmp(whole.data(), parts.data(), sizeof(float) * 71), 0)
          << activation_name(fm.activation) << " split at " << cut;
    }
    // gated = act(g)·v(u) with the act of the 2-matrix path, bit for bit (v(u) = u, or
    // clamp(u, −7, 7) + 1 for clamped_swish: here |u| ≤ 1, so v' = 1).
    std::vector<float> act = g;
    activation_in_place(k, fm.activation, act.data(), 71);
    const bool oai = fm.activation == Activation::clamped_swish;
    auto v = [&](float x) { return oai ? std::clamp(x, -7.0f, 7.0f) + 1.0f : x; };
    for (int i = 0; i < 71; ++i) EXPECT_EQ(whole[i], act[i] * v(u[i])) << activation_name(fm.activation) << " at " << i;
    // gated backward: h is the forward's product; du = dh·act(g); dg = (dh·v(u))·act'(g).
    std::vector<float> dh(71), h(71), du(71), dg(71), one(71, 1.0f), dz(71), hz(71);
    for (int i = 0; i < 71; ++i) dh[i] = 0.5f - 0.01f * i;
    k.gated_backward(fm.activation, g.data(), u.data(), dh.data(), h.data(), du.data(), dg.data(), 71);
    k.backward(fm.activation, g.data(), one.data(), hz.data(), dz.data(), 71);
    for (int i = 0; i < 71; ++i) {
      EXPECT_EQ(h[i], whole[i]);
      EXPECT_EQ(du[i], dh[i] * act[i]);
      EXPECT_EQ(dg[i], (dh[i] * v(u[i])) * dz[i]);
    }
  }
}

// gpt-oss's gated form on a grid of (g, u) pairs around its limits — g and u at ±7, their
// neighbours, far beyond, ±Inf — against double: h = act(g)·(clamp(u, −7, 7) + 1),
// du = dh·act(g)·[|u| ≤ 7], dg = dh·(clamp(u, −7, 7) + 1)·act'(g) with act'(g) = 0 for
// g > 7; the limits themselves pass the gradient, as PyTorch's autograd of clamp has it
// (torch.clamp's backward keeps the gradient where min ≤ x ≤ max). Tolerances: the
// activation's (16 + 4κ)·u of the result, plus one rounding for each further product.
TEST_P(ActivationTest, GatedClampedSwishAtItsLimits) {
  const Activations k = activations_of(GetParam());
  ASSERT_TRUE(k.gated && k.gated_backward);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> gs, us;
  for (int i = -40; i <= 40; ++i) gs.push_back(static_cast<float>(i) / 4.0f);
  for (float s : {kBelowSeven, 7.0f, kAboveSeven, 8.0f, 100.0f, 1e4f, 1e30f, inf}) {
    gs.push_back(s);
    us.push_back(s);
    us.push_back(-s);
  }
  for (float s : {-1.0f, -0.5f, 0.0f, 0.5f, 3.0f}) us.push_back(s);
  std::vector<float> g, u;
  for (float gv : gs)
    for (float uv : us) {
      g.push_back(gv);
      u.push_back(uv);
    }
  const int64_t n = static_cast<int64_t>(g.size());
  std::vector<float> out(n), dh(n, 0.75f), h(n), du(n), dg(n);
  k.gated(Activation::clamped_swish, 1, n, g.data(), n, u.data(), n, out.data(), n);
  k.gated_backward(Activation::clamped_swish, g.data(), u.data(), dh.data(), h.data(), du.data(), dg.data(), n);
  const Activation a = Activation::clamped_swish;
  int above_limit = 0, beyond_up = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double gi = g[i], ui = u[i];
    ASSERT_EQ(std::memcmp(&out[i], &h[i], sizeof(float)), 0) << "backward's h differs from forward's";
    const double m = std::min(gi, 7.0), v = std::clamp(ui, -7.0, 7.0) + 1.0;
    const double kf = gi <= 7.0 ? condition(oai_swish, gi) : 0.0, kdf = gi <= 7.0 ? condition(oai_swish_grad, gi) : 0.0;
    const double act = oai_swish(m), grad = gi <= 7.0 ? oai_swish_grad(gi) : 0.0;
    const double du_exact = std::fabs(ui) <= 7.0 ? 0.75 * act : 0.0;
    const double tol_h = (17.0 + 4.0 * kf) * kU * std::fabs(act * v) + 1e-36;
    const double tol_du = (17.0 + 4.0 * kf) * kU * std::fabs(du_exact) + 1e-36;
    const double tol_dg = (18.0 + 4.0 * kdf) * kU * std::fabs(0.75 * v * grad) + 1e-36;
    const auto at = [&] { return ::testing::Message() << "g = " << g[i] << ", u = " << u[i]; };
    EXPECT_LE(std::fabs(out[i] - act * v), tol_h) << at() << ": h " << out[i] << ", exact " << act * v;
    EXPECT_LE(std::fabs(du[i] - du_exact), tol_du) << at() << ": du " << du[i] << ", exact " << du_exact;
    EXPECT_LE(std::fabs(dg[i] - 0.75 * v * grad), tol_dg) << at() << ": dg " << dg[i] << ", exact " << 0.75 * v * grad;
    above_limit += gi > 7.0;
    beyond_up += std::fabs(ui) > 7.0;
  }
  EXPECT_GT(above_limit, 0);
  EXPECT_GT(beyond_up, 0);
  // The limits pass the gradient, their neighbours beyond do not (autograd's clamp).
  std::vector<float> g2 = {7.0f, kAboveSeven, 1.0f, 1.0f, 1.0f, 1.0f};
  std::vector<float> u2 = {1.0f, 1.0f, 7.0f, kAboveSeven, -7.0f, -kAboveSeven};
  std::vector<float> dh2(6, 1.0f), h2(6), du2(6), dg2(6);
  k.gated_backward(a, g2.data(), u2.data(), dh2.data(), h2.data(), du2.data(), dg2.data(), 6);
  EXPECT_GT(dg2[0], 0.9f);
  EXPECT_EQ(dg2[1], 0.0f);
  for (int i : {2, 4}) EXPECT_GT(du2[i], 0.5f) << "u = " << u2[i];
  for (int i : {3, 5}) EXPECT_EQ(du2[i], 0.0f) << "u = " << u2[i];
  // NaN in g or u propagates to h, as through PyTorch's min and clamp.
  std::vector<float> g3 = {nan, 1.0f}, u3 = {1.0f, nan}, out3(2);
  k.gated(a, 1, 2, g3.data(), 2, u3.data(), 2, out3.data(), 2);
  EXPECT_TRUE(std::isnan(out3[0]) && std::isnan(out3[1]));
}

// A tile in one call, as the packed forward takes it: gate and up side by side in rows of
// 64 (columns 0–31 and 32–63), h written into rows of another stride. Each element must
// have the bits of the one-row, in-place form, and nothing beyond `cols` in a row of the
// output may be written.
TEST_P(ActivationTest, RowsOfATileGiveTheBitsOfOneRowAtATime) {
  const Activations k = activations_of(GetParam());
  ASSERT_TRUE(k.activation && k.gated);
  constexpr int64_t kRows = 7, kTileLd = 64, kOutLd = 100, kCols = 27;  // 27: a masked tail on every ISA
  std::vector<float> tile(kRows * kTileLd);
  for (size_t i = 0; i < tile.size(); ++i) tile[i] = std::sin(0.29f * static_cast<float>(i)) * 7.0f;
  const float sentinel = -12345.0f;
  for (const Formula& fm : formulas()) {
    std::vector<float> gated_out(kRows * kOutLd, sentinel), plain_out(kRows * kOutLd, sentinel);
    k.gated(fm.activation, kRows, kCols, tile.data(), kTileLd, tile.data() + 32, kTileLd, gated_out.data(), kOutLd);
    k.activation(fm.activation, kRows, kCols, tile.data() + 32, kTileLd, plain_out.data(), kOutLd);
    for (int64_t r = 0; r < kRows; ++r) {
      std::vector<float> u(tile.begin() + r * kTileLd + 32, tile.begin() + r * kTileLd + 32 + kCols), v = u;
      gated_in_place(k, fm.activation, tile.data() + r * kTileLd, u.data(), kCols);
      activation_in_place(k, fm.activation, v.data(), kCols);
      EXPECT_EQ(std::memcmp(u.data(), gated_out.data() + r * kOutLd, sizeof(float) * kCols), 0)
          << activation_name(fm.activation) << " gated, row " << r;
      EXPECT_EQ(std::memcmp(v.data(), plain_out.data() + r * kOutLd, sizeof(float) * kCols), 0)
          << activation_name(fm.activation) << ", row " << r;
      for (int64_t i = kCols; i < kOutLd; ++i) {
        ASSERT_EQ(gated_out[r * kOutLd + i], sentinel) << "gated wrote past its columns at row " << r << ", " << i;
        ASSERT_EQ(plain_out[r * kOutLd + i], sentinel) << "activation wrote past its columns at row " << r;
      }
    }
  }
}

// erfc as gelu evaluates it, every kernel registered, at the sweep's inputs: within 6 ulp
// of double-precision erfc, plus FLT_TRUE_MIN for results on the subnormal grid (the bound
// test_erfc.cpp states and measures).
const test::CheckedOps kErfcOps = test::checks_ops({Op::f32_erfc});

TEST_P(ActivationTest, ErfcWithinSixUlps) {
  const std::vector<float> x = sweep_inputs();
  for (const auto& erfc : test::registered_entries<kernels::F32Erfc>(GetParam(), kErfcOps)) {
    std::vector<float> got(x.size());
    erfc(x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << erfc.name << ": NaN must propagate";
        continue;
      }
      const double exact = std::erfc(static_cast<double>(x[i]));
      EXPECT_LE(std::abs(double(got[i]) - exact), 6.0 * kU * exact + FLT_TRUE_MIN)
          << erfc.name << "(" << x[i] << ") = " << got[i] << ", exact " << exact;
    }
  }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(ActivationTest);

}  // namespace
}  // namespace ffn
