// every_call_inlined(f, args...): calls f(args...) with every call inside it inlined (GCC's
// and Clang's flatten), as a function of its own that is never inlined. For kernel loops
// whose calls are a large share of their work (a tile call per token and block), where the
// compiler would otherwise keep the calls. args go by value, so a caller that hands f what
// it needs, instead of a lambda's captures, passes them in registers as a plain function's
// arguments. An instantiation per caller's lambda, so each ISA level's file gets its own
// copy, compiled with that file's flags — as long as f's type is that file's own (a lambda
// in a function of an anonymous namespace, or one that depends on such a type, as
// avx2_qsub::panel_in_k_blocks' does on its caller's pass): a lambda of an inline function
// that two levels' files both include would be one type, and the linker would keep one of
// its copies for both. No intrinsics: included by any level's files.
#pragma once

namespace ffn::kernels {

template <class F, class... Args>
[[gnu::noinline, gnu::flatten]] void every_call_inlined(const F& f, Args... args) {
  f(args...);
}

}  // namespace ffn::kernels
