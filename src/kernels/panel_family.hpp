// What the forward's kernels know of each type at compile time, from its line of
// ffn/weight_type_list.hpp: the family of panels its rows are laid into (the layouts:
// f32/f16/bf16 in kernels.hpp, qblock_panels.hpp, qsub_panels.hpp) and, for the integer
// families, the integer form of its values (q_format.hpp). The kernels are templates over the
// type, instantiated for every type of their family (panel_kernels.hpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "ffn/weight_type.hpp"
#include "kernels/q_format.hpp"

namespace ffn::kernels {

enum class PanelFamily { f32, f16, bf16, qblock, qsub, none };

// A type's line of the list as the kernels see it.
struct TypeFacts {
  std::string_view name;
  PanelFamily family;
  QFormat format;       // its block set from the line's block column
  int64_t block_bytes;  // bytes a block
};

namespace detail {

constexpr QFormat with_block(QFormat f, int block) {
  f.block = block;
  return f;
}
#define FFN_EXPAND_FIELDS(...) __VA_ARGS__
inline constexpr TypeFacts kTypeFacts[] = {
#define FFN_TYPE_FACTS(name, gguf, block, bytes, panels, scales, format, summary) \
  {#name, PanelFamily::panels, with_block(QFormat{FFN_EXPAND_FIELDS format}, block), bytes},
    FFN_WEIGHT_TYPES(FFN_TYPE_FACTS)
#undef FFN_TYPE_FACTS
};
#undef FFN_EXPAND_FIELDS

}  // namespace detail

constexpr const TypeFacts& type_facts(WeightType t) { return detail::kTypeFacts[static_cast<int>(t)]; }
constexpr PanelFamily panel_family(WeightType t) { return type_facts(t).family; }
constexpr std::string_view type_name(WeightType t) { return type_facts(t).name; }
// Bytes a block of type t (its values a block: q_format(t).block for the integer families).
constexpr int64_t type_block_bytes(WeightType t) { return type_facts(t).block_bytes; }
constexpr QFormat q_format(WeightType t) { return type_facts(t).format; }

// Calls f.template operator()<W>() for every type W of family `family`, in the list's order:
// how a kernel file instantiates its template for its family's types, and the table code
// reaches each type's compile-time facts.
template <PanelFamily family, class F>
constexpr void for_each_type_of(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (
        [&] {
          if constexpr (panel_family(static_cast<WeightType>(I)) == family)
            f.template operator()<static_cast<WeightType>(I)>();
        }(),
        ...);
  }
  (std::make_integer_sequence<int, kWeightTypeCount>{});
}

}  // namespace ffn::kernels
