// shim/nccl/nccl_api.h against NCCL's real <nccl.h>: every enum value the shim uses, the
// unique id's size and the signature of every hooked entry point (nccl_hooks.def) are
// identical. Compiled only where the toolkit carries nccl.h (test nccl_api_matches_real_header);
// a mismatch fails the build.
//
// nccl_api.h (and the cuda_api.h it includes) is included inside namespace own and without C
// linkage, so its declarations sit next to the real ones. Own<T> maps a type spelled with own::
// types to the real type of the same name; two signatures match when Own<ours> is the real one.
#include <nccl.h>

#include <type_traits>

#define CT_CUDA_API_NAMESPACE own
#define CT_NCCL_API_NAMESPACE own
#include "nccl/nccl_api.h"
#include "nccl/nccl_hooks.def"

namespace {

template <class T> struct Own { using type = T; };
template <class T> using OwnT = typename Own<T>::type;
template <class T> struct Own<T*> { using type = OwnT<T>*; };
template <class T> struct Own<const T> { using type = const OwnT<T>; };
template <class R, class... A> struct Own<R(A...)> { using type = OwnT<R>(OwnT<A>...); };
template <> struct Own<own::ncclUniqueId> { using type = ::ncclUniqueId; };
template <> struct Own<own::ncclResult_t> { using type = ::ncclResult_t; };
template <> struct Own<own::ncclRedOp_t> { using type = ::ncclRedOp_t; };
template <> struct Own<own::ncclDataType_t> { using type = ::ncclDataType_t; };
template <> struct Own<own::ncclConfig_v22800> { using type = ::ncclConfig_t; };

#define CT_SAME_SIGNATURE(name) \
  static_assert(std::is_same_v<OwnT<std::remove_pointer_t<decltype(&own::name)>>, std::remove_pointer_t<decltype(&::name)>>, #name);
COLABTRACE_NCCL_HOOKS(CT_SAME_SIGNATURE)
#undef CT_SAME_SIGNATURE

#define CT_SAME_VALUE(name) static_assert(static_cast<long long>(own::name) == static_cast<long long>(::name), #name);
CT_SAME_VALUE(ncclSuccess) CT_SAME_VALUE(ncclUnhandledCudaError) CT_SAME_VALUE(ncclSystemError)
CT_SAME_VALUE(ncclInternalError) CT_SAME_VALUE(ncclInvalidArgument) CT_SAME_VALUE(ncclInvalidUsage)
CT_SAME_VALUE(ncclRemoteError) CT_SAME_VALUE(ncclInProgress) CT_SAME_VALUE(ncclNumResults)
CT_SAME_VALUE(ncclSum) CT_SAME_VALUE(ncclAvg) CT_SAME_VALUE(ncclNumOps) CT_SAME_VALUE(ncclMaxRedOp)
CT_SAME_VALUE(ncclInt8) CT_SAME_VALUE(ncclFloat32) CT_SAME_VALUE(ncclNumTypes)
#undef CT_SAME_VALUE
static_assert(static_cast<int>(own::kCtNcclSplitNoColor) == NCCL_SPLIT_NOCOLOR);
static_assert(sizeof(own::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(sizeof(own::ncclResult_t) == sizeof(::ncclResult_t));
static_assert(sizeof(own::ncclDataType_t) == sizeof(::ncclDataType_t));
static_assert(sizeof(own::ncclRedOp_t) == sizeof(::ncclRedOp_t));

}  // namespace

int main() { return 0; }
