#pragma once

namespace ffn {
inline constexpr const char* version = "0.1.0";
}  // namespace ffn
