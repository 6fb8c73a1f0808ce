// One entry of a kernel table: a kernel and its name. The name carries the kernel's
// contract (<dtype>_<op>_<isa>_<tile>, e.g. f32_gemm_avx512_16x6) and is always the
// function's own identifier — FFN_KERNEL (kernels/register.hpp) makes it from the function,
// so it is never typed twice and cannot drift from the code it names.
#pragma once

#include <cstddef>

namespace ffn::kernels {

template <class Fn>
struct Named;

// An entry is called like the function it holds (k.f32_gemm_nt(T, N, ...)), converts to a
// plain function pointer where one is wanted, and is empty — null, false — where a table
// has no kernel for the op (f32_to_bf16_rows outside the bf16 dot levels: avx512_bf16, and
// Arm's bf16).
template <class R, class... Args>
struct Named<R (*)(Args...)> {
  using Fn = R (*)(Args...);
  const char* name = nullptr;
  Fn fn = nullptr;

  R operator()(Args... args) const { return fn(args...); }
  explicit operator bool() const { return fn != nullptr; }
  operator Fn() const { return fn; }
  friend bool operator==(const Named& entry, std::nullptr_t) { return entry.fn == nullptr; }
};

}  // namespace ffn::kernels
