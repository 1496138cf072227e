/* The subset of NCCL 2.28.9's <nccl.h> that the simulated libnccl.so.2 (tests/simnccl) and the
 * programs built against it use: the version macros, handle types, ncclUniqueId, every
 * ncclResult_t, ncclRedOp_t and ncclDataType_t value, ncclConfig_t and ncclSimInfo_t, and the
 * prototypes of the API's functions (each also as pnccl*, the names the real library defines;
 * the nccl* names are weak aliases of them). Written by hand from the real header;
 * toolkit/nccl_abi_check.c compares every value, layout and signature with it wherever the CUDA
 * toolkit's nccl.h exists (test simnccl_abi_matches_real_header). Builds without CUDA: streams
 * are the simulated runtime's cudaStream_t (cuda_runtime_api.h from tests/simcuda/cuda_abi). */
#ifndef SIMNCCL_NCCL_ABI_H
#define SIMNCCL_NCCL_ABI_H

#include <limits.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22809
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

typedef enum { ncclSuccess                 =  0,
               ncclUnhandledCudaError      =  1,
               ncclSystemError             =  2,
               ncclInternalError           =  3,
               ncclInvalidArgument         =  4,
               ncclInvalidUsage            =  5,
               ncclRemoteError             =  6,
               ncclInProgress              =  7,
               ncclNumResults              =  8 } ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1

typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER {                                                                  \
  sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),             \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,      \
  NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,      \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,      \
  NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                                                    \
}

typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum { ncclSum        = 0,
               ncclProd       = 1,
               ncclMax        = 2,
               ncclMin        = 3,
               ncclAvg        = 4,
               ncclNumOps     = 5,
               ncclMaxRedOp   = 0x7fffffff>>(32-8*sizeof(ncclRedOp_dummy_t))
             } ncclRedOp_t;

typedef enum { ncclInt8       = 0, ncclChar       = 0,
               ncclUint8      = 1,
               ncclInt32      = 2, ncclInt        = 2,
               ncclUint32     = 3,
               ncclInt64      = 4,
               ncclUint64     = 5,
               ncclFloat16    = 6, ncclHalf       = 6,
               ncclFloat32    = 7, ncclFloat      = 7,
               ncclFloat64    = 8, ncclDouble     = 8,
               ncclBfloat16   = 9,
               ncclFloat8e4m3 = 10,
               ncclFloat8e5m2 = 11,
               ncclNumTypes   = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Each function twice: nccl<Name> and pnccl<Name>. */
#define NCCL_SIM_DECLARE(ret, name, params) ret nccl##name params; ret pnccl##name params;
#define NCCL_SIM_API(X)                                                                            \
  X(ncclResult_t, MemAlloc, (void **ptr, size_t size))                                             \
  X(ncclResult_t, MemFree, (void *ptr))                                                            \
  X(ncclResult_t, GetVersion, (int *version))                                                      \
  X(ncclResult_t, GetUniqueId, (ncclUniqueId *uniqueId))                                           \
  X(ncclResult_t, CommInitRankConfig, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, \
                                       ncclConfig_t *config))                                       \
  X(ncclResult_t, CommInitRank, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank))     \
  X(ncclResult_t, CommInitAll, (ncclComm_t *comm, int ndev, const int *devlist))                   \
  X(ncclResult_t, CommFinalize, (ncclComm_t comm))                                                 \
  X(ncclResult_t, CommDestroy, (ncclComm_t comm))                                                  \
  X(ncclResult_t, CommAbort, (ncclComm_t comm))                                                    \
  X(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags))                                  \
  X(ncclResult_t, CommSplit, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm,            \
                              ncclConfig_t *config))                                                \
  X(ncclResult_t, CommShrink, (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,      \
                               ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags))         \
  X(ncclResult_t, CommInitRankScalable, (ncclComm_t *newcomm, int nranks, int myrank, int nId,     \
                                         ncclUniqueId *commIds, ncclConfig_t *config))              \
  X(const char *, GetErrorString, (ncclResult_t result))                                           \
  X(const char *, GetLastError, (ncclComm_t comm))                                                 \
  X(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError))                  \
  X(ncclResult_t, CommCount, (const ncclComm_t comm, int *count))                                  \
  X(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int *device))                              \
  X(ncclResult_t, CommUserRank, (const ncclComm_t comm, int *rank))                                \
  X(ncclResult_t, CommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle))   \
  X(ncclResult_t, CommDeregister, (const ncclComm_t comm, void *handle))                           \
  X(ncclResult_t, CommWindowRegister, (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, \
                                       int winFlags))                                               \
  X(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))                       \
  X(ncclResult_t, RedOpCreatePreMulSum, (ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,   \
                                         ncclScalarResidence_t residence, ncclComm_t comm))         \
  X(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))                                 \
  X(ncclResult_t, Reduce, (const void *sendbuff, void *recvbuff, size_t count,                     \
                           ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,      \
                           cudaStream_t stream))                                                    \
  X(ncclResult_t, Bcast, (void *buff, size_t count, ncclDataType_t datatype, int root,             \
                          ncclComm_t comm, cudaStream_t stream))                                    \
  X(ncclResult_t, Broadcast, (const void *sendbuff, void *recvbuff, size_t count,                  \
                              ncclDataType_t datatype, int root, ncclComm_t comm,                   \
                              cudaStream_t stream))                                                 \
  X(ncclResult_t, AllReduce, (const void *sendbuff, void *recvbuff, size_t count,                  \
                              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,             \
                              cudaStream_t stream))                                                 \
  X(ncclResult_t, ReduceScatter, (const void *sendbuff, void *recvbuff, size_t recvcount,          \
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,         \
                                  cudaStream_t stream))                                             \
  X(ncclResult_t, AllGather, (const void *sendbuff, void *recvbuff, size_t sendcount,              \
                              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream))       \
  X(ncclResult_t, AlltoAll, (const void *sendbuff, void *recvbuff, size_t count,                   \
                             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream))        \
  X(ncclResult_t, Gather, (const void *sendbuff, void *recvbuff, size_t count,                     \
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)) \
  X(ncclResult_t, Scatter, (const void *sendbuff, void *recvbuff, size_t count,                    \
                            ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)) \
  X(ncclResult_t, Send, (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,    \
                         ncclComm_t comm, cudaStream_t stream))                                     \
  X(ncclResult_t, Recv, (void *recvbuff, size_t count, ncclDataType_t datatype, int peer,          \
                         ncclComm_t comm, cudaStream_t stream))                                     \
  X(ncclResult_t, GroupStart, (void))                                                              \
  X(ncclResult_t, GroupEnd, (void))                                                                \
  X(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t *simInfo))

#ifndef SIMNCCL_ABI_CHECK /* toolkit/nccl_abi_check.cpp checks the list itself against the real ones */
NCCL_SIM_API(NCCL_SIM_DECLARE)
#endif

#ifdef __cplusplus
}
#endif

#endif
