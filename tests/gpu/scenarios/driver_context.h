/* Shared by the GPU scenario programs that drive the simulated libcuda.so.1 directly: the
 * primary context of device 0 made current, and a module loaded from a minimal CUDA ELF cubin.
 * Include after <cuda.h> and simcuda_test.h. */
#ifndef GPU_SCENARIOS_DRIVER_CONTEXT_H
#define GPU_SCENARIOS_DRIVER_CONTEXT_H

static inline void scenario_driver_context(void) {
  CUdevice dev;
  CUcontext ctx;
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

/* Loads a 64-byte CUDA ELF header as a module: 64-bit, EM_CUDA (190), ABI version 8, SM 80 in
 * flags bits 8..15 (what CUPTI's RESOURCE callback hands over as the module's cubin). */
static inline CUmodule scenario_load_sm80_cubin(void) {
  static unsigned char cubin[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 8};
  cubin[0x12] = 190;
  cubin[0x31] = 80;
  CUmodule mod;
  SIM_CHECK_EQ(cuModuleLoadData(&mod, cubin), CUDA_SUCCESS);
  return mod;
}

#endif
