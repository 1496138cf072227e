/* The rest of libnccl.so.2's exports: the device-API host calls of NCCL 2.28 (teams, device
 * communicators, barrier and all-to-all requirements; declared in nccl_device.h, which the
 * simulator does not model) and the debug reset. They exist so that the simulator's dynamic
 * symbol table is the real library's (test SimNccl.ExportsMatchRealLibrary); each device-API one
 * ends the process with a message if called, since its types are not modelled. Same binding as
 * the real library: pnccl<Name> global, nccl<Name> a weak alias. */
#include <stdio.h>
#include <stdlib.h>

#define NOT_SIMULATED(name)                                                                  \
  __attribute__((visibility("default"), noreturn)) void p##name(void) {                      \
    fprintf(stderr, "simnccl: %s (NCCL's device API) is not simulated\n", #name);             \
    abort();                                                                                 \
  }                                                                                          \
  extern __typeof__(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));
NOT_SIMULATED(ncclDevCommCreate)
NOT_SIMULATED(ncclDevCommDestroy)
NOT_SIMULATED(ncclGinBarrierCreateRequirement)
NOT_SIMULATED(ncclLLA2ACalcSlots)
NOT_SIMULATED(ncclLLA2ACreateRequirement)
NOT_SIMULATED(ncclLsaBarrierCreateRequirement)
NOT_SIMULATED(ncclTeamLsa)
NOT_SIMULATED(ncclTeamRail)
NOT_SIMULATED(ncclTeamRankToLsa)
NOT_SIMULATED(ncclTeamRankToWorld)
NOT_SIMULATED(ncclTeamWorld)

/* NCCL_DEBUG is read once; this makes the next call read it again. Nothing here reads it. */
__attribute__((visibility("default"))) void ncclResetDebugInitInternal(void) {}
__attribute__((visibility("default"))) void pncclResetDebugInit(void) { ncclResetDebugInitInternal(); }
extern __typeof__(pncclResetDebugInit) ncclResetDebugInit
    __attribute__((weak, alias("pncclResetDebugInit"), visibility("default")));
