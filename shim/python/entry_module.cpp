// The Python start-up hook's per-collective entry points as built-in functions: a module
// made at run time with CPython's own C API, so that a call into the shim costs what a
// call of a built-in costs (METH_FASTCALL: the arguments arrive as an array of objects)
// rather than ctypes' conversion of each argument (about 0.6-1 us a call on the VM).
//
// The shim never links libpython and never loads a library: it looks the C API up among
// the process's dynamic symbols (RealDlsym(RTLD_DEFAULT, ...)) when the hook first asks,
// which is when the interpreter runs and the caller holds the GIL. Only calls of the
// stable ABI, each exported by every CPython from 3.8 to 3.13
// (tests/python/test_entry_module.py checks each against each build): PyModule_New,
// PyModule_AddFunctions, PyLong_AsLongLong, PyLong_FromLong, PyBytes_AsString,
// PyErr_Occurred, PyErr_SetString and PyExc_TypeError. The module is made for CPython
// 3.8 and later (METH_FASTCALL with this signature is 3.7's, in the stable ABI since
// 3.10; 3.8 is the oldest version the hook is tested with); otherwise, or when a symbol
// is missing, the entry point gives NULL and the hook calls the shim through ctypes.
//
//   void* colabtrace_python_module(void)   (python_hooks.def) the address of the shim's
//        own reference to the module (a PyObject*, held for the process's life, a fork
//        child included), or NULL. Called through ctypes with FUNCFLAG_PYTHONAPI, so the
//        GIL stays held; the hook reads the module with py_object.from_address(), which
//        takes a reference of its own. (Not a py_object result: ctypes takes that
//        reference over, and crashes on a NULL one with no Python error set.)
//
// Its functions take positional Python ints (64-bit values whole) and return an int:
//   enter(op_group, seq, count, dtype, where)   the thread enters a collective
//                                               (BeginCollective, collectives.h)
//   end(status, seqs)                           it returned (EndCollective)
//   inside()                                    1 while the thread is inside a
//                                               collective (InsideCollective), else 0
//   intern(text)                                the String id of bytes text
//                                               (InternForHook)
// A wrong argument raises TypeError (or OverflowError) and records nothing.
#include <dlfcn.h>
#include <sys/types.h>

#include <cstdint>

#include "collectives.h"
#include "python_stack.h"
#include "real.h"

namespace colabtrace::shim::python {
namespace {

using PyObj = void;  // PyObject, never looked into

// PyMethodDef, as every CPython 3 lays it out.
struct MethodDef {
  const char* name;
  void* meth;
  int flags;
  const char* doc;
};
constexpr int kMethFastcall = 0x0080;  // METH_FASTCALL
constexpr uint32_t kOldestVersion = 0x0308;

struct CApi {
  PyObj* (*module_new)(const char*);
  int (*module_add_functions)(PyObj*, MethodDef*);
  long long (*long_as_long_long)(PyObj*);
  PyObj* (*long_from_long)(long);
  char* (*bytes_as_string)(PyObj*);
  PyObj* (*err_occurred)();
  void (*err_set_string)(PyObj*, const char*);
  PyObj** exc_type_error;  // &PyExc_TypeError
};
CApi g_api;
PyObj* g_module = nullptr;

template <class T> bool Resolve(T* out, const char* name) {
  void* p = RealDlsym()(RTLD_DEFAULT, name);
  if (p == nullptr) dlerror();  // leave no error behind for the program to read
  *out = reinterpret_cast<T>(p);
  return p != nullptr;
}

bool ResolveCApi(CApi* a) {
  return Resolve(&a->module_new, "PyModule_New") && Resolve(&a->module_add_functions, "PyModule_AddFunctions") &&
         Resolve(&a->long_as_long_long, "PyLong_AsLongLong") && Resolve(&a->long_from_long, "PyLong_FromLong") &&
         Resolve(&a->bytes_as_string, "PyBytes_AsString") && Resolve(&a->err_occurred, "PyErr_Occurred") &&
         Resolve(&a->err_set_string, "PyErr_SetString") && Resolve(&a->exc_type_error, "PyExc_TypeError");
}

// args[0..n) as 64-bit values into out; false (a Python error set) when the count is not
// n or one is not an int that fits.
bool Ints(PyObj* const* args, ssize_t nargs, ssize_t n, uint64_t* out) {
  if (nargs != n) {
    g_api.err_set_string(*g_api.exc_type_error, "colabtrace: wrong number of arguments");
    return false;
  }
  for (ssize_t i = 0; i < n; ++i) {
    const long long v = g_api.long_as_long_long(args[i]);
    if (v == -1 && g_api.err_occurred() != nullptr) return false;
    out[i] = static_cast<uint64_t>(v);
  }
  return true;
}

PyObj* Enter(PyObj*, PyObj* const* args, ssize_t nargs) {
  uint64_t a[5];
  if (!Ints(args, nargs, 5, a)) return nullptr;
  BeginCollective(static_cast<uint32_t>(a[0]), a[1], a[2], a[3], a[4]);
  return g_api.long_from_long(0);
}

PyObj* End(PyObj*, PyObj* const* args, ssize_t nargs) {
  uint64_t a[2];
  if (!Ints(args, nargs, 2, a)) return nullptr;
  EndCollective(static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]));
  return g_api.long_from_long(0);
}

PyObj* Inside(PyObj*, PyObj* const*, ssize_t nargs) {
  if (nargs != 0) {
    g_api.err_set_string(*g_api.exc_type_error, "colabtrace: inside() takes no arguments");
    return nullptr;
  }
  return g_api.long_from_long(InsideCollective() ? 1 : 0);
}

PyObj* Intern(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (nargs != 1) {
    g_api.err_set_string(*g_api.exc_type_error, "colabtrace: intern() takes one bytes argument");
    return nullptr;
  }
  const char* s = g_api.bytes_as_string(args[0]);  // TypeError set when not bytes
  if (s == nullptr) return nullptr;
  return g_api.long_from_long(InternForHook(s));
}

// CPython keeps pointers to these entries in the functions it makes: static storage.
MethodDef g_methods[] = {
    {"enter", reinterpret_cast<void*>(&Enter), kMethFastcall, nullptr},
    {"end", reinterpret_cast<void*>(&End), kMethFastcall, nullptr},
    {"inside", reinterpret_cast<void*>(&Inside), kMethFastcall, nullptr},
    {"intern", reinterpret_cast<void*>(&Intern), kMethFastcall, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyObj* MakeModule() {
  const uint32_t version = PythonVersion();
  if (version < kOldestVersion || version >= 0x0400) return nullptr;
  CApi api;
  if (!ResolveCApi(&api)) return nullptr;
  g_api = api;
  PyObj* module = g_api.module_new("colabtrace_shim");
  if (module == nullptr) return nullptr;
  if (g_api.module_add_functions(module, g_methods) != 0) return nullptr;  // the module leaks: once
  return module;
}

}  // namespace
}  // namespace colabtrace::shim::python

#pragma GCC visibility push(default)
extern "C" {

void* colabtrace_python_module() {
  using colabtrace::shim::python::g_module;
  // The caller holds the GIL: no two threads get here at once.
  if (g_module == nullptr) g_module = colabtrace::shim::python::MakeModule();
  return g_module != nullptr ? static_cast<void*>(&g_module) : nullptr;
}

}  // extern "C"
#pragma GCC visibility pop
