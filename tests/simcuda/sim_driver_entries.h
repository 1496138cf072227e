/* The one table of the simulated driver's entry points (X-macro, included by sim_driver_core.c).
 *
 *   E(base name, first CUDA version of this variant, exported symbol, per-thread-stream variant?)
 *
 * The same table
 *   - makes each listed symbol visible to dlsym (the library is built with -fvisibility=hidden;
 *     nothing else is exported except the sim-only simcuda_debug_* helpers), and
 *   - drives cuGetProcAddress/_v2: for a base name it returns the variant with the highest version
 *     <= the requested cudaVersion; a per-thread (_ptsz/_ptds) variant is only eligible when the
 *     caller passes CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, and then wins over a legacy
 *     variant of the same or lower version.
 * Versions are those of the PFN_<name>_v<version> typedefs in cudaTypedefs.h (CUDA 13.0).
 * Legacy variants (version 2000/4000/7000, 32-bit sizes) are exported like the real driver does.
 */
/* clang-format off */
/* --- initialization, version, errors, entry points ------------------------------------ */
E(cuInit,                        2000,  cuInit,                        0)
E(cuDriverGetVersion,            2020,  cuDriverGetVersion,            0)
E(cuGetErrorString,              6000,  cuGetErrorString,              0)
E(cuGetErrorName,                6000,  cuGetErrorName,                0)
E(cuGetProcAddress,              11030, cuGetProcAddress,              0)
E(cuGetProcAddress,              12000, cuGetProcAddress_v2,           0)
E(cuGetExportTable,              3000,  cuGetExportTable,              0)
/* --- devices -------------------------------------------------------------------------- */
E(cuDeviceGet,                   2000,  cuDeviceGet,                   0)
E(cuDeviceGetCount,              2000,  cuDeviceGetCount,              0)
E(cuDeviceGetName,               2000,  cuDeviceGetName,               0)
E(cuDeviceGetAttribute,          2000,  cuDeviceGetAttribute,          0)
E(cuDeviceTotalMem,              2000,  cuDeviceTotalMem,              0)
E(cuDeviceTotalMem,              3020,  cuDeviceTotalMem_v2,           0)
E(cuDeviceGetDefaultMemPool,     11020, cuDeviceGetDefaultMemPool,     0)
E(cuDeviceGetMemPool,            11020, cuDeviceGetMemPool,            0)
E(cuDeviceSetMemPool,            11020, cuDeviceSetMemPool,            0)
/* --- contexts ------------------------------------------------------------------------- */
E(cuDevicePrimaryCtxRetain,      7000,  cuDevicePrimaryCtxRetain,      0)
E(cuDevicePrimaryCtxRelease,     7000,  cuDevicePrimaryCtxRelease,     0)
E(cuDevicePrimaryCtxRelease,     11000, cuDevicePrimaryCtxRelease_v2,  0)
E(cuDevicePrimaryCtxReset,       7000,  cuDevicePrimaryCtxReset,       0)
E(cuDevicePrimaryCtxReset,       11000, cuDevicePrimaryCtxReset_v2,    0)
E(cuDevicePrimaryCtxGetState,    7000,  cuDevicePrimaryCtxGetState,    0)
E(cuCtxCreate,                   2000,  cuCtxCreate,                   0)
E(cuCtxCreate,                   3020,  cuCtxCreate_v2,                0)
E(cuCtxCreate,                   11040, cuCtxCreate_v3,                0)
E(cuCtxCreate,                   12050, cuCtxCreate_v4,                0)
E(cuCtxDestroy,                  2000,  cuCtxDestroy,                  0)
E(cuCtxDestroy,                  4000,  cuCtxDestroy_v2,               0)
E(cuCtxGetCurrent,               4000,  cuCtxGetCurrent,               0)
E(cuCtxSetCurrent,               4000,  cuCtxSetCurrent,               0)
E(cuCtxGetDevice,                2000,  cuCtxGetDevice,                0)
E(cuCtxGetDevice,                13000, cuCtxGetDevice_v2,             0)
E(cuCtxSynchronize,              2000,  cuCtxSynchronize,              0)
E(cuCtxSynchronize,              13000, cuCtxSynchronize_v2,           0)
/* --- streams -------------------------------------------------------------------------- */
E(cuStreamCreate,                2000,  cuStreamCreate,                0)
E(cuStreamSynchronize,           2000,  cuStreamSynchronize,           0)
E(cuStreamSynchronize,           7000,  cuStreamSynchronize_ptsz,      1)
E(cuStreamDestroy,               2000,  cuStreamDestroy,               0)
E(cuStreamDestroy,               4000,  cuStreamDestroy_v2,            0)
/* --- plain, pitched, managed and host memory ------------------------------------------ */
E(cuMemGetInfo,                  2000,  cuMemGetInfo,                  0)
E(cuMemGetInfo,                  3020,  cuMemGetInfo_v2,               0)
E(cuMemAlloc,                    2000,  cuMemAlloc,                    0)
E(cuMemAlloc,                    3020,  cuMemAlloc_v2,                 0)
E(cuMemAllocPitch,               2000,  cuMemAllocPitch,               0)
E(cuMemAllocPitch,               3020,  cuMemAllocPitch_v2,            0)
E(cuMemFree,                     2000,  cuMemFree,                     0)
E(cuMemFree,                     3020,  cuMemFree_v2,                  0)
E(cuMemGetAddressRange,          3020,  cuMemGetAddressRange_v2,       0)
E(cuMemAllocManaged,             6000,  cuMemAllocManaged,             0)
E(cuMemAllocHost,                2000,  cuMemAllocHost,                0)
E(cuMemAllocHost,                3020,  cuMemAllocHost_v2,             0)
E(cuMemHostAlloc,                2020,  cuMemHostAlloc,                0)
E(cuMemFreeHost,                 2000,  cuMemFreeHost,                 0)
/* --- copies and sets (validated, no data moves to or from device memory) --------------- */
E(cuMemcpy,                      4000,  cuMemcpy,                      0)
E(cuMemcpy,                      7000,  cuMemcpy_ptds,                 1)
E(cuMemcpyAsync,                 4000,  cuMemcpyAsync,                 0)
E(cuMemcpyAsync,                 7000,  cuMemcpyAsync_ptsz,            1)
E(cuMemcpyHtoD,                  3020,  cuMemcpyHtoD_v2,               0)
E(cuMemcpyHtoD,                  7000,  cuMemcpyHtoD_v2_ptds,          1)
E(cuMemcpyDtoH,                  3020,  cuMemcpyDtoH_v2,               0)
E(cuMemcpyDtoH,                  7000,  cuMemcpyDtoH_v2_ptds,          1)
E(cuMemcpyDtoD,                  3020,  cuMemcpyDtoD_v2,               0)
E(cuMemcpyDtoD,                  7000,  cuMemcpyDtoD_v2_ptds,          1)
E(cuMemsetD8,                    3020,  cuMemsetD8_v2,                 0)
E(cuMemsetD8,                    7000,  cuMemsetD8_v2_ptds,            1)
E(cuMemsetD32,                   3020,  cuMemsetD32_v2,                0)
E(cuMemsetD32,                   7000,  cuMemsetD32_v2_ptds,           1)
/* --- stream-ordered allocator --------------------------------------------------------- */
E(cuMemAllocAsync,               11020, cuMemAllocAsync,               0)
E(cuMemAllocAsync,               11020, cuMemAllocAsync_ptsz,          1)
E(cuMemFreeAsync,                11020, cuMemFreeAsync,                0)
E(cuMemFreeAsync,                11020, cuMemFreeAsync_ptsz,           1)
E(cuMemAllocFromPoolAsync,       11020, cuMemAllocFromPoolAsync,       0)
E(cuMemAllocFromPoolAsync,       11020, cuMemAllocFromPoolAsync_ptsz,  1)
E(cuMemPoolCreate,               11020, cuMemPoolCreate,               0)
E(cuMemPoolDestroy,              11020, cuMemPoolDestroy,              0)
E(cuMemPoolTrimTo,               11020, cuMemPoolTrimTo,               0)
E(cuMemPoolSetAttribute,         11020, cuMemPoolSetAttribute,         0)
E(cuMemPoolGetAttribute,         11020, cuMemPoolGetAttribute,         0)
/* --- virtual memory management -------------------------------------------------------- */
E(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity, 0)
E(cuMemCreate,                   10020, cuMemCreate,                   0)
E(cuMemRelease,                  10020, cuMemRelease,                  0)
E(cuMemAddressReserve,           10020, cuMemAddressReserve,           0)
E(cuMemAddressFree,              10020, cuMemAddressFree,              0)
E(cuMemMap,                      10020, cuMemMap,                      0)
E(cuMemUnmap,                    10020, cuMemUnmap,                    0)
E(cuMemSetAccess,                10020, cuMemSetAccess,                0)
/* --- modules, libraries, launches ----------------------------------------------------- */
E(cuModuleLoad,                  2000,  cuModuleLoad,                  0)
E(cuModuleLoadData,              2000,  cuModuleLoadData,              0)
E(cuModuleLoadDataEx,            2010,  cuModuleLoadDataEx,            0)
E(cuModuleUnload,                2000,  cuModuleUnload,                0)
E(cuModuleGetFunction,           2000,  cuModuleGetFunction,           0)
E(cuLibraryLoadData,             12000, cuLibraryLoadData,             0)
E(cuLibraryUnload,               12000, cuLibraryUnload,               0)
E(cuLaunchKernel,                4000,  cuLaunchKernel,                0)
E(cuLaunchKernel,                7000,  cuLaunchKernel_ptsz,           1)
/* clang-format on */
