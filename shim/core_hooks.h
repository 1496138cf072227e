// Real-function holders for the core hooks (process lifecycle, signals, environment).
#pragma once

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <unistd.h>

#include "real.h"

// Not declared by any system header.
extern "C" int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                 void (*init)(void), void (*fini)(void),
                                 void (*rtld_fini)(void), void* stack_end);

#include "hooks.def"

namespace colabtrace::shim {
COLABTRACE_DEFINE_REAL_FNS(COLABTRACE_CORE_HOOKS)
}  // namespace colabtrace::shim
