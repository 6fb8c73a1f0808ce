// ffn info for mixture-of-experts presets (info_moe.cpp).
#pragma once

#include "ffn/moe.hpp"

namespace ffn::cli {

// Parameters, FLOPs and the bytes batches read, as text or JSON.
void print_moe_preset(const MoePreset& preset, bool json);

}  // namespace ffn::cli
