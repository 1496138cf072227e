// tests/simcuda/cuda_abi/*.h against the CUDA Toolkit's own headers: every enumerator value,
// struct size, alignment, field offset and type, function signature, PFN typedef and macro
// the simulated libraries and their test programs are built with is identical. Compiled only
// where CMake finds the toolkit (tests/simcuda/CMakeLists.txt); a mismatch fails the build.
//
// The toolkit's headers come first, from its include directory (this target does not have
// cuda_abi/ on its include path); ours are included by relative path inside namespace sim,
// so their declarations sit next to the real ones. Their macros (base-name mappings such as
// cuMemAlloc -> cuMemAlloc_v2, CU_STREAM_LEGACY, CUDA_VERSION) are redefinitions of the
// toolkit's: -Werror turns any difference into an error. Own<T> maps a type spelled with
// sim:: types to the real type of the same name; cuda_abi/check.inc (generated with the
// headers) lists what to compare.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#define SIMCUDA_ABI_NAMESPACE sim
#include "../cuda_abi/cuda.h"
#include "../cuda_abi/cudaTypedefs.h"
#include "../cuda_abi/cuda_runtime_api.h"

namespace {

template <class T> struct Own { using type = T; };
template <class T> using OwnT = typename Own<T>::type;
template <class T> struct Own<T*> { using type = OwnT<T>*; };
template <class T> struct Own<const T> { using type = const OwnT<T>; };
template <class T, std::size_t N> struct Own<T[N]> { using type = OwnT<T>[N]; };
template <class R, class... A> struct Own<R(A...)> { using type = OwnT<R>(OwnT<A>...); };

// Pass 1: each enum, struct and union of ours stands for the real one of the same tag.
#define CT_ENUM(tag) template <> struct Own<sim::tag> { using type = ::tag; };
#define CT_STRUCT(tag) CT_ENUM(tag)
#define CT_ENUMERATOR(name)
#define CT_FIELD(tag, field)
#define CT_FUNCTION(name)
#define CT_TYPEDEF(name)
#include "../cuda_abi/check.inc"
#undef CT_ENUM
#undef CT_STRUCT
#undef CT_ENUMERATOR
#undef CT_FIELD
#undef CT_FUNCTION
#undef CT_TYPEDEF

// A field's type: the same (through Own) for scalars, pointers and arrays; a nested struct or
// union has the same size (a named one is compared field by field under its own tag).
template <class Ours, class Real> constexpr bool SameField() {
  if constexpr (std::is_class_v<Ours> || std::is_union_v<Ours>)
    return sizeof(Ours) == sizeof(Real);
  else
    return std::is_same_v<OwnT<Ours>, Real>;
}

// Pass 2: the comparisons.
#define CT_ENUM(tag)                                                                  \
  static_assert(sizeof(sim::tag) == sizeof(::tag), "size of enum " #tag);             \
  static_assert(std::is_signed_v<std::underlying_type_t<sim::tag>> ==                 \
                    std::is_signed_v<std::underlying_type_t<::tag>>,                  \
                "signedness of enum " #tag);
#define CT_ENUMERATOR(name) \
  static_assert(static_cast<long long>(sim::name) == static_cast<long long>(::name), #name);
#define CT_STRUCT(tag)                                                            \
  static_assert(sizeof(sim::tag) == sizeof(::tag), "size of " #tag);             \
  static_assert(alignof(sim::tag) == alignof(::tag), "alignment of " #tag);
#define CT_FIELD(tag, field)                                                              \
  static_assert(offsetof(sim::tag, field) == offsetof(::tag, field), #tag "." #field);    \
  static_assert(SameField<decltype(sim::tag::field), decltype(::tag::field)>(),           \
                "type of " #tag "." #field);
#define CT_FUNCTION(name) \
  static_assert(std::is_same_v<OwnT<decltype(sim::name)>, decltype(::name)>, "signature of " #name);
#define CT_TYPEDEF(name) \
  static_assert(std::is_same_v<OwnT<sim::name>, ::name>, "typedef " #name);
#include "../cuda_abi/check.inc"

}  // namespace

int main() { return 0; }
