// The names under which checkpoints keep one layer's mixture of experts, and finding which
// scheme a checkpoint uses (the dense blocks' are in block_names.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/tensor_source.hpp"

namespace ffn::io {

struct MoeNames {
  std::string scheme;       // "mixtral (hugging face)", "hugging face", "hugging face fused", "gpt-oss (hugging face)",
                            // "gpt-oss (hugging face, mxfp4)", "dbrx (hugging face)", "granite-moe (hugging face)",
                            // "llama 4 (hugging face)", "gguf"
  std::string router;       // [E][D]
  std::string choice_bias;  // DeepSeek's e_score_correction_bias [E]; may be absent
  // Routed experts. Per-expert tensors (fused = false): patterns with {E} for the expert,
  // each [H][D] (down [D][H]). Fused (fused = true): 3-D tensors [E][H][D] and [E][D][H];
  // gate_up, when not empty, holds gate and up of each expert in one [E][2H][D] tensor
  // (rows 0 … H−1 the gate, H … 2H−1 up) and gate and up are empty.
  bool fused = false;
  std::string gate, up, down, gate_up;
  // gpt-oss's Hugging Face layout: gate_up [E][D][2H] and down [E][H][D], stored [in][out]
  // (transposed against nn.Linear), gate and up interleaved in the 2H columns (gate at even
  // columns, up at odd).
  bool in_out_interleaved = false;
  // Llama 4's layout (Llama4TextExperts): gate_up [E][D][2H] and down [E][H][D] in × out, the
  // gate the first H of the 2H columns (the module's chunk(2, dim=-1)), up the last H.
  bool in_out_halves = false;
  // gpt-oss's Hugging Face release (in_out_interleaved stays false): the experts in MXFP4,
  // gate_up and down naming the _blocks tensors, [E][2H][D/32][16] (nn.Linear layout,
  // gate and up interleaved in the 2H rows: gate at even rows, up at odd) and
  // [E][D][H/32][16], with their e8m0 _scales [E][2H][D/32] and [E][D][H/32] (hf_mxfp4.hpp).
  bool mxfp4_blocks = false;
  std::string gate_up_scales, down_scales;
  // DBRX's layout: gate (w1), up (v1) and down (w2) each one 2-D tensor [E·H][D] of the
  // experts stacked; w1 and v1 in nn.Linear's layout, w2 in × out (expert e's [H][D] rows
  // are its down projection transposed). The tensors do not say E: config.json does.
  bool stacked_down_in_out = false;
  // A layer stored in a form ffn refuses, with why (empty otherwise).
  std::string unsupported;
  // Biases (empty when the file has none): the router's [E]; the experts' [E][H] (gate,
  // up), [E][2H] (gate_up, laid out as its weight's rows or columns), [E][D] (down).
  std::string router_bias, gate_bias, up_bias, down_bias, gate_up_bias;
  // Shared experts (all empty when the scheme's names are absent): [S][D], [D][S]; the
  // shared-expert gate [1][D] or [D]. shared_gate_up (Granite-MoE-Shared's
  // shared_mlp.input_linear), when not empty, holds gate and up in one [2S][D] tensor (rows
  // 0 … S−1 the gate, as the module's chunk(2) takes them) and shared_gate/up are empty.
  std::string shared_gate, shared_up, shared_down, shared_expert_gate, shared_gate_up;
};

// With the expert number put into a per-expert pattern.
std::string expert_tensor(const std::string& pattern, int64_t expert);

// The MoE of `layer` in `source`, or nullopt when the layer has no router under any scheme.
std::optional<MoeNames> find_moe_names(const TensorSource& source, int64_t layer);

// Every layer that holds a mixture of experts, in order.
std::vector<int64_t> moe_layers(const TensorSource& source);

}  // namespace ffn::io
