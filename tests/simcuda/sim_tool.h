/* The simulated driver's tool interface: what the real driver tells CUPTI, the simulated driver
 * tells the one tool attached with simcuda_debug_tool_attach (the simulated libcupti.so, sim_cupti.c).
 * Events are delivered on the thread that made the call, after it succeeded, with the driver's
 * lock held: a tool must not call back into the driver. */
#ifndef SIMCUDA_SIM_TOOL_H
#define SIMCUDA_SIM_TOOL_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  SIM_TOOL_API_EXIT = 1,         /* a driver API call returned: cbid, params, result */
  SIM_TOOL_CONTEXT_CREATED = 2,  /* ctx, device */
  SIM_TOOL_MODULE_LOADED = 3,    /* module_id, image, image_size */
  SIM_TOOL_MODULE_UNLOADING = 4, /* module_id, image, image_size */
  SIM_TOOL_MEMORY = 5,           /* op (1 allocation, 2 release), addr, bytes, device, pool, memory_kind */
  SIM_TOOL_POOL = 6,             /* op (1 created, 2 destroyed, 3 trimmed), pool, bytes, device */
} sim_tool_event;

typedef struct {
  sim_tool_event event;
  uint32_t cbid;        /* CUPTI driver callback id (cupti_driver_cbid.h) */
  const void *params;   /* the call's parameter block (generated_cuda_meta.h layout) */
  int result;           /* CUresult */
  void *ctx;            /* CUcontext */
  int device;
  int op;
  uint64_t addr, bytes, pool;
  uint32_t module_id;
  const void *image;
  size_t image_size;
  int memory_kind;      /* SIM_TOOL_MEMORY: CUpti_ActivityMemoryKind, 0 for device memory */
} sim_tool_data;

/* SIM_TOOL_MEMORY's memory_kind for a module's statics (CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC):
 * like the real driver, each module load reports the memory of its __device__ variables, here
 * SIM_MODULE_STATIC_BYTES at SIM_MODULE_STATIC_BASE + 4096 * module id (the simulated driver
 * keeps no module memory in its heap, so these addresses are never a program's). */
#define SIM_TOOL_KIND_DEVICE_STATIC 6
#define SIM_MODULE_STATIC_BASE 0x5e0000000000ull
#define SIM_MODULE_STATIC_BYTES 512

typedef void (*sim_tool_fn)(const sim_tool_data *);

/* The stream engine interface (sim-only export simcuda_debug_stream_engine_attach): work that an
 * outside engine (the simulated NCCL, tests/simnccl) put on streams. busy(stream, any) says
 * whether that work is still running on `stream` (NULL: the default streams; any != 0: on any
 * stream). A stream or context synchronisation waits, after releasing the driver's lock, until it
 * answers 0; cuStreamQuery answers CUDA_ERROR_NOT_READY while it answers 1. The engine must not
 * call the driver from busy. */
typedef int (*sim_engine_busy_fn)(void *stream, int any);

#endif
