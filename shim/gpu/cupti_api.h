// The CUPTI declarations the shim's CUPTI subscriber (cupti.cpp) and the simulated
// libcupti.so (tests/simcuda/sim_cupti.c) are typed from: written here, like cuda_api.h,
// so neither needs the CUDA Toolkit. The shim never links libcupti: it dlopens it after
// CUDA initialized and looks these entry points up.
//
// Layouts are CUPTI 13's (cupti.h, cupti_callbacks.h, cupti_activity.h: the records of
// CUPTI_ACTIVITY_KIND_MEMORY2 are CUpti_ActivityMemory4, of MEMORY_POOL
// CUpti_ActivityMemoryPool3). tests/gpu/toolkit/cuda_api_check.cpp static_asserts every
// size, offset, enum value and signature here against the toolkit's headers.
//
// Plain C and C++. Handles of the driver are spelled as struct pointers (struct CUctx_st*)
// so this header can sit next to either cuda_api.h or the toolkit's cuda.h.
#pragma once

#include <stddef.h>
#include <stdint.h>

#if defined(CT_CUDA_API_NAMESPACE)
#define CT_CUPTI_C_BEGIN namespace CT_CUDA_API_NAMESPACE {
#define CT_CUPTI_C_END }
#elif defined(__cplusplus)
#define CT_CUPTI_C_BEGIN extern "C" {
#define CT_CUPTI_C_END }
#else
#define CT_CUPTI_C_BEGIN
#define CT_CUPTI_C_END
#endif

// Activity records are packed and 8-byte aligned (cupti_common.h's PACKED_ALIGNMENT).
#define CT_CUPTI_PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

CT_CUPTI_C_BEGIN

typedef enum {
  CUPTI_SUCCESS = 0,
  CUPTI_ERROR_INVALID_PARAMETER = 1,
  CUPTI_ERROR_NOT_INITIALIZED = 15,
  CUPTI_ERROR_MAX_LIMIT_REACHED = 12,
  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
  CUPTI_ERROR_UNKNOWN = 999,
} CUptiResult;

typedef enum {
  CUPTI_API_ENTER = 0,
  CUPTI_API_EXIT = 1,
} CUpti_ApiCallbackSite;

typedef enum {
  CUPTI_CB_DOMAIN_INVALID = 0,
  CUPTI_CB_DOMAIN_DRIVER_API = 1,
  CUPTI_CB_DOMAIN_RUNTIME_API = 2,
  CUPTI_CB_DOMAIN_RESOURCE = 3,
} CUpti_CallbackDomain;

typedef enum {
  CUPTI_CBID_RESOURCE_INVALID = 0,
  CUPTI_CBID_RESOURCE_CONTEXT_CREATED = 1,
  CUPTI_CBID_RESOURCE_MODULE_LOADED = 6,
  CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING = 7,
} CUpti_CallbackIdResource;

// The driver API callbacks the shim enables (cupti_driver_cbid.h).
typedef enum CUpti_driver_api_trace_cbid_enum {
  CUPTI_DRIVER_TRACE_CBID_INVALID = 0,
  CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 = 243,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2 = 244,
  CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2 = 245,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged = 371,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync = 598,
  CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync = 600,
} CUpti_driver_api_trace_cbid;

typedef uint32_t CUpti_CallbackId;

typedef struct {
  CUpti_ApiCallbackSite callbackSite;
  const char* functionName;
  const void* functionParams;
  void* functionReturnValue;
  const char* symbolName;
  struct CUctx_st* context;
  uint32_t contextUid;
  uint64_t* correlationData;
  uint32_t correlationId;
} CUpti_CallbackData;

typedef struct {
  struct CUctx_st* context;
  union {
    struct CUstream_st* stream;
  } resourceHandle;
  void* resourceDescriptor;
} CUpti_ResourceData;

typedef struct {
  uint32_t moduleId;
  size_t cubinSize;
  const char* pCubin;
} CUpti_ModuleResourceData;

// The driver API parameter blocks of the memory callbacks (generated_cuda_meta.h).
typedef struct cuMemAlloc_v2_params_st {
  unsigned long long* dptr;
  size_t bytesize;
} cuMemAlloc_v2_params;
typedef struct cuMemFree_v2_params_st {
  unsigned long long dptr;
} cuMemFree_v2_params;

typedef void (*CUpti_CallbackFunc)(void* userdata, CUpti_CallbackDomain domain,
                                   CUpti_CallbackId cbid, const void* cbdata);
typedef struct CUpti_Subscriber_st* CUpti_SubscriberHandle;

// cuptiSubscribe_v2's parameters (CUPTI 13; the shim only passes them on).
typedef struct {
  size_t structSize;
  const char* subscriberName;
  char* oldSubscriberName;
  size_t oldSubscriberSize;
} CUpti_SubscriberParams;

// ---- activity --------------------------------------------------------------------------------
typedef enum {
  CUPTI_ACTIVITY_KIND_INVALID = 0,
  CUPTI_ACTIVITY_KIND_MEMORY2 = 49,
  CUPTI_ACTIVITY_KIND_MEMORY_POOL = 50,
} CUpti_ActivityKind;

typedef enum {
  CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID = 0,
  CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION = 1,
  CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE = 2,
} CUpti_ActivityMemoryOperationType;

// What a MEMORY2 record's memory is. Only DEVICE and MANAGED are allocations a program made
// through an API; DEVICE_STATIC / MANAGED_STATIC are the driver's own memory for the
// __device__ / __managed__ variables of the modules it loads (PyTorch's lazily loaded
// kernels bring hundreds), PAGEABLE / PINNED are host memory.
typedef enum {
  CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN = 0,
  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE = 1,
  CUPTI_ACTIVITY_MEMORY_KIND_PINNED = 2,
  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE = 3,
  CUPTI_ACTIVITY_MEMORY_KIND_ARRAY = 4,
  CUPTI_ACTIVITY_MEMORY_KIND_MANAGED = 5,
  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC = 6,
  CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC = 7,
} CUpti_ActivityMemoryKind;

// cuptiActivityFlushAll's flag: FORCED also hands back buffers with incomplete records.
typedef enum {
  CUPTI_ACTIVITY_FLAG_NONE = 0,
  CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1,
} CUpti_ActivityFlag;

typedef enum {
  CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID = 0,
  CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL = 1,
} CUpti_ActivityMemoryPoolType;

typedef enum {
  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID = 0,
  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED = 1,
  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED = 2,
  CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED = 3,
} CUpti_ActivityMemoryPoolOperationType;

typedef struct CT_CUPTI_PACKED {
  CUpti_ActivityKind kind;
} CUpti_Activity;

// CUPTI_ACTIVITY_KIND_MEMORY2 (LP64 layout).
typedef struct CT_CUPTI_PACKED {
  CUpti_ActivityKind kind;
  CUpti_ActivityMemoryOperationType memoryOperationType;
  CUpti_ActivityMemoryKind memoryKind;
  uint32_t correlationId;
  uint64_t address;
  uint64_t bytes;
  uint64_t timestamp;
  uint64_t PC;
  uint32_t processId;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  const char* name;
  uint32_t isAsync;
  uint32_t pad1;
  struct CT_CUPTI_PACKED {
    CUpti_ActivityMemoryPoolType memoryPoolType;
    uint32_t pad2;
    uint64_t address;
    uint64_t releaseThreshold;
    union {
      uint64_t size;
      uint64_t processId;
    } pool;
    uint64_t utilizedSize;
  } memoryPoolConfig;
  const char* source;
} CUpti_ActivityMemory4;

// CUPTI_ACTIVITY_KIND_MEMORY_POOL (LP64 layout).
typedef struct CT_CUPTI_PACKED {
  CUpti_ActivityKind kind;
  CUpti_ActivityMemoryPoolOperationType memoryPoolOperationType;
  CUpti_ActivityMemoryPoolType memoryPoolType;
  uint32_t correlationId;
  uint32_t processId;
  uint32_t deviceId;
  size_t minBytesToKeep;
  uint64_t address;
  uint64_t size;
  uint64_t releaseThreshold;
  uint64_t timestamp;
  uint64_t utilizedSize;
  uint8_t isManagedPool;
  uint8_t pad2[7];
} CUpti_ActivityMemoryPool3;

typedef void (*CUpti_BuffersCallbackRequestFunc)(uint8_t** buffer, size_t* size,
                                                 size_t* maxNumRecords);
typedef void (*CUpti_BuffersCallbackCompleteFunc)(struct CUctx_st* context, uint32_t streamId,
                                                  uint8_t* buffer, size_t size, size_t validSize);

// ---- entry points (looked up with dlsym; never linked) ------------------------------------------
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* userdata);
CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                              void* userdata, CUpti_SubscriberParams* pParams);
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber);
CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                              CUpti_CallbackDomain domain);
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                           CUpti_BuffersCallbackCompleteFunc funcBufferCompleted);
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind);
CUptiResult cuptiActivityFlushAll(uint32_t flag);
CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                       CUpti_Activity** record);
CUptiResult cuptiActivityGetNumDroppedRecords(struct CUctx_st* context, uint32_t streamId,
                                              size_t* dropped);

CT_CUPTI_C_END

#undef CT_CUPTI_C_BEGIN
#undef CT_CUPTI_C_END
