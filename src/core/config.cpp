#include "ffn/config.hpp"

#include <array>
#include <cmath>
#include <cstdio>

#include "ffn/error.hpp"

namespace ffn {
namespace {

struct ActivationEntry {
  Activation activation;
  std::string_view name;
};
constexpr std::array<ActivationEntry, 10> kActivations{{
    {Activation::relu, "relu"},
    {Activation::gelu, "gelu"},
    {Activation::gelu_tanh, "gelu_tanh"},
    {Activation::swish, "swish"},
    {Activation::sigmoid, "sigmoid"},
    {Activation::identity, "identity"},
    {Activation::clamped_swish, "clamped_swish"},
    {Activation::quick_gelu, "quick_gelu"},
    {Activation::relu2, "relu2"},
    {Activation::relu6, "relu6"},
}};

struct NamedVariant {
  std::string_view name;
  Variant variant;
};
// Shazeer 2020's table order: the 2-matrix blocks, then the gated ones.
constexpr std::array<NamedVariant, 9> kNamedVariants{{
    {"relu", {false, Activation::relu}},
    {"gelu", {false, Activation::gelu}},
    {"gelu_tanh", {false, Activation::gelu_tanh}},
    {"swish", {false, Activation::swish}},
    {"glu", {true, Activation::sigmoid}},
    {"bilinear", {true, Activation::identity}},
    {"reglu", {true, Activation::relu}},
    {"geglu", {true, Activation::gelu}},
    {"swiglu", {true, Activation::swish}},
}};
// Named too, but not one of Shazeer's (named_variants() stays his nine).
constexpr NamedVariant kSwigluOai{"swiglu_oai", {true, Activation::clamped_swish}};

// transformers' ACT2FN keys (src/transformers/activations.py, ACT2CLS) with an exact
// counterpart here, sorted by name, each with why it is the same function; "identity" is
// not a key there, but a name configs use for the same thing as "linear".
struct HfActivation {
  std::string_view name;
  Activation activation;
};
constexpr std::array<HfActivation, 16> kHfActivations{{
    {"gelu", Activation::gelu},  // GELUActivation: nn.functional.gelu, the erf form
    // AccurateGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the tanh form
    // itself (its name notwithstanding, no more accurate than gelu_new).
    {"gelu_accurate", Activation::gelu_tanh},
    // FastGELUActivation, 0.5·x·(1 + tanh(0.7978845608·x·(1 + 0.044715·x²))): the tanh form,
    // regrouped (√(2/π) to 10 digits, below f32's resolution).
    {"gelu_fast", Activation::gelu_tanh},
    {"gelu_new", Activation::gelu_tanh},  // NewGELUActivation: the tanh form, written out
    // GELUActivation(use_gelu_python=True): x·0.5·(1 + erf(x/√2)), the erf form in Python.
    {"gelu_python", Activation::gelu},
    // GELUTanh(use_gelu_tanh_python=True): the tanh form in Python.
    {"gelu_python_tanh", Activation::gelu_tanh},
    {"gelu_pytorch_tanh", Activation::gelu_tanh},  // GELUTanh: gelu(approximate="tanh")
    {"identity", Activation::identity},
    {"linear", Activation::identity},  // LinearActivation: returns its input
    {"quick_gelu", Activation::quick_gelu},  // QuickGELUActivation: x·σ(1.702·x)
    {"relu", Activation::relu},  // nn.ReLU
    {"relu2", Activation::relu2},  // ReLUSquaredActivation: square(relu(x))
    {"relu6", Activation::relu6},  // nn.ReLU6: hardtanh(x, 0, 6)
    {"sigmoid", Activation::sigmoid},  // nn.Sigmoid
    {"silu", Activation::swish},  // SiLUActivation / nn.SiLU: x·σ(x)
    {"swish", Activation::swish},  // nn.SiLU
}};

// The other ACT2FN keys, sorted by name: functions ffn does not run, each with the reason.
struct HfRefusal {
  std::string_view name;
  std::string_view reason;
};
constexpr std::array<HfRefusal, 9> kHfRefusals{{
    {"gelu_10", "ClippedGELUActivation clips GELU's output to [-10, 10]; ffn has no clipped GELU"},
    {"hardswish", "nn.Hardswish, x·relu6(x + 3)/6, is not an activation ffn runs"},
    {"laplace", "LaplaceActivation, 0.5·(1 + erf((x - 0.707107)/(0.282095·√2))), is not an activation ffn runs"},
    {"leaky_relu", "nn.LeakyReLU has a negative slope (0.01 by default) that ffn's relu does not"},
    {"mish", "MishActivation, x·tanh(softplus(x)), is not an activation ffn runs"},
    {"prelu", "nn.PReLU has a learned negative slope, a parameter outside the MLP's weights that ffn does not read"},
    {"sqrtsoftplus", "SqrtSoftplusActivation, √softplus(x), is not an activation ffn runs"},
    {"tanh", "nn.Tanh is not an activation ffn runs"},
    {"xielu", "XIELUActivation has learned parameters (alpha_p, alpha_n) outside the MLP's weights that ffn does not read"},
}};

std::string accepted_variant_names() {
  std::string s;
  for (const auto& v : kNamedVariants) s += std::string(v.name) + ", ";
  s += std::string(kSwigluOai.name) + ", silu, sigmoid, identity, or gated_<activation> with <activation> one of";
  for (const auto& a : kActivations) s += " " + std::string(a.name);
  return s;
}

std::optional<Activation> find_activation(std::string_view name) {
  if (name == "silu") return Activation::swish;
  for (const auto& a : kActivations)
    if (a.name == name) return a.activation;
  return std::nullopt;
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Refuses sizes whose byte and FLOP counts would not fit in int64: 8 × every parameter
// (f32 bytes are 4×, forward+backward FLOPs are 6× the weight count).
void check_parameter_overflow(const BlockConfig& c) {
  const int64_t bias = c.bias ? (c.variant.gated ? 2 : 1) * c.hidden + c.d_model : 0;
  int64_t n = 0;
  const bool overflow = __builtin_mul_overflow(c.matrices(), c.d_model, &n) ||
                        __builtin_mul_overflow(n, c.hidden, &n) || __builtin_add_overflow(n, bias, &n) ||
                        __builtin_mul_overflow(n, int64_t{8}, &n);
  if (overflow)
    throw Error("d_model = " + std::to_string(c.d_model) + " with hidden = " + std::to_string(c.hidden) +
                ": the block's parameter, byte and FLOP counts overflow 64 bits");
}

}  // namespace

std::string_view activation_name(Activation a) {
  for (const auto& e : kActivations)
    if (e.activation == a) return e.name;
  return "?";
}

std::string variant_name(Variant v) {
  for (const auto& n : kNamedVariants)
    if (n.variant == v) return std::string(n.name);
  if (v == kSwigluOai.variant) return std::string(kSwigluOai.name);
  return (v.gated ? "gated_" : "") + std::string(activation_name(v.activation));
}

Variant parse_variant(std::string_view name) {
  for (const auto& n : kNamedVariants)
    if (n.name == name) return n.variant;
  if (name == kSwigluOai.name) return kSwigluOai.variant;
  if (auto a = find_activation(name)) return {false, *a};
  for (std::string_view prefix : {"gated_", "gated-"}) {
    if (name.substr(0, prefix.size()) == prefix)
      if (auto a = find_activation(name.substr(prefix.size()))) return {true, *a};
  }
  throw Error("variant = '" + std::string(name) + "' is unknown; accepted: " + accepted_variant_names());
}

const std::vector<Variant>& named_variants() {
  static const std::vector<Variant> all = [] {
    std::vector<Variant> v;
    for (const auto& n : kNamedVariants) v.push_back(n.variant);
    return v;
  }();
  return all;
}

std::optional<Activation> activation_from_hf_name(std::string_view name) {
  for (const auto& a : kHfActivations)
    if (a.name == name) return a.activation;
  return std::nullopt;
}

std::string hf_activation_refusal(std::string_view name) {
  for (const auto& r : kHfRefusals)
    if (r.name == name) return std::string(r.reason);
  return {};
}

std::string hf_activation_names() {
  std::string s;
  for (const auto& a : kHfActivations) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

int64_t llama_hidden(int64_t d_model, int64_t multiple_of, std::optional<double> multiplier) {
  // Same arithmetic as the reference: float division truncated, then the multiplier in
  // double truncated, then integer round-up.
  auto h = static_cast<int64_t>(2.0 * static_cast<double>(4 * d_model) / 3.0);
  if (multiplier) h = static_cast<int64_t>(*multiplier * static_cast<double>(h));
  return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

HiddenDerivation derive_hidden(const BlockSpec& spec) {
  const std::string d_str = std::to_string(spec.d_model);
  if (spec.d_model <= 0) throw Error("d_model = " + d_str + ": must be positive");
  // Bound d so that 4·d and 8·d/3 are exact in int64 and in double; far above any model.
  constexpr int64_t kMaxD = int64_t{1} << 40;
  if (spec.d_model > kMaxD) throw Error("d_model = " + d_str + ": larger than the supported maximum 2^40");

  HiddenDerivation out;
  if (spec.hidden) {
    if (*spec.hidden <= 0) throw Error("hidden = " + std::to_string(*spec.hidden) + ": must be positive");
    out.explicit_size = true;
    out.start = out.hidden = *spec.hidden;
    out.text = "hidden = " + std::to_string(*spec.hidden) + " (given)";
    return out;
  }

  const int64_t multiple = spec.rule.multiple_of.value_or(spec.variant.gated ? 256 : 1);
  if (multiple <= 0) throw Error("multiple_of = " + std::to_string(multiple) + ": must be positive");
  if (multiple > kMaxD) throw Error("multiple_of = " + std::to_string(multiple) + ": larger than 2^40");
  if (spec.rule.ffn_dim_multiplier) {
    const double m = *spec.rule.ffn_dim_multiplier;
    if (!(m > 0.0) || !std::isfinite(m) || m > 1e6)
      throw Error("ffn_dim_multiplier = " + fmt_double(m) + ": must be a finite number in (0, 1e6]");
  }
  out.multiple_of = multiple;

  std::string text;
  if (spec.variant.gated) {
    out.start = static_cast<int64_t>(2.0 * static_cast<double>(4 * spec.d_model) / 3.0);
    char buf[128];
    std::snprintf(buf, sizeof buf, "8/3·%lld = %.2f → %lld", static_cast<long long>(spec.d_model),
                  8.0 * static_cast<double>(spec.d_model) / 3.0, static_cast<long long>(out.start));
    text = buf;
  } else {
    out.start = 4 * spec.d_model;
    text = "4·" + d_str + " = " + std::to_string(out.start);
  }
  int64_t h = out.start;
  if (spec.rule.ffn_dim_multiplier) {
    h = static_cast<int64_t>(*spec.rule.ffn_dim_multiplier * static_cast<double>(h));
    out.after_multiplier = h;
    text += " → ×" + fmt_double(*spec.rule.ffn_dim_multiplier) + " → " + std::to_string(h);
  }
  if (h <= 0)
    throw Error("ffn_dim_multiplier = " + fmt_double(*spec.rule.ffn_dim_multiplier) +
                ": gives hidden = " + std::to_string(h) + " for d_model = " + d_str);
  const int64_t rounded = multiple * ((h + multiple - 1) / multiple);
  if (multiple > 1)
    text += " → round up to a multiple of " + std::to_string(multiple) + " → " + std::to_string(rounded);
  out.hidden = rounded;
  out.text = text;
  return out;
}

BlockConfig resolve(const BlockSpec& spec) {
  BlockConfig c{spec.variant, spec.d_model, derive_hidden(spec).hidden, spec.bias, 0.0};
  validate(c);
  return c;
}

void validate(const BlockConfig& c) {
  if (c.d_model <= 0) throw Error("d_model = " + std::to_string(c.d_model) + ": must be positive");
  if (c.hidden <= 0) throw Error("hidden = " + std::to_string(c.hidden) + ": must be positive");
  bool known = false;
  for (const auto& a : kActivations) known = known || a.activation == c.variant.activation;
  if (!known)
    throw Error("variant.activation = " + std::to_string(static_cast<int>(c.variant.activation)) +
                ": not a known activation");
  if (c.variant.activation == Activation::clamped_swish && !c.variant.gated)
    throw Error(
        "variant.gated = false: activation clamped_swish (swiglu_oai) clamps and shifts the up "
        "projection, so it needs a gated block");
  if (!std::isfinite(c.gate_sparsity) || c.gate_sparsity < 0.0 || c.gate_sparsity >= 1.0)
    throw Error("gate_sparsity = " + fmt_double(c.gate_sparsity) +
                ": must be a fraction of the gate channels in [0, 1)");
  if (c.gate_sparsity > 0.0 && !c.variant.gated)
    throw Error("gate_sparsity = " + fmt_double(c.gate_sparsity) +
                ": a 2-matrix block has no gate to make sparse (variant.gated = false)");
  check_parameter_overflow(c);
}

// Acklam's rational approximation of Φ⁻¹ (relative error < 1.15e-9), then one step of
// Halley's method on Φ(x) − p, Φ(x) = erfc(−x/√2)/2, which brings it to double precision.
// The upper half is computed as −Φ⁻¹(1 − p) (1 − p is exact for p ≥ 1/2), so that Φ(x) − p
// is always formed in the lower tail, where erfc keeps its relative accuracy.
double normal_quantile(double p) {
  if (!std::isfinite(p) || p <= 0.0 || p >= 1.0)
    throw Error("normal_quantile(" + fmt_double(p) + "): the probability must lie in (0, 1)");
  if (p > 0.5) return -normal_quantile(1.0 - p);
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double p_low = 0.02425;
  double x;
  if (p < p_low) {  // lower tail
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else {  // central region, p in [p_low, 1/2]
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  }
  // Halley: e = Φ(x) − p, u = e/φ(x); x ← x − u/(1 + x·u/2).
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2.0 * 3.14159265358979323846) * std::exp(0.5 * x * x);
  if (!std::isfinite(u)) return x;  // p subnormal: exp(x²/2) overflows; Acklam's x stands
  return x - u / (1.0 + 0.5 * x * u);
}

}  // namespace ffn
