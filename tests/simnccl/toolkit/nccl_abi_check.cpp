// tests/simnccl/nccl_abi/nccl.h against NCCL's real <nccl.h> (built only where the toolkit
// carries one; a mismatch fails the build): every enumerator's value, the layouts of
// ncclUniqueId, ncclConfig_t and ncclSimInfo_t, the version macros, and the type of every
// function of NCCL_SIM_API (nccl<Name> and pnccl<Name>), spelled with the real types.
#include <nccl.h>  // the real one (the toolkit's include directory comes first)

#include <cstddef>
#include <type_traits>

#define SIMNCCL_ABI_CHECK
namespace sim {
#include SIMNCCL_ABI_HEADER  // its <cuda_runtime_api.h> is the toolkit's, already included
}

#define SAME_VALUE(name) static_assert(static_cast<long long>(sim::name) == static_cast<long long>(::name), #name);
SAME_VALUE(ncclSuccess) SAME_VALUE(ncclUnhandledCudaError) SAME_VALUE(ncclSystemError)
SAME_VALUE(ncclInternalError) SAME_VALUE(ncclInvalidArgument) SAME_VALUE(ncclInvalidUsage)
SAME_VALUE(ncclRemoteError) SAME_VALUE(ncclInProgress) SAME_VALUE(ncclNumResults)
SAME_VALUE(ncclSum) SAME_VALUE(ncclProd) SAME_VALUE(ncclMax) SAME_VALUE(ncclMin) SAME_VALUE(ncclAvg)
SAME_VALUE(ncclNumOps) SAME_VALUE(ncclMaxRedOp) SAME_VALUE(ncclNumOps_dummy)
SAME_VALUE(ncclInt8) SAME_VALUE(ncclChar) SAME_VALUE(ncclUint8) SAME_VALUE(ncclInt32) SAME_VALUE(ncclInt)
SAME_VALUE(ncclUint32) SAME_VALUE(ncclInt64) SAME_VALUE(ncclUint64) SAME_VALUE(ncclFloat16) SAME_VALUE(ncclHalf)
SAME_VALUE(ncclFloat32) SAME_VALUE(ncclFloat) SAME_VALUE(ncclFloat64) SAME_VALUE(ncclDouble)
SAME_VALUE(ncclBfloat16) SAME_VALUE(ncclFloat8e4m3) SAME_VALUE(ncclFloat8e5m2) SAME_VALUE(ncclNumTypes)
SAME_VALUE(ncclScalarDevice) SAME_VALUE(ncclScalarHostImmediate)
#undef SAME_VALUE
static_assert(sizeof(sim::ncclRedOp_t) == sizeof(::ncclRedOp_t));
static_assert(sizeof(sim::ncclDataType_t) == sizeof(::ncclDataType_t));
static_assert(sizeof(sim::ncclResult_t) == sizeof(::ncclResult_t));

// The macros were redefined by the second include: -Werror fails on a different definition.
static_assert(NCCL_VERSION_CODE == 22809 && NCCL_UNIQUE_ID_BYTES == 128 && NCCL_SPLIT_NOCOLOR == -1);

#define SAME_FIELD(type, field)                                                       \
  static_assert(offsetof(sim::type, field) == offsetof(::type, field), #type "." #field); \
  static_assert(sizeof(sim::type::field) == sizeof(::type::field), #type "." #field);
static_assert(sizeof(sim::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(sizeof(sim::ncclConfig_t) == sizeof(::ncclConfig_t));
SAME_FIELD(ncclConfig_t, size) SAME_FIELD(ncclConfig_t, magic) SAME_FIELD(ncclConfig_t, version)
SAME_FIELD(ncclConfig_t, blocking) SAME_FIELD(ncclConfig_t, cgaClusterSize) SAME_FIELD(ncclConfig_t, minCTAs)
SAME_FIELD(ncclConfig_t, maxCTAs) SAME_FIELD(ncclConfig_t, netName) SAME_FIELD(ncclConfig_t, splitShare)
SAME_FIELD(ncclConfig_t, trafficClass) SAME_FIELD(ncclConfig_t, commName) SAME_FIELD(ncclConfig_t, collnetEnable)
SAME_FIELD(ncclConfig_t, CTAPolicy) SAME_FIELD(ncclConfig_t, shrinkShare) SAME_FIELD(ncclConfig_t, nvlsCTAs)
SAME_FIELD(ncclConfig_t, nChannelsPerNetPeer) SAME_FIELD(ncclConfig_t, nvlinkCentricSched)
static_assert(sizeof(sim::ncclSimInfo_t) == sizeof(::ncclSimInfo_t));
SAME_FIELD(ncclSimInfo_t, size) SAME_FIELD(ncclSimInfo_t, magic) SAME_FIELD(ncclSimInfo_t, version)
SAME_FIELD(ncclSimInfo_t, estimatedTime)
#undef SAME_FIELD

// NCCL_SIM_API's signatures, read here outside namespace sim: with the real types.
#define SAME_SIGNATURE(ret, name, params)                                                 \
  static_assert(std::is_same_v<decltype(&::nccl##name), ret(*) params>, "nccl" #name);    \
  static_assert(std::is_same_v<decltype(&::pnccl##name), ret(*) params>, "pnccl" #name);
NCCL_SIM_API(SAME_SIGNATURE)
#undef SAME_SIGNATURE

int main() { return 0; }
