// The Python start-up hook's per-collective entry points as built-in functions: a module
// made at run time with CPython's own C API, so that a call into the shim costs what a
// call of a built-in costs (METH_FASTCALL: the arguments arrive as an array of objects)
// rather than ctypes' conversion of each argument (about 0.6-1 us a call on the VM).
//
// The shim never links libpython and never loads a library: it looks the C API up among
// the process's dynamic symbols (RealDlsym(RTLD_DEFAULT, ...)) when the hook first asks,
// which is when the interpreter runs and the caller holds the GIL. Only calls of the
// stable ABI, each exported by every CPython from 3.8 to 3.13
// (tests/dist/test_entry.py makes the module with each pyenv build): PyModule_New,
// PyModule_AddFunctions, PyLong_AsLongLong, PyLong_FromLong, PyBytes_AsString,
// PyErr_Occurred, PyErr_SetString and PyExc_TypeError; for wrap() also
// PyCFunction_NewEx, PyTuple_Size, PyTuple_GetItem, PyDict_GetItem, PyObject_Call,
// PyObject_CallObject, PyObject_CallMethodObjArgs, PyObject_GetAttr, PyObject_IsTrue,
// Py_IncRef, Py_DecRef, PyUnicode_InternFromString, PyErr_Clear and _Py_NoneStruct
// (Py_None); and PyInstanceMethod_New (exported by every CPython 3, outside the stable
// ABI). The module is made for CPython
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
//
// Since 2026-11-29 the whole per-collective path of a collective that issues exactly one
// collective (all_reduce, broadcast, barrier, send...) can run here too, so that a call
// costs no Python-level wrapper (tools/bench --suite dist):
//   wrap(real, slow, op, group_at, async_at, is_async)
//        a built-in function (METH_VARARGS | METH_KEYWORDS) that does what the hook's
//        Python wrapper `slow` does for the common case: the group from its position
//        (or `group=`), the first tensor's numel() and dtype, the group's sequence
//        number (its bound _get_sequence_number_for_group), the caller's line
//        (CallSiteId, python_stack.h), BeginCollective, the real call, EndCollective
//        (raised, issued where async_op is true or is_async, else returned). A case it
//        does not know is passed to `slow` whole: a group or dtype the hook has not told
//        it of, no positional tensor, an argument without numel(), a sequence counter
//        that raises, no readable frame. Inside a collective, or when nothing is
//        recorded, it calls `real` alone. None when frames cannot be read here, or past
//        kMaxWrappers.
//   wrap_wait(real, slow)
//        Work.wait as a method (PyInstanceMethod_New of a built-in function): inside a
//        collective (the wait torch's blocking collectives call themselves) or when
//        nothing is recorded, torch's own `real`; otherwise the hook's `slow`, which
//        records the wait as a collective of its own. None past kMaxWrappers.
//   group(group, id, base, seq_method, is_default)   the hook's entry for a process group
//        (base -1: torch has no sequence number for it); is_default: also the group of
//        a call that names none
//   forget()                                         every group (destroy_process_group)
//   dtype(dtype, string_id)                          a dtype's name's String id, in this
//                                                    trace (a fork child's trace makes
//                                                    its own: entries carry the generation)
// These hold references to the objects they are given, and run with the GIL held, which
// orders every use of their tables.
#include <dlfcn.h>
#include <sys/types.h>

#include <cstdint>

#include "collectives.h"
#include "colabtrace/format/records.h"
#include "python_stack.h"
#include "real.h"
#include "writer.h"

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
constexpr int kMethVarargs = 0x0001;   // METH_VARARGS
constexpr int kMethKeywords = 0x0002;  // METH_KEYWORDS
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
  // For the wrapper (wrap()): all in the stable ABI of 3.8 to 3.13.
  PyObj* (*cfunction_new_ex)(MethodDef*, PyObj*, PyObj*);
  ssize_t (*tuple_size)(PyObj*);
  PyObj* (*tuple_get_item)(PyObj*, ssize_t);     // borrowed
  PyObj* (*dict_get_item)(PyObj*, PyObj*);       // borrowed, no error set
  PyObj* (*object_call)(PyObj*, PyObj*, PyObj*);
  PyObj* (*call_object)(PyObj*, PyObj*);
  PyObj* (*call_method_obj_args)(PyObj*, PyObj*, ...);
  PyObj* (*get_attr)(PyObj*, PyObj*);
  int (*object_is_true)(PyObj*);
  void (*inc_ref)(PyObj*);
  void (*dec_ref)(PyObj*);
  PyObj* (*intern_from_string)(const char*);
  void (*err_clear)();
  PyObj* (*instance_method_new)(PyObj*);  // not in the stable ABI, exported by 3.0 and later
  PyObj* none;  // &_Py_NoneStruct
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
         Resolve(&a->err_set_string, "PyErr_SetString") && Resolve(&a->exc_type_error, "PyExc_TypeError") &&
         Resolve(&a->cfunction_new_ex, "PyCFunction_NewEx") && Resolve(&a->tuple_size, "PyTuple_Size") &&
         Resolve(&a->tuple_get_item, "PyTuple_GetItem") && Resolve(&a->dict_get_item, "PyDict_GetItem") &&
         Resolve(&a->object_call, "PyObject_Call") && Resolve(&a->call_object, "PyObject_CallObject") &&
         Resolve(&a->call_method_obj_args, "PyObject_CallMethodObjArgs") &&
         Resolve(&a->get_attr, "PyObject_GetAttr") && Resolve(&a->object_is_true, "PyObject_IsTrue") &&
         Resolve(&a->inc_ref, "Py_IncRef") && Resolve(&a->dec_ref, "Py_DecRef") &&
         Resolve(&a->intern_from_string, "PyUnicode_InternFromString") && Resolve(&a->err_clear, "PyErr_Clear") &&
         Resolve(&a->instance_method_new, "PyInstanceMethod_New") &&
         Resolve(&a->none, "_Py_NoneStruct");
}

// False (a TypeError set) unless the call has n arguments.
bool Takes(ssize_t nargs, ssize_t n, const char* message) {
  if (nargs == n) return true;
  g_api.err_set_string(*g_api.exc_type_error, message);
  return false;
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
  if (!Takes(nargs, 0, "colabtrace: inside() takes no arguments")) return nullptr;
  return g_api.long_from_long(InsideCollective() ? 1 : 0);
}

PyObj* Intern(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (!Takes(nargs, 1, "colabtrace: intern() takes one bytes argument")) return nullptr;
  const char* s = g_api.bytes_as_string(args[0]);  // TypeError set when not bytes
  if (s == nullptr) return nullptr;
  return g_api.long_from_long(InternForHook(s));
}

// ---- the wrapper ------------------------------------------------------------------------

// A process group as the hook knows it (_new_entry): its object, id, base sequence number
// (-1: none) and bound sequence counter (nullptr: none). References held.
struct Group {
  PyObj* object;
  PyObj* seq_method;
  int64_t base;
  uint32_t id;
};
constexpr int kMaxGroups = 64;
Group g_groups[kMaxGroups];
int g_group_count = 0;
int g_default_group = -1;  // index into g_groups of the group a call that names none uses

// A dtype's String id in the trace of generation `generation`. References held.
struct Dtype {
  PyObj* object;
  uint64_t id;
  uint32_t generation;
};
constexpr int kMaxDtypes = 32;
Dtype g_dtypes[kMaxDtypes];
int g_dtype_count = 0;

// One wrapped entry point; the built-in function's self is its index (a Python int).
struct Wrapper {
  PyObj* real;
  PyObj* slow;
  uint32_t op;
  int group_at;  // position of `group` among the positional parameters, -1: none
  int async_at;  // position of `async_op`, -1: none
  bool is_async;  // isend, irecv: always issued
  bool wait;      // Work.wait (wrap_wait): real or slow, nothing more
};
constexpr int kMaxWrappers = 32;
Wrapper g_wrappers[kMaxWrappers];
int g_wrapper_count = 0;

PyObj* g_str_group = nullptr;  // interned "group", "async_op", "numel", "dtype"
PyObj* g_str_async_op = nullptr;
PyObj* g_str_numel = nullptr;
PyObj* g_str_dtype = nullptr;

const Group* GroupOf(PyObj* group) {
  if (group == nullptr || group == g_api.none) return g_default_group >= 0 ? &g_groups[g_default_group] : nullptr;
  for (int i = 0; i < g_group_count; ++i) {
    if (g_groups[i].object == group) return &g_groups[i];
  }
  return nullptr;
}

uint64_t DtypeIdOf(PyObj* dtype) {
  for (int i = 0; i < g_dtype_count; ++i) {
    if (g_dtypes[i].object == dtype) return g_dtypes[i].generation == g_generation ? g_dtypes[i].id : 0;
  }
  return 0;
}

// The value of a call's result (a new reference, released here) as an int; false, with
// no Python error left set, for a failed call or a result that is no int that fits.
bool TakeInt(PyObj* result, long long* out) {
  if (result == nullptr) {
    g_api.err_clear();
    return false;
  }
  *out = g_api.long_as_long_long(result);
  g_api.dec_ref(result);
  if (*out == -1 && g_api.err_occurred() != nullptr) {
    g_api.err_clear();
    return false;
  }
  return true;
}

// The fields of the collective args/kwargs make, or false (no Python error left set)
// where the slow path must decide.
bool CollectiveFields(const Wrapper& w, PyObj* args, PyObj* kwargs, uint32_t* op_group, uint64_t* seq,
                      uint64_t* count, uint64_t* dtype) {
  const ssize_t n = g_api.tuple_size(args);
  PyObj* group = w.group_at >= 0 && w.group_at < n ? g_api.tuple_get_item(args, w.group_at) : nullptr;
  if (kwargs != nullptr) {
    if (PyObj* g = g_api.dict_get_item(kwargs, g_str_group); g != nullptr) group = g;
  }
  const Group* e = GroupOf(group);
  if (e == nullptr) return false;
  if (n == 0) {
    if (kwargs != nullptr) return false;  // the tensor may be a keyword argument
    *count = *dtype = 0;
  } else {
    PyObj* tensor = g_api.tuple_get_item(args, 0);
    long long c;
    if (!TakeInt(g_api.call_method_obj_args(tensor, g_str_numel, nullptr), &c)) return false;
    PyObj* dt = g_api.get_attr(tensor, g_str_dtype);
    if (dt == nullptr) {
      g_api.err_clear();
      return false;
    }
    *dtype = DtypeIdOf(dt);
    g_api.dec_ref(dt);
    if (*dtype == 0) return false;
    *count = static_cast<uint64_t>(c);
  }
  *seq = 0;
  if (e->seq_method != nullptr) {
    long long v;
    if (!TakeInt(g_api.call_object(e->seq_method, nullptr), &v)) return false;
    *seq = static_cast<uint64_t>(v - e->base + 1);
  }
  *op_group = w.op | e->id << 8;
  return true;
}

// True when the call returns a Work to wait on: isend/irecv, or async_op true.
bool Issued(const Wrapper& w, PyObj* args, PyObj* kwargs) {
  if (w.is_async) return true;
  PyObj* a = kwargs != nullptr ? g_api.dict_get_item(kwargs, g_str_async_op) : nullptr;
  if (a == nullptr && w.async_at >= 0 && w.async_at < g_api.tuple_size(args)) {
    a = g_api.tuple_get_item(args, w.async_at);
  }
  if (a == nullptr) return false;
  const int truth = g_api.object_is_true(a);
  if (truth < 0) g_api.err_clear();
  return truth > 0;
}

PyObj* Collective(PyObj* self, PyObj* args, PyObj* kwargs) {
  const long long index = g_api.long_as_long_long(self);
  if (index < 0 || index >= g_wrapper_count) return nullptr;  // not one of ours: an error is set
  const Wrapper& w = g_wrappers[index];
  if (InsideCollective() || !Recording()) return g_api.object_call(w.real, args, kwargs);
  if (w.wait) return g_api.object_call(w.slow, args, kwargs);
  uint32_t op_group;
  uint64_t seq, count, dtype;
  if (!CollectiveFields(w, args, kwargs, &op_group, &seq, &count, &dtype)) {
    return g_api.object_call(w.slow, args, kwargs);
  }
  const uint64_t where = CallSiteId();
  if (where == 0) return g_api.object_call(w.slow, args, kwargs);
  BeginCollective(op_group, seq, count, dtype, where);
  PyObj* result = g_api.object_call(w.real, args, kwargs);
  const uint32_t seqs = seq != 0 ? 1 : 0;
  if (result == nullptr) {
    EndCollective(static_cast<uint32_t>(format::CollectiveStatus::kRaised), seqs);
    return nullptr;
  }
  EndCollective(static_cast<uint32_t>(Issued(w, args, kwargs) ? format::CollectiveStatus::kIssued
                                                               : format::CollectiveStatus::kReturned),
                seqs);
  return result;
}

MethodDef g_collective = {"collective", reinterpret_cast<void*>(&Collective), kMethVarargs | kMethKeywords,
                          nullptr};

PyObj* NewNone() {
  g_api.inc_ref(g_api.none);
  return g_api.none;
}

// A built-in function for wrapper w (its real and slow referenced now), or nullptr with
// a Python error set.
PyObj* NewWrapper(const Wrapper& w) {
  PyObj* index = g_api.long_from_long(g_wrapper_count);
  if (index == nullptr) return nullptr;
  PyObj* function = g_api.cfunction_new_ex(&g_collective, index, nullptr);
  g_api.dec_ref(index);  // the function holds it
  if (function == nullptr) return nullptr;
  g_api.inc_ref(w.real);
  g_api.inc_ref(w.slow);
  g_wrappers[g_wrapper_count++] = w;
  return function;
}

PyObj* Wrap(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (!Takes(nargs, 6, "colabtrace: wrap() takes six arguments")) return nullptr;
  uint64_t a[4];
  if (!Ints(args + 2, 4, 4, a)) return nullptr;
  if (g_wrapper_count >= kMaxWrappers || !CallSitesReadable()) return NewNone();
  return NewWrapper(Wrapper{args[0], args[1], static_cast<uint32_t>(a[0]), static_cast<int>(static_cast<int64_t>(a[1])),
                            static_cast<int>(static_cast<int64_t>(a[2])), a[3] != 0, false});
}

PyObj* WrapWait(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (!Takes(nargs, 2, "colabtrace: wrap_wait() takes two arguments")) return nullptr;
  if (g_wrapper_count >= kMaxWrappers) return NewNone();
  PyObj* function = NewWrapper(Wrapper{args[0], args[1], 0, -1, -1, false, true});
  if (function == nullptr) return nullptr;
  PyObj* method = g_api.instance_method_new(function);
  g_api.dec_ref(function);  // the method holds it
  return method;
}

PyObj* NoteGroup(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (!Takes(nargs, 5, "colabtrace: group() takes five arguments")) return nullptr;
  uint64_t a[2];
  if (!Ints(args + 1, 2, 2, a)) return nullptr;
  const int is_default = g_api.object_is_true(args[4]);
  if (is_default < 0) return nullptr;
  int at = -1;
  for (int i = 0; i < g_group_count; ++i) {
    if (g_groups[i].object == args[0]) at = i;
  }
  if (at < 0) {
    if (g_group_count >= kMaxGroups) return g_api.long_from_long(0);  // that group's calls go the slow way
    at = g_group_count++;
  } else {
    g_api.dec_ref(g_groups[at].object);
    if (g_groups[at].seq_method != nullptr) g_api.dec_ref(g_groups[at].seq_method);
  }
  PyObj* seq_method = args[3] == g_api.none || static_cast<int64_t>(a[1]) < 0 ? nullptr : args[3];
  g_api.inc_ref(args[0]);
  if (seq_method != nullptr) g_api.inc_ref(seq_method);
  g_groups[at] = Group{args[0], seq_method, seq_method != nullptr ? static_cast<int64_t>(a[1]) : -1,
                       static_cast<uint32_t>(a[0])};
  if (is_default) g_default_group = at;
  return g_api.long_from_long(1);
}

PyObj* Forget(PyObj*, PyObj* const*, ssize_t nargs) {
  if (!Takes(nargs, 0, "colabtrace: forget() takes no arguments")) return nullptr;
  for (int i = 0; i < g_group_count; ++i) {
    g_api.dec_ref(g_groups[i].object);
    if (g_groups[i].seq_method != nullptr) g_api.dec_ref(g_groups[i].seq_method);
  }
  g_group_count = 0;
  g_default_group = -1;
  return g_api.long_from_long(0);
}

PyObj* NoteDtype(PyObj*, PyObj* const* args, ssize_t nargs) {
  if (!Takes(nargs, 2, "colabtrace: dtype() takes two arguments")) return nullptr;
  uint64_t id;
  if (!Ints(args + 1, 1, 1, &id)) return nullptr;
  int at = -1;
  for (int i = 0; i < g_dtype_count; ++i) {
    if (g_dtypes[i].object == args[0]) at = i;
  }
  if (at < 0) {
    if (g_dtype_count >= kMaxDtypes) return g_api.long_from_long(0);  // its calls go the slow way
    at = g_dtype_count++;
    g_api.inc_ref(args[0]);
  }
  g_dtypes[at] = Dtype{args[0], id, g_generation};
  return g_api.long_from_long(1);
}

// CPython keeps pointers to these entries in the functions it makes: static storage.
MethodDef g_methods[] = {
    {"enter", reinterpret_cast<void*>(&Enter), kMethFastcall, nullptr},
    {"end", reinterpret_cast<void*>(&End), kMethFastcall, nullptr},
    {"inside", reinterpret_cast<void*>(&Inside), kMethFastcall, nullptr},
    {"intern", reinterpret_cast<void*>(&Intern), kMethFastcall, nullptr},
    {"wrap", reinterpret_cast<void*>(&Wrap), kMethFastcall, nullptr},
    {"wrap_wait", reinterpret_cast<void*>(&WrapWait), kMethFastcall, nullptr},
    {"group", reinterpret_cast<void*>(&NoteGroup), kMethFastcall, nullptr},
    {"forget", reinterpret_cast<void*>(&Forget), kMethFastcall, nullptr},
    {"dtype", reinterpret_cast<void*>(&NoteDtype), kMethFastcall, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyObj* MakeModule() {
  const uint32_t version = PythonVersion();
  if (version < kOldestVersion || version >= 0x0400) return nullptr;
  CApi api;
  if (!ResolveCApi(&api)) return nullptr;
  g_api = api;
  g_str_group = g_api.intern_from_string("group");
  g_str_async_op = g_api.intern_from_string("async_op");
  g_str_numel = g_api.intern_from_string("numel");
  g_str_dtype = g_api.intern_from_string("dtype");
  if (g_str_group == nullptr || g_str_async_op == nullptr || g_str_numel == nullptr || g_str_dtype == nullptr) {
    return nullptr;
  }
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
