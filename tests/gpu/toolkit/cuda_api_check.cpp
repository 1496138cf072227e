// shim/gpu/cuda_api.h against the CUDA Toolkit's own headers: every size, field offset,
// enum value and entry-point signature the shim relies on is identical. Compiled only
// where CMake finds the toolkit (tests/gpu/CMakeLists.txt); a mismatch fails the build.
//
// cuda_api.h is included inside namespace own and without C linkage, so its
// declarations sit next to the real ones. Own<T> maps a type spelled with own:: types to
// the real type of the same name; two signatures match when Own<ours> is the real one.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

// cuda.h maps the base name to the newest variant; the shim declares both variants.
#undef cuGetProcAddress

#define CT_CUDA_API_NAMESPACE own
#include "gpu/cuda_api.h"
#include "gpu/cupti_api.h"

namespace {

template <class T> struct Own { using type = T; };
template <class T> using OwnT = typename Own<T>::type;
template <class T> struct Own<T*> { using type = OwnT<T>*; };
template <class T> struct Own<const T> { using type = const OwnT<T>; };
template <class R, class... A> struct Own<R(A...)> { using type = OwnT<R>(OwnT<A>...); };

#define CT_SAME_TYPE(name) \
  template <> struct Own<own::name> { using type = ::name; };
CT_SAME_TYPE(CUresult)
CT_SAME_TYPE(cudaError_t)
CT_SAME_TYPE(CUdevice_attribute)
CT_SAME_TYPE(cudaDeviceAttr)
CT_SAME_TYPE(CUmemPool_attribute)
CT_SAME_TYPE(CUdriverProcAddressQueryResult)
CT_SAME_TYPE(CUjit_option)
CT_SAME_TYPE(CUlibraryOption)
CT_SAME_TYPE(CUmemPoolProps)
CT_SAME_TYPE(CUmemAllocationProp)
CT_SAME_TYPE(dim3)
CT_SAME_TYPE(cudaLaunchConfig_t)
CT_SAME_TYPE(CUlaunchConfig)
CT_SAME_TYPE(CUptiResult)
CT_SAME_TYPE(CUpti_CallbackDomain)
CT_SAME_TYPE(CUpti_ActivityKind)
CT_SAME_TYPE(CUpti_Activity)
CT_SAME_TYPE(CUpti_SubscriberParams)
template <> struct Own<enum own::cudaMemcpyKind> { using type = enum ::cudaMemcpyKind; };
#undef CT_SAME_TYPE

// Opaque handles (struct CUstream_st*, ...) need no mapping: inside namespace own the
// elaborated names find the toolkit's structs, which the asserts below confirm.

// ---- scalar and handle types -------------------------------------------------------------------
static_assert(std::is_same_v<own::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<own::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<own::cuuint64_t, ::cuuint64_t>);
static_assert(std::is_same_v<own::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>);
static_assert(std::is_same_v<OwnT<own::CUstream>, ::CUstream>);
static_assert(std::is_same_v<OwnT<own::cudaStream_t>, ::cudaStream_t>);
static_assert(std::is_same_v<OwnT<own::CUmemoryPool>, ::CUmemoryPool>);
static_assert(std::is_same_v<OwnT<own::cudaMemPool_t>, ::cudaMemPool_t>);
static_assert(std::is_same_v<OwnT<own::CUmodule>, ::CUmodule>);
static_assert(std::is_same_v<OwnT<own::CUfunction>, ::CUfunction>);
static_assert(std::is_same_v<OwnT<own::CUlibrary>, ::CUlibrary>);
static_assert(std::is_same_v<OwnT<own::CUkernel>, ::CUkernel>);
static_assert(std::is_same_v<OwnT<own::CUcontext>, ::CUcontext>);
static_assert(std::is_same_v<OwnT<own::CUevent>, ::CUevent>);
static_assert(std::is_same_v<OwnT<own::cudaEvent_t>, ::cudaEvent_t>);
static_assert(std::is_same_v<OwnT<own::cudaKernel_t>, ::cudaKernel_t>);
static_assert(own::cudaMemcpyHostToHost == ::cudaMemcpyHostToHost &&
              own::cudaMemcpyHostToDevice == ::cudaMemcpyHostToDevice &&
              own::cudaMemcpyDeviceToHost == ::cudaMemcpyDeviceToHost &&
              own::cudaMemcpyDeviceToDevice == ::cudaMemcpyDeviceToDevice &&
              own::cudaMemcpyDefault == ::cudaMemcpyDefault);
static_assert(own::kCtCudaApiVersion <= CUDA_VERSION, "declarations newer than the toolkit");

// ---- enums: size, underlying type, every value declared ------------------------------------------
#define CT_ENUM_TYPE(name)                                                            \
  static_assert(sizeof(own::name) == sizeof(::name));                                 \
  static_assert(std::is_same_v<std::underlying_type_t<own::name>,                     \
                               std::underlying_type_t<::name>>);
CT_ENUM_TYPE(CUresult)
CT_ENUM_TYPE(cudaError_t)
CT_ENUM_TYPE(CUdevice_attribute)
CT_ENUM_TYPE(cudaDeviceAttr)
CT_ENUM_TYPE(CUmemPool_attribute)
CT_ENUM_TYPE(CUdriverProcAddress_flags)
CT_ENUM_TYPE(CUdriverProcAddressQueryResult)
CT_ENUM_TYPE(CUjit_option)
CT_ENUM_TYPE(CUlibraryOption)
CT_ENUM_TYPE(CUmemLocationType)
CT_ENUM_TYPE(CUmemAllocationType)
CT_ENUM_TYPE(CUmemAllocationHandleType)
#undef CT_ENUM_TYPE

#define CT_VALUE(v) static_assert(static_cast<long long>(own::v) == static_cast<long long>(::v), #v);
CT_VALUE(CUDA_SUCCESS)
CT_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
CT_VALUE(CUDA_ERROR_NO_BINARY_FOR_GPU)
CT_VALUE(CUDA_ERROR_INVALID_HANDLE)
CT_VALUE(CUDA_ERROR_NOT_FOUND)
CT_VALUE(CUDA_ERROR_UNKNOWN)
CT_VALUE(cudaSuccess)
CT_VALUE(cudaErrorMemoryAllocation)
CT_VALUE(cudaErrorInvalidDeviceFunction)
CT_VALUE(cudaErrorSymbolNotFound)
CT_VALUE(cudaErrorNoKernelImageForDevice)
CT_VALUE(cudaErrorUnknown)
CT_VALUE(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
CT_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
CT_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
CT_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
CT_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
CT_VALUE(cudaDevAttrPciBusId)
CT_VALUE(cudaDevAttrPciDeviceId)
CT_VALUE(cudaDevAttrPciDomainId)
CT_VALUE(cudaDevAttrComputeCapabilityMajor)
CT_VALUE(cudaDevAttrComputeCapabilityMinor)
CT_VALUE(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
CT_VALUE(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
CT_VALUE(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
CT_VALUE(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
CT_VALUE(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
CT_VALUE(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
CT_VALUE(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
CT_VALUE(CU_MEMPOOL_ATTR_USED_MEM_HIGH)
CT_VALUE(CU_GET_PROC_ADDRESS_DEFAULT)
CT_VALUE(CU_GET_PROC_ADDRESS_LEGACY_STREAM)
CT_VALUE(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
CT_VALUE(CU_GET_PROC_ADDRESS_SUCCESS)
CT_VALUE(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
CT_VALUE(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
CT_VALUE(CU_JIT_MAX_REGISTERS)
CT_VALUE(CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE)
CT_VALUE(CU_MEM_LOCATION_TYPE_INVALID)
CT_VALUE(CU_MEM_LOCATION_TYPE_DEVICE)
CT_VALUE(CU_MEM_ALLOCATION_TYPE_INVALID)
CT_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED)
CT_VALUE(CU_MEM_HANDLE_TYPE_NONE)
#undef CT_VALUE

// ---- struct layouts ---------------------------------------------------------------------------------
#define CT_SIZE(T) \
  static_assert(sizeof(own::T) == sizeof(::T) && alignof(own::T) == alignof(::T), #T);
#define CT_FIELD(T, f) static_assert(offsetof(own::T, f) == offsetof(::T, f), #T "." #f);
CT_SIZE(CUmemLocation)
CT_FIELD(CUmemLocation, type)
CT_FIELD(CUmemLocation, id)
CT_SIZE(CUmemPoolProps)
CT_FIELD(CUmemPoolProps, allocType)
CT_FIELD(CUmemPoolProps, handleTypes)
CT_FIELD(CUmemPoolProps, location)
CT_FIELD(CUmemPoolProps, win32SecurityAttributes)
CT_FIELD(CUmemPoolProps, maxSize)
CT_FIELD(CUmemPoolProps, usage)
CT_FIELD(CUmemPoolProps, reserved)
CT_SIZE(CUmemAllocationProp)
CT_FIELD(CUmemAllocationProp, type)
CT_FIELD(CUmemAllocationProp, requestedHandleTypes)
CT_FIELD(CUmemAllocationProp, location)
CT_FIELD(CUmemAllocationProp, win32HandleMetaData)
CT_FIELD(CUmemAllocationProp, allocFlags)
CT_SIZE(dim3)
CT_FIELD(dim3, x)
CT_FIELD(dim3, y)
CT_FIELD(dim3, z)
CT_SIZE(cudaLaunchConfig_t)
CT_FIELD(cudaLaunchConfig_t, gridDim)
CT_FIELD(cudaLaunchConfig_t, blockDim)
CT_FIELD(cudaLaunchConfig_t, dynamicSmemBytes)
CT_FIELD(cudaLaunchConfig_t, stream)
CT_FIELD(cudaLaunchConfig_t, attrs)
CT_FIELD(cudaLaunchConfig_t, numAttrs)
CT_SIZE(CUlaunchConfig)
CT_FIELD(CUlaunchConfig, gridDimX)
CT_FIELD(CUlaunchConfig, gridDimY)
CT_FIELD(CUlaunchConfig, gridDimZ)
CT_FIELD(CUlaunchConfig, blockDimX)
CT_FIELD(CUlaunchConfig, blockDimY)
CT_FIELD(CUlaunchConfig, blockDimZ)
CT_FIELD(CUlaunchConfig, sharedMemBytes)
CT_FIELD(CUlaunchConfig, hStream)
CT_FIELD(CUlaunchConfig, attrs)
CT_FIELD(CUlaunchConfig, numAttrs)
#undef CT_SIZE
#undef CT_FIELD

// ---- entry points: identical signatures ---------------------------------------------------------
#define CT_SIGNATURE(name)                                                         \
  static_assert(std::is_same_v<OwnT<std::remove_pointer_t<decltype(&own::name)>>, \
                               std::remove_pointer_t<decltype(&::name)>>,         \
                #name " differs from the toolkit's declaration");
CT_SIGNATURE(cudaMalloc)
CT_SIGNATURE(cudaFree)
CT_SIGNATURE(cudaMallocAsync)
CT_SIGNATURE(cudaFreeAsync)
CT_SIGNATURE(cudaMallocFromPoolAsync)
CT_SIGNATURE(cudaMallocManaged)
CT_SIGNATURE(cudaMallocPitch)
CT_SIGNATURE(cudaMallocHost)
CT_SIGNATURE(cudaHostAlloc)
CT_SIGNATURE(cudaFreeHost)
CT_SIGNATURE(cudaMemGetInfo)
CT_SIGNATURE(cudaRuntimeGetVersion)
CT_SIGNATURE(cudaDriverGetVersion)
CT_SIGNATURE(cudaGetDevice)
CT_SIGNATURE(cudaDeviceGetAttribute)
CT_SIGNATURE(cudaLaunchKernel)
CT_SIGNATURE(cudaLaunchKernelExC)
CT_SIGNATURE(cudaLaunchCooperativeKernel)
CT_SIGNATURE(cudaDeviceSynchronize)
CT_SIGNATURE(cudaStreamSynchronize)
CT_SIGNATURE(cudaStreamQuery)
CT_SIGNATURE(cudaEventSynchronize)
CT_SIGNATURE(cudaEventQuery)
CT_SIGNATURE(cudaMemcpy)
CT_SIGNATURE(cudaMemcpyAsync)
CT_SIGNATURE(cudaGetLastError)
CT_SIGNATURE(cudaPeekAtLastError)
CT_SIGNATURE(cuInit)
CT_SIGNATURE(cuDriverGetVersion)
CT_SIGNATURE(cuGetProcAddress_v2)
CT_SIGNATURE(cuCtxGetDevice)
CT_SIGNATURE(cuDeviceGetName)
CT_SIGNATURE(cuDeviceGetAttribute)
CT_SIGNATURE(cuDeviceTotalMem_v2)
CT_SIGNATURE(cuDeviceGetMemPool)
CT_SIGNATURE(cuMemPoolGetAttribute)
CT_SIGNATURE(cuMemAlloc_v2)
CT_SIGNATURE(cuMemFree_v2)
CT_SIGNATURE(cuMemAllocManaged)
CT_SIGNATURE(cuMemAllocPitch_v2)
CT_SIGNATURE(cuMemAllocAsync)
CT_SIGNATURE(cuMemFreeAsync)
CT_SIGNATURE(cuMemAllocFromPoolAsync)
CT_SIGNATURE(cuMemPoolCreate)
CT_SIGNATURE(cuMemPoolDestroy)
CT_SIGNATURE(cuMemPoolTrimTo)
CT_SIGNATURE(cuMemCreate)
CT_SIGNATURE(cuMemRelease)
CT_SIGNATURE(cuMemMap)
CT_SIGNATURE(cuMemUnmap)
CT_SIGNATURE(cuMemAddressReserve)
CT_SIGNATURE(cuMemAddressFree)
CT_SIGNATURE(cuMemGetInfo_v2)
CT_SIGNATURE(cuMemAllocHost_v2)
CT_SIGNATURE(cuMemHostAlloc)
CT_SIGNATURE(cuMemFreeHost)
CT_SIGNATURE(cuModuleLoad)
CT_SIGNATURE(cuModuleLoadData)
CT_SIGNATURE(cuModuleLoadDataEx)
CT_SIGNATURE(cuModuleLoadFatBinary)
CT_SIGNATURE(cuLibraryLoadData)
CT_SIGNATURE(cuLibraryLoadFromFile)
CT_SIGNATURE(cuModuleGetFunction)
CT_SIGNATURE(cuLibraryGetKernel)
CT_SIGNATURE(cuFuncGetName)
CT_SIGNATURE(cuLaunchKernel)
CT_SIGNATURE(cuLaunchKernelEx)
CT_SIGNATURE(cuLaunchCooperativeKernel)
CT_SIGNATURE(cuKernelGetFunction)
CT_SIGNATURE(cuCtxSynchronize)
CT_SIGNATURE(cuCtxSynchronize_v2)
CT_SIGNATURE(cuStreamSynchronize)
CT_SIGNATURE(cuStreamQuery)
CT_SIGNATURE(cuEventSynchronize)
CT_SIGNATURE(cuEventQuery)
CT_SIGNATURE(cuMemcpy)
CT_SIGNATURE(cuMemcpyAsync)
CT_SIGNATURE(cuMemcpyHtoD_v2)
CT_SIGNATURE(cuMemcpyDtoH_v2)
CT_SIGNATURE(cuMemcpyDtoD_v2)
CT_SIGNATURE(cuMemcpyHtoDAsync_v2)
CT_SIGNATURE(cuMemcpyDtoHAsync_v2)

// Variants the public headers leave out (the _ptsz entry points, cuGetProcAddress v1)
// have the signature of their base entry point, as the driver's own PFN typedefs say.
#define CT_VARIANT(variant, base)                                              \
  static_assert(std::is_same_v<decltype(&own::variant), decltype(&own::base)>, \
                #variant " differs from " #base);
CT_VARIANT(cudaMallocAsync_ptsz, cudaMallocAsync)
CT_VARIANT(cudaFreeAsync_ptsz, cudaFreeAsync)
CT_VARIANT(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync)
CT_VARIANT(cudaLaunchKernel_ptsz, cudaLaunchKernel)
CT_VARIANT(cudaLaunchKernelExC_ptsz, cudaLaunchKernelExC)
CT_VARIANT(cudaLaunchCooperativeKernel_ptsz, cudaLaunchCooperativeKernel)
CT_VARIANT(cuMemAllocAsync_ptsz, cuMemAllocAsync)
CT_VARIANT(cuMemFreeAsync_ptsz, cuMemFreeAsync)
CT_VARIANT(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync)
CT_VARIANT(cuLaunchKernel_ptsz, cuLaunchKernel)
CT_VARIANT(cuLaunchKernelEx_ptsz, cuLaunchKernelEx)
CT_VARIANT(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel)
CT_VARIANT(cudaStreamSynchronize_ptsz, cudaStreamSynchronize)
CT_VARIANT(cudaStreamQuery_ptsz, cudaStreamQuery)
CT_VARIANT(cudaMemcpy_ptds, cudaMemcpy)
CT_VARIANT(cudaMemcpyAsync_ptsz, cudaMemcpyAsync)
CT_VARIANT(__cudaLaunchKernel_ptsz, __cudaLaunchKernel)
#undef CT_VARIANT
#define CT_PFN(name, pfn)                                                         \
  static_assert(std::is_same_v<OwnT<std::remove_pointer_t<decltype(&own::name)>>, \
                               std::remove_pointer_t<::pfn>>,                     \
                #name " differs from " #pfn);
CT_PFN(cuGetProcAddress, PFN_cuGetProcAddress_v11030)
CT_PFN(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz)
CT_PFN(cuLaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz)
CT_PFN(cuLaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz)
CT_PFN(cuLaunchCooperativeKernel_ptsz, PFN_cuLaunchCooperativeKernel_v9000_ptsz)
CT_PFN(cuStreamSynchronize_ptsz, PFN_cuStreamSynchronize_v7000_ptsz)
CT_PFN(cuStreamQuery_ptsz, PFN_cuStreamQuery_v7000_ptsz)
CT_PFN(cuMemcpy_ptds, PFN_cuMemcpy_v7000_ptds)
CT_PFN(cuMemcpyAsync_ptsz, PFN_cuMemcpyAsync_v7000_ptsz)
CT_PFN(cuMemcpyHtoD_v2_ptds, PFN_cuMemcpyHtoD_v7000_ptds)
CT_PFN(cuMemcpyDtoH_v2_ptds, PFN_cuMemcpyDtoH_v7000_ptds)
CT_PFN(cuMemcpyDtoD_v2_ptds, PFN_cuMemcpyDtoD_v7000_ptds)
CT_PFN(cuMemcpyHtoDAsync_v2_ptsz, PFN_cuMemcpyHtoDAsync_v7000_ptsz)
CT_PFN(cuMemcpyDtoHAsync_v2_ptsz, PFN_cuMemcpyDtoHAsync_v7000_ptsz)
CT_PFN(cuCtxSynchronize_v2, PFN_cuCtxSynchronize_v13000)
#undef CT_PFN

// ---- CUPTI (cupti_api.h) ------------------------------------------------------------------------
#define CT_ENUM_TYPE(name)                                                            \
  static_assert(sizeof(own::name) == sizeof(::name));                                 \
  static_assert(std::is_same_v<std::underlying_type_t<own::name>,                     \
                               std::underlying_type_t<::name>>);
CT_ENUM_TYPE(CUptiResult)
CT_ENUM_TYPE(CUpti_ApiCallbackSite)
CT_ENUM_TYPE(CUpti_CallbackDomain)
CT_ENUM_TYPE(CUpti_CallbackIdResource)
CT_ENUM_TYPE(CUpti_driver_api_trace_cbid)
CT_ENUM_TYPE(CUpti_ActivityKind)
CT_ENUM_TYPE(CUpti_ActivityMemoryOperationType)
CT_ENUM_TYPE(CUpti_ActivityMemoryKind)
CT_ENUM_TYPE(CUpti_ActivityFlag)
CT_ENUM_TYPE(CUpti_ActivityMemoryPoolType)
CT_ENUM_TYPE(CUpti_ActivityMemoryPoolOperationType)
#undef CT_ENUM_TYPE
#define CT_VALUE(v) static_assert(static_cast<long long>(own::v) == static_cast<long long>(::v), #v);
CT_VALUE(CUPTI_SUCCESS)
CT_VALUE(CUPTI_ERROR_INVALID_PARAMETER)
CT_VALUE(CUPTI_ERROR_NOT_INITIALIZED)
CT_VALUE(CUPTI_ERROR_MAX_LIMIT_REACHED)
CT_VALUE(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
CT_VALUE(CUPTI_ERROR_UNKNOWN)
CT_VALUE(CUPTI_API_ENTER)
CT_VALUE(CUPTI_API_EXIT)
CT_VALUE(CUPTI_CB_DOMAIN_INVALID)
CT_VALUE(CUPTI_CB_DOMAIN_DRIVER_API)
CT_VALUE(CUPTI_CB_DOMAIN_RUNTIME_API)
CT_VALUE(CUPTI_CB_DOMAIN_RESOURCE)
CT_VALUE(CUPTI_CBID_RESOURCE_INVALID)
CT_VALUE(CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
CT_VALUE(CUPTI_CBID_RESOURCE_MODULE_LOADED)
CT_VALUE(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_INVALID)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync)
CT_VALUE(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync)
CT_VALUE(CUPTI_ACTIVITY_KIND_INVALID)
CT_VALUE(CUPTI_ACTIVITY_KIND_MEMORY2)
CT_VALUE(CUPTI_ACTIVITY_KIND_MEMORY_POOL)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_PINNED)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC)
CT_VALUE(CUPTI_ACTIVITY_FLAG_NONE)
CT_VALUE(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_INVALID)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED)
CT_VALUE(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED)
#undef CT_VALUE

#define CT_SIZE(T) \
  static_assert(sizeof(own::T) == sizeof(::T) && alignof(own::T) == alignof(::T), #T);
#define CT_FIELD(T, f) static_assert(offsetof(own::T, f) == offsetof(::T, f), #T "." #f);
CT_SIZE(CUpti_CallbackData)
CT_FIELD(CUpti_CallbackData, callbackSite)
CT_FIELD(CUpti_CallbackData, functionName)
CT_FIELD(CUpti_CallbackData, functionParams)
CT_FIELD(CUpti_CallbackData, functionReturnValue)
CT_FIELD(CUpti_CallbackData, symbolName)
CT_FIELD(CUpti_CallbackData, context)
CT_FIELD(CUpti_CallbackData, contextUid)
CT_FIELD(CUpti_CallbackData, correlationData)
CT_FIELD(CUpti_CallbackData, correlationId)
CT_SIZE(CUpti_ResourceData)
CT_FIELD(CUpti_ResourceData, context)
CT_FIELD(CUpti_ResourceData, resourceHandle)
CT_FIELD(CUpti_ResourceData, resourceDescriptor)
CT_SIZE(CUpti_SubscriberParams)
CT_FIELD(CUpti_SubscriberParams, structSize)
CT_FIELD(CUpti_SubscriberParams, subscriberName)
CT_FIELD(CUpti_SubscriberParams, oldSubscriberName)
CT_FIELD(CUpti_SubscriberParams, oldSubscriberSize)
CT_SIZE(CUpti_ModuleResourceData)
CT_FIELD(CUpti_ModuleResourceData, moduleId)
CT_FIELD(CUpti_ModuleResourceData, cubinSize)
CT_FIELD(CUpti_ModuleResourceData, pCubin)
CT_SIZE(cuMemAlloc_v2_params)
CT_FIELD(cuMemAlloc_v2_params, dptr)
CT_FIELD(cuMemAlloc_v2_params, bytesize)
CT_SIZE(cuMemFree_v2_params)
CT_FIELD(cuMemFree_v2_params, dptr)
CT_SIZE(CUpti_Activity)
CT_SIZE(CUpti_ActivityMemory4)
CT_FIELD(CUpti_ActivityMemory4, kind)
CT_FIELD(CUpti_ActivityMemory4, memoryOperationType)
CT_FIELD(CUpti_ActivityMemory4, memoryKind)
CT_FIELD(CUpti_ActivityMemory4, correlationId)
CT_FIELD(CUpti_ActivityMemory4, address)
CT_FIELD(CUpti_ActivityMemory4, bytes)
CT_FIELD(CUpti_ActivityMemory4, timestamp)
CT_FIELD(CUpti_ActivityMemory4, PC)
CT_FIELD(CUpti_ActivityMemory4, processId)
CT_FIELD(CUpti_ActivityMemory4, deviceId)
CT_FIELD(CUpti_ActivityMemory4, contextId)
CT_FIELD(CUpti_ActivityMemory4, streamId)
CT_FIELD(CUpti_ActivityMemory4, name)
CT_FIELD(CUpti_ActivityMemory4, isAsync)
CT_FIELD(CUpti_ActivityMemory4, memoryPoolConfig)
CT_FIELD(CUpti_ActivityMemory4, memoryPoolConfig.address)
CT_FIELD(CUpti_ActivityMemory4, memoryPoolConfig.pool)
CT_FIELD(CUpti_ActivityMemory4, memoryPoolConfig.utilizedSize)
CT_FIELD(CUpti_ActivityMemory4, source)
CT_SIZE(CUpti_ActivityMemoryPool3)
CT_FIELD(CUpti_ActivityMemoryPool3, kind)
CT_FIELD(CUpti_ActivityMemoryPool3, memoryPoolOperationType)
CT_FIELD(CUpti_ActivityMemoryPool3, memoryPoolType)
CT_FIELD(CUpti_ActivityMemoryPool3, correlationId)
CT_FIELD(CUpti_ActivityMemoryPool3, processId)
CT_FIELD(CUpti_ActivityMemoryPool3, deviceId)
CT_FIELD(CUpti_ActivityMemoryPool3, minBytesToKeep)
CT_FIELD(CUpti_ActivityMemoryPool3, address)
CT_FIELD(CUpti_ActivityMemoryPool3, size)
CT_FIELD(CUpti_ActivityMemoryPool3, releaseThreshold)
CT_FIELD(CUpti_ActivityMemoryPool3, timestamp)
CT_FIELD(CUpti_ActivityMemoryPool3, utilizedSize)
CT_FIELD(CUpti_ActivityMemoryPool3, isManagedPool)
#undef CT_SIZE
#undef CT_FIELD

CT_SIGNATURE(cuptiSubscribe)
CT_SIGNATURE(cuptiSubscribe_v2)
CT_SIGNATURE(cuptiUnsubscribe)
CT_SIGNATURE(cuptiEnableDomain)
CT_SIGNATURE(cuptiEnableCallback)
CT_SIGNATURE(cuptiActivityRegisterCallbacks)
CT_SIGNATURE(cuptiActivityEnable)
CT_SIGNATURE(cuptiActivityDisable)
CT_SIGNATURE(cuptiActivityFlushAll)
CT_SIGNATURE(cuptiActivityGetNextRecord)
CT_SIGNATURE(cuptiActivityGetNumDroppedRecords)
static_assert(std::is_same_v<OwnT<std::remove_pointer_t<own::CUpti_CallbackFunc>>,
                             std::remove_pointer_t<::CUpti_CallbackFunc>>);

}  // namespace

int main() { return 0; }
