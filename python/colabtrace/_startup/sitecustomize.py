"""colabtrace's Python start-up hook (imported by site.py as ``sitecustomize``).

Installed by ``colabtrace run`` and by ``COLABTRACE_PYTHON=1`` under the shim: the shim
puts this folder in front of PYTHONPATH. This module then

* undoes that: PYTHONPATH in os.environ (and so in every child) and sys.path are what
  they would have been without colabtrace;
* runs the next ``sitecustomize`` on sys.path, if there is one (Debian's, a
  virtualenv's, the user's), so chaining is invisible;
* once ``torch`` is imported, marks the training steps, the waits for the DataLoader's
  batches and the DataLoader's worker processes in the trace (see "steps" below);
* once ``torch`` is imported and its CUDA state initialised, turns on PyTorch's bounded
  allocator history and attaches an out-of-memory observer that writes
  ``torch.cuda.memory._snapshot()`` as JSON next to the trace
  (``colabtrace.<prog>.<pid>.torch-snapshot.json``; never pickle);
* records an uncaught exception (type, message, traceback) into the trace before
  Python's own hook prints it: the main thread's (``sys.excepthook``), another
  thread's (``threading.excepthook``, once ``threading`` is imported), and one that a
  DataLoader worker catches and passes to the main process (see "uncaught exceptions");
* at exit, records the distribution and version behind each imported top-level module
  that is not in the standard library into the trace (a PyPackage record, through the
  shim's ``colabtrace_python_package``), from the *.dist-info/*.egg-info folders on
  sys.path.

It imports nothing at start-up beyond what Python already loaded, prints nothing, and
never raises: a failure of colabtrace's own part leaves the program untouched.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# Bounded allocator history: PyTorch keeps at most this many trace entries.
_TORCH_MAX_ENTRIES = 20000


def _restore_environment():
    """Removes this folder from PYTHONPATH and sys.path (the shim added it)."""
    here = os.path.realpath(_HERE)
    value = os.environ.get("PYTHONPATH")
    if value is not None:
        if value == here:
            del os.environ["PYTHONPATH"]
        elif value == here + os.pathsep + here:  # it was empty
            os.environ["PYTHONPATH"] = ""
        elif value.startswith(here + os.pathsep):
            os.environ["PYTHONPATH"] = value[len(here) + 1:]
    sys.path[:] = [p for p in sys.path if not p or os.path.realpath(p) != here]


def _chain_next_sitecustomize():
    """Runs the sitecustomize this one hides, and leaves it in sys.modules."""
    # The import system's own modules (always loaded): importlib.util would import
    # contextlib and more into every traced process.
    bootstrap = sys.modules["_frozen_importlib"]
    external = sys.modules["_frozen_importlib_external"]
    here = os.path.realpath(_HERE)
    path = [p for p in sys.path if not p or os.path.realpath(p) != here]
    spec = external.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = bootstrap.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # its errors are reported by site.py, as without us


# ---- the shim ---------------------------------------------------------------------------

def _shim():
    """The shim's ctypes entry points, or None without the shim."""
    try:
        import ctypes

        lib = ctypes.CDLL(None)
        lib.colabtrace_trace_path.restype = ctypes.c_int
        lib.colabtrace_python_quiet.restype = ctypes.c_int
        lib.colabtrace_python_package.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError, ImportError):
        return None


def _shim_function(name, restype="i", python_api=False):
    """The shim's entry point `name` (C int result; restype "P": a pointer, as an int or
    None), or None without the shim. Bound through _ctypes alone: `import ctypes` (the
    package, struct) cost 2-5 ms at every exit, where _ctypes costs about 1 ms. Arguments
    are ints and bytes (passed as char*). python_api: the function calls CPython's API,
    so the GIL stays held across the call (ctypes' PyDLL)."""
    try:
        import _ctypes

        class _Result(_ctypes._SimpleCData):
            _type_ = restype

        class _Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | (_ctypes.FUNCFLAG_PYTHONAPI if python_api else 0)
            _restype_ = _Result

        class _Process:  # what ctypes.CDLL(None) holds: the global scope
            _handle = _ctypes.dlopen(None, 0)

        return _Function((name, _Process))
    except (OSError, AttributeError, ImportError, TypeError):
        return None


def _side_file(suffix):
    """The trace's path with .ctrace replaced by suffix, or None without a trace."""
    lib = _shim()
    if lib is None:
        return None
    import ctypes

    buf = ctypes.create_string_buffer(4096)
    n = lib.colabtrace_trace_path(buf, len(buf))
    if n <= 0:
        return None
    trace = buf.value.decode("utf-8", "surrogateescape")
    if trace.endswith(".ctrace"):
        trace = trace[: -len(".ctrace")]
    return trace + suffix


# ---- PyTorch ----------------------------------------------------------------------------

class _ImportWatcher:
    """A meta-path finder that calls then(module) once a watched module has executed, and
    takes itself off sys.meta_path when it watches nothing more."""

    def __init__(self):
        self._watched = {}

    def watch(self, name, then):
        self._watched[name] = then
        if not any(f is self for f in sys.meta_path):
            sys.meta_path.insert(0, self)

    def find_spec(self, name, path=None, target=None):
        then = self._watched.pop(name, None)
        if then is None:
            return None
        if not self._watched:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
        spec = None
        for finder in list(sys.meta_path):  # the finders after us decide
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_hook(module):
            exec_module(module)
            then(module)

        try:
            loader.exec_module = exec_then_hook
        except (AttributeError, TypeError):
            pass
        return spec


_watcher = _ImportWatcher()


def _on_torch_imported(torch):
    try:
        _install_step_hooks()
    except Exception:  # noqa: BLE001 - never break the program's import of torch
        pass
    try:
        _install_spawn_hook()
    except Exception:  # noqa: BLE001
        pass
    try:
        if not hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):
            return  # a build without CUDA
        torch.cuda._lazy_call(lambda: _on_cuda_initialized(torch))
    except Exception:  # noqa: BLE001
        pass


# ---- steps, batch waits and DataLoader workers ------------------------------------------
# What the analyzer cuts a training run into steps with, and where each step's time went,
# without a change to the program (shim/steps.cpp has the records):
#
# * each optimizer step of an iteration ends: colabtrace_step_auto(n), a Step record of
#   source "optimizer". torch >= 2.0: global optimizer step hooks; before (Debian's 1.13):
#   Optimizer._hook_for_profile, which 1.13 runs in every Optimizer.__init__ to wrap the
#   class's step once (marked `hooked`), also wraps it in a counting step, once. Several
#   optimizers stepping in one iteration (a GAN's opt_d.step(); opt_g.step()) make one
#   step: only the lead optimizer, the first that stepped, counts. When the lead is
#   gone (a new optimizer every epoch, the old one freed), the next optimizer that
#   steps leads; while it lives, another that steps twice while the lead does not
#   becomes the lead (its first step is then not counted). A step inside a step (a
#   subclass's step calling super().step()) counts once, when the outermost returns;
# * the DataLoader iterator's __next__ is a batch wait: colabtrace_batch_wait_begin(where,
#   "file.py:25 in main" of the frame that asked for the batch: the shim notes the wait
#   in flight there), the real __next__, then colabtrace_batch_wait_end(kind 1, where,
#   the batch's index). A __next__ that raises
#   (StopIteration at the end of the epoch, an error) ends the wait with kind 0: no
#   batch, no record;
# * a DataLoader worker (fork, spawn or forkserver: the hook runs in every Python
#   process under the shim) writes colabtrace_process_role(1, worker_id) as its loop starts.
#
# Each hook is installed once, only under the shim, and never changes what the program
# computes: its own failures are swallowed. Per step it costs a few attribute loads and
# one call into the shim; per batch two calls and a dict lookup (the "where" text is made
# once per calling line).

_BATCH_WAIT_DATALOADER = 1  # format::BatchWaitKind::kDataLoader
_BATCH_WAIT_NONE = 0        # ends the wait without recording it
_ROLE_DATALOADER_WORKER = 1  # format::ProcessRoleKind::kDataLoaderWorker

_step_auto = None  # the shim's entry points, resolved once
_lead = None       # the lead optimizer: a weak reference (it must not keep it alive)
_others = set()    # id()s of the other optimizers that stepped since the lead last did
_steps = 0         # steps counted (the n of the Step records)
_step_depth = 0    # torch < 2.0: optimizer steps running (a step inside a step counts once)


def _optimizer_stepped(optimizer):
    """One optimizer step ended: a Step record when it is the lead's. Never raises: it runs
    inside the program's optimizer.step()."""
    try:
        _count_step(optimizer)
    except Exception:  # noqa: BLE001
        pass


def _count_step(optimizer):
    global _lead, _steps
    lead = _lead() if _lead is not None else None
    if optimizer is not lead:
        key = id(optimizer)
        if lead is not None and key not in _others:
            _others.add(key)
            return
        # The first optimizer that steps; one that stepped twice while the lead did not;
        # or any, once the lead is gone (a new optimizer every epoch, the old one freed).
        try:
            import weakref  # loaded by torch already

            _lead = weakref.ref(optimizer)
        except TypeError:  # a class without weak references: hold it
            _lead = lambda optimizer=optimizer: optimizer  # noqa: E731
    if _others:
        _others.clear()
    _steps += 1
    _step_auto(_steps)


_step_frames = []  # torch >= 2.0: the frames of the optimizer steps running, outermost first


def _step_began(optimizer, args, kwargs):
    """torch >= 2.0's global pre hook: notes the step's frame (torch's wrapper, which runs
    the hooks), so that a step inside a step counts once."""
    frame = sys._getframe(1)
    if _step_frames:
        # A step inside a step, or the leftover of a step that raised (its post hook never
        # ran): keep the frames that are still running, i.e. above this one.
        above = []
        up = frame.f_back
        while up is not None and len(above) < 32:
            above.append(up)
            up = up.f_back
        _step_frames[:] = [f for f in _step_frames if any(f is a for a in above)]
    _step_frames.append(frame)


def _step_ended(optimizer, args, kwargs):
    """torch >= 2.0's global post hook: counts the outermost step."""
    frame = sys._getframe(1)
    if _step_frames and _step_frames[-1] is frame:
        _step_frames.pop()
    elif _step_frames:
        _step_frames[:] = [f for f in _step_frames if f is not frame][:-1]
    if not _step_frames:
        _optimizer_stepped(optimizer)


def _counting_step(step):
    """step, counted: the wrapper 1.13's _hook_for_profile leaves in place (hooked)."""
    import functools  # loaded by torch already

    def step_and_count(*args, **kwargs):
        global _step_depth
        _step_depth += 1
        try:
            out = step(*args, **kwargs)
        finally:
            _step_depth -= 1
        if _step_depth == 0 and args:
            _optimizer_stepped(args[0])
        return out

    functools.update_wrapper(step_and_count, step)
    step_and_count.hooked = True  # torch 1.13's mark: do not wrap again
    step_and_count._colabtrace_counts = True
    return step_and_count


def _hook_optimizers(optimizer_module):
    register_post = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    register_pre = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
    if register_post is not None:  # torch >= 2.0
        if register_pre is not None:
            register_pre(_step_began)
            register_post(_step_ended)
        else:
            register_post(lambda optimizer, args, kwargs: _optimizer_stepped(optimizer))
        return
    optimizer_class = getattr(optimizer_module, "Optimizer", None)
    hook_for_profile = getattr(optimizer_class, "_hook_for_profile", None)
    if hook_for_profile is None or getattr(hook_for_profile, "_colabtrace_counts", False):
        return

    def _hook_for_profile(self):
        hook_for_profile(self)
        try:
            cls = self.__class__
            if not getattr(cls.step, "_colabtrace_counts", False):
                cls.step = _counting_step(cls.step)
        except Exception:  # noqa: BLE001
            pass

    _hook_for_profile.__name__ = hook_for_profile.__name__
    _hook_for_profile.__qualname__ = hook_for_profile.__qualname__
    _hook_for_profile._colabtrace_counts = True
    optimizer_class._hook_for_profile = _hook_for_profile


_where_by_site = {}  # (id(code), instruction) -> (code, b"file.py:25 in main")


def _where(frame):
    """The frame's line as BatchWait.where, made once per call site: keyed by the code
    object and its instruction offset (f_lasti, a plain field, where f_lineno decodes the
    line table every time)."""
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    hit = _where_by_site.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    text = "%s:%d in %s" % (os.path.basename(code.co_filename), frame.f_lineno, code.co_name)
    where = text.encode("utf-8", "surrogateescape")
    _where_by_site[key] = (code, where)
    return where


def _hook_dataloader(dataloader_module):
    iterator_class = getattr(dataloader_module, "_BaseDataLoaderIter", None)
    real_next = getattr(iterator_class, "__next__", None)
    if real_next is None or getattr(real_next, "_colabtrace_waits", False):
        return
    begin = _shim_function("colabtrace_batch_wait_begin")
    end = _shim_function("colabtrace_batch_wait_end")
    if begin is None or end is None:
        return
    getframe = sys._getframe
    where_of = _where

    def __next__(self):
        try:
            where = where_of(getframe(1))
        except Exception:  # noqa: BLE001
            where = None
        begin(where)
        try:
            data = real_next(self)
        except BaseException:
            end(_BATCH_WAIT_NONE, None, 0)
            raise
        try:
            end(_BATCH_WAIT_DATALOADER, where, self._num_yielded - 1)
        except Exception:  # noqa: BLE001
            pass
        return data

    __next__.__name__ = real_next.__name__
    __next__.__qualname__ = real_next.__qualname__
    __next__.__doc__ = real_next.__doc__
    __next__.__wrapped__ = real_next
    __next__._colabtrace_waits = True
    iterator_class.__next__ = __next__


def _hook_workers(worker_module):
    real_loop = getattr(worker_module, "_worker_loop", None)
    if real_loop is None or getattr(real_loop, "_colabtrace_role", False):
        return
    process_role = _shim_function("colabtrace_process_role")
    if process_role is None:
        return
    import functools  # loaded by torch already

    try:
        at = real_loop.__code__.co_varnames.index("worker_id")
    except (AttributeError, ValueError):
        return

    def _worker_loop(*args, **kwargs):
        try:
            worker_id = kwargs["worker_id"] if "worker_id" in kwargs else args[at]
            process_role(_ROLE_DATALOADER_WORKER, int(worker_id))
        except Exception:  # noqa: BLE001
            pass
        _hook_safely(_hook_worker_exceptions, sys.modules.get("torch._utils"))
        return real_loop(*args, **kwargs)

    # Same __module__ and __qualname__: a spawn or forkserver start pickles the Process's
    # target by name, and the child (whose own hook wrapped it) finds this wrapper again.
    functools.update_wrapper(_worker_loop, real_loop)
    _worker_loop._colabtrace_role = True
    worker_module._worker_loop = _worker_loop


# ---- torch.distributed ------------------------------------------------------------------
# The collective each thread waits in, on any backend (gloo, NCCL, MPI), so that the
# analyzer can say which rank of a multi-rank job the others waited for
# (shim/python/collectives.cpp has the records):
#
# * each torch.distributed collective (all_reduce, broadcast, barrier, send...; the
#   *_object ones once, not their inner calls) is enter(op | group << 8, seq, count,
#   dtype, where) before the real call and end(status, seqs) after it: the shim notes it
#   in flight meanwhile and then writes a Collective record. Strings cross as the String
#   ids intern gave them, kept per call site and dtype (and forgotten in a fork child,
#   whose trace is its own). seq is the process group's own sequence number (torch's,
#   which every rank of the group shares) of the first collective the call issues,
#   counted from 1 at the group's creation; seqs how many it issued. An async_op call
#   ends when it returns its Work, and Work.wait() is a collective of its own (op "wait");
#   torch's own calls from inside a collective (the Work.wait() of a blocking one, the
#   collectives an *_object one issues) are part of it: inside() says so, per thread;
# * DistributedDataParallel's gradient all-reduce runs inside backward(), issued from
#   C++ one bucket at a time: a backward() after a DDP forward that will sync its
#   gradients is one collective "ddp_all_reduce" at the line that called backward(), its
#   count the model's gradient elements, its seqs the buckets' all-reduces;
# * init_process_group and new_group write a DistGroup record: the group's id (1 the
#   default group, then new groups in creation order, which every rank shares), this
#   rank, the world size, the backend and the group's sequence number at creation.
#
# inside, enter, end and intern are built-in functions of the module the shim makes with
# CPython's C API (colabtrace_python_module, shim/python/entry_module.cpp: no ctypes per
# call); where it cannot make one (a CPython before 3.8, an API symbol missing), ctypes
# calls of colabtrace_collective_enter/_begin/_end and colabtrace_intern (C ints only, the
# fastest ctypes call: 64-bit values in 31-bit halves), with inside() a thread-local flag
# (_ctypes_entry). Each collective costs three calls into the shim (inside, enter, end),
# torch's sequence counter and a few lookups, about 1.4 us in Python. With the module,
# the collectives that issue one collective and Work.wait's pass-through are wrapped in
# C instead (the module's wrap and wrap_wait: the same steps, about 0.8 us; the C
# wrapper hands any case it does not know, such as a group or dtype the hook has not told
# it of, to the Python one). tools/bench --suite dist measures both. The hook never
# changes what the program computes: its own failures are swallowed.

_COLLECTIVE_OPS = {  # entry point -> format::CollectiveOp
    "all_reduce": 1, "broadcast": 2, "all_gather": 3, "all_gather_into_tensor": 3,
    "_all_gather_base": 3, "reduce_scatter": 4, "reduce_scatter_tensor": 4,
    "_reduce_scatter_base": 4, "reduce": 5, "gather": 6, "scatter": 7, "all_to_all": 8,
    "all_to_all_single": 8, "barrier": 9, "send": 10, "recv": 11, "isend": 10, "irecv": 11,
    "all_gather_object": 12, "broadcast_object_list": 13, "gather_object": 14,
    "scatter_object_list": 15, "monitored_barrier": 16,
}
_OP_WORK_WAIT = 17
_OP_DDP_ALL_REDUCE = 18
_STATUS_RETURNED, _STATUS_RAISED, _STATUS_ISSUED = 0, 1, 2
_GROUP_INIT, _GROUP_NEW = 1, 2

_inside = None            # the shim's functions, resolved once (_shim_entry)
_enter = None
_end = None
_intern = None
_module = None            # the shim's module itself (wrap, group, forget, dtype), or None
_real_wait = None         # torch's own Work.wait, once hooked
_groups = {}              # id(process group) -> its entry (_new_entry)
_default_entry = None     # _groups' entry of the default group, once known
_ddp_pending = None       # (process group, count, dtype) of the last DDP forward that syncs
_ddp_grads = {}           # id(DDP module) -> (its gradient elements, their dtype)
_string_ids = {}          # bytes -> its String id in this process's trace
_dtype_ids = {}           # torch dtype -> its name's String id
_where_ids = {}           # (id(code), instruction) -> (code, the line's String id)
_torch_dir = ""
_LOW31 = 0x7FFFFFFF       # the shim takes 64-bit values as two 31-bit C ints


def _forget_string_ids():
    """In a fork child: its trace is its own, and the parent's String ids mean nothing."""
    _string_ids.clear()
    _dtype_ids.clear()
    _where_ids.clear()


def _string_id(text):
    sid = _string_ids.get(text)
    if sid is None:
        sid = _string_ids[text] = _intern(text) if text is not None else 0
    return sid


def _dtype_id(dtype):
    sid = _dtype_ids.get(dtype)
    if sid is None:
        sid = _dtype_ids[dtype] = _string_id(str(dtype).encode())
        if _module is not None and sid:
            _module.dtype(dtype, sid)  # for the wrappers made in C (_wrap_collective)
    return sid


def _where_id(frame):
    """The String id of the frame's line, made once per call site (see _where)."""
    if frame is None:
        return 0
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    hit = _where_ids.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    sid = _string_id(_where(frame))
    _where_ids[key] = (code, sid)
    return sid


def _shim_function_typed(name, argtypes):
    """_shim_function with its arguments typed ("Q" u64, "q" i64, "z" char*), so that
    64-bit values pass whole (for calls made once per group, not per collective)."""
    function = _shim_function(name)
    if function is None:
        return None
    import _ctypes

    types = []
    for code in argtypes:
        class _Arg(_ctypes._SimpleCData):
            _type_ = code
        types.append(_Arg)
    function.argtypes = tuple(types)
    return function


def _shim_entry():
    """(inside, enter, end, intern, module): the built-in functions of the shim's module
    and the module, or _ctypes_entry's (module None) where the shim cannot make one; None
    without the shim."""
    make = _shim_function("colabtrace_python_module", "P", python_api=True)
    try:
        address = make() if make is not None else None
        if address:  # where the shim holds its reference to the module
            import _ctypes

            class _Object(_ctypes._SimpleCData):
                _type_ = "O"

            module = _Object.from_address(address).value
            return module.inside, module.enter, module.end, module.intern, module
    except Exception:  # noqa: BLE001
        pass
    entry = _ctypes_entry()
    return entry + (None,) if entry is not None else None


def _ctypes_entry():
    """The same four through ctypes: enter passes 64-bit values in 31-bit halves where it
    must, and inside() is a thread-local flag that enter sets and end clears."""
    begin = _shim_function("colabtrace_collective_begin")
    enter_small = _shim_function("colabtrace_collective_enter")
    end_call = _shim_function("colabtrace_collective_end")
    intern = _shim_function("colabtrace_intern")
    if None in (begin, enter_small, end_call, intern):
        return None
    import _thread

    local = _thread._local()

    def inside():
        return getattr(local, "on", False)

    def enter(op_group, seq, count, dtype, where):
        if seq <= _LOW31 and count <= _LOW31:
            enter_small(op_group, seq, count, dtype, where)
        else:
            begin(op_group, seq & _LOW31, seq >> 31, count & _LOW31, count >> 31, dtype, where)
        local.on = True

    def end(status, seqs):
        local.on = False
        end_call(status, seqs)

    return inside, enter, end, intern


def _new_entry(group):
    """[group, id, base_seq or None, its bound _get_sequence_number_for_group] for a group
    seen now: the next id (in creation order, which every rank shares)."""
    base = _sequence(group)
    entry = [group, len(_groups) + 1, base, group._get_sequence_number_for_group if base is not None else None]
    _groups[id(group)] = entry
    _note_group(entry, False)
    return entry


def _set_default(entry):
    """The group a call that names none uses, here and in the shim's wrappers."""
    global _default_entry
    _default_entry = entry
    _note_group(entry, True)


def _note_group(entry, is_default):
    """Tells the shim's wrappers (_wrap_collective) of a group: its id, base sequence
    number and counter, and whether a call that names no group uses it."""
    if _module is not None:
        try:
            _module.group(entry[0], entry[1], entry[2] if entry[2] is not None else -1, entry[3], is_default)
        except Exception:  # noqa: BLE001
            pass


def _group_entry(c10d, group):
    """_new_entry of a process group (None: the default one); a group first seen here, made
    before the hook, gets the next id."""
    default = group is None or group is getattr(getattr(c10d, "GroupMember", None), "WORLD", None)
    if default:
        group = c10d._get_default_group()
    entry = _groups.get(id(group))
    if entry is None or entry[0] is not group:
        entry = _new_entry(group)
    if default:
        _set_default(entry)
    return entry


def _sequence(group):
    """The group's sequence number, or None where torch has none for it."""
    try:
        return int(group._get_sequence_number_for_group())
    except Exception:  # noqa: BLE001
        return None


def _tensor_facts(value):
    """(element count, dtype's String id) of the first tensor in an argument (a tensor, or
    a list of them); (0, 0) for none."""
    try:
        return value.numel(), _dtype_id(value.dtype)
    except AttributeError:
        pass
    if isinstance(value, (list, tuple)) and value:
        return _tensor_facts(value[0])
    return 0, 0


def _program_frame(frame):
    """The innermost frame outside torch's own files (the line that called backward())."""
    while frame is not None and frame.f_code.co_filename.startswith(_torch_dir):
        frame = frame.f_back
    return frame


def _record_group(c10d, group, how):
    try:
        record = _shim_function_typed("colabtrace_dist_group", "QqQzQQ")
        if record is None:
            return
        if group is None:
            group = c10d._get_default_group()
        entry = _new_entry(group)
        if how == _GROUP_INIT:
            _set_default(entry)
        rank = c10d.get_rank(group) if how == _GROUP_NEW else c10d.get_rank()
        backend = str(c10d.get_backend(group)).encode()
        record(entry[1], int(rank), int(c10d.get_world_size(group) if rank >= 0 else 0), backend,
               entry[2] or 0, how)
    except Exception:  # noqa: BLE001
        pass


# Entry points that issue exactly one collective on their group (the others, the *_object
# ones, issue several: their count is read back from torch at the end).
_ISSUES_ONE = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16}


def _wrap_collective(c10d, name, real, op):
    import inspect

    try:
        params = list(inspect.signature(real).parameters)
    except (TypeError, ValueError):
        return None
    group_at = params.index("group") if "group" in params else -1
    async_at = params.index("async_op") if "async_op" in params else -1
    is_async = name in ("isend", "irecv")
    issues_one = op in _ISSUES_ONE
    inside, enter, end, getframe = _inside, _enter, _end, sys._getframe
    dtype_ids, where_ids = _dtype_ids, _where_ids

    # The hot path is written out inline (no helper calls; the shim's inside, enter and
    # end): tools/bench --suite dist measures it against its 2 us budget. Without keyword
    # arguments the real call passes none: `**kwargs` builds a dict each time.
    def collective(*args, **kwargs):
        if inside():  # inside another collective (an *_object one)
            return real(*args, **kwargs) if kwargs else real(*args)
        try:
            if kwargs:
                group = kwargs.get("group", args[group_at] if 0 <= group_at < len(args) else None)
                count, dtype = _tensor_facts(args[0] if args else next(iter(kwargs.values())))
            else:
                group = args[group_at] if 0 <= group_at < len(args) else None
                if args:
                    try:
                        tensor = args[0]
                        count = tensor.numel()
                        dtype = dtype_ids.get(tensor.dtype) or _dtype_id(tensor.dtype)
                    except AttributeError:
                        count, dtype = _tensor_facts(args[0])
                else:
                    count = dtype = 0
            entry = _default_entry if group is None and _default_entry is not None else _group_entry(c10d, group)
            base = entry[2]
            seq = entry[3]() - base + 1 if base is not None else 0
            frame = getframe(1)
            code = frame.f_code
            site = where_ids.get((id(code), frame.f_lasti))
            where = site[1] if site is not None and site[0] is code else _where_id(frame)
            enter(op | entry[1] << 8, seq, count, dtype, where)
        except Exception:  # noqa: BLE001
            return real(*args, **kwargs)
        # Until end, torch's own calls are part of it: the *_object ones call the other
        # collectives, and a blocking one calls Work.wait() (inside() is true).
        try:
            result = real(*args, **kwargs) if kwargs else real(*args)
        except BaseException:
            _end_collective(end, _STATUS_RAISED, entry, seq, issues_one)
            raise
        if is_async or (kwargs.get("async_op") if "async_op" in kwargs else
                        0 <= async_at < len(args) and args[async_at]):
            _end_collective(end, _STATUS_ISSUED, entry, seq, issues_one)
        elif issues_one:
            end(_STATUS_RETURNED, 1 if seq else 0)
        else:
            _end_collective(end, _STATUS_RETURNED, entry, seq, issues_one)
        return result

    import functools

    functools.update_wrapper(collective, real)
    collective._colabtrace_collective = True
    # The same in C, for the calls that issue one collective: the shim's built-in function
    # does what `collective` does for the common case (a known group and dtype, a
    # positional tensor) and hands it any other case whole (entry_module.cpp, wrap()).
    # A partial of it carries torch's name, docstring and __wrapped__.
    fast = _module.wrap(real, collective, op, group_at, async_at, is_async) \
        if _module is not None and issues_one else None
    if fast is None:
        return collective
    wrapper = functools.partial(fast)
    functools.update_wrapper(wrapper, real)
    wrapper._colabtrace_collective = True
    wrapper._colabtrace_slow = collective
    return wrapper


def _end_collective(end, status, entry, seq, issues_one=False):
    """end(status, seqs), always: until it, the thread is inside the collective."""
    try:
        if not seq:
            seqs = 0
        elif issues_one:
            seqs = 1
        else:
            seqs = _sequence(entry[0]) - entry[2] + 1 - seq
    except Exception:  # noqa: BLE001
        seqs = 0
    try:
        end(status, seqs)
    except Exception:  # noqa: BLE001
        pass


def _hook_distributed(c10d):
    global _inside, _enter, _end, _intern, _module
    if getattr(c10d, "_colabtrace_collectives", False):
        return
    entry = _shim_entry()
    if entry is None:
        return
    _inside, _enter, _end, _intern, _module = entry
    os.register_at_fork(after_in_child=_forget_string_ids)
    c10d._colabtrace_collectives = True
    for name, op in _COLLECTIVE_OPS.items():
        real = getattr(c10d, name, None)
        if real is None or getattr(real, "_colabtrace_collective", False):
            continue
        wrapped = _wrap_collective(c10d, name, real, op)
        if wrapped is None:
            continue
        setattr(c10d, name, wrapped)
        package = sys.modules.get("torch.distributed")  # re-exported there: dist.all_reduce
        if package is not None and getattr(package, name, None) is real:
            setattr(package, name, wrapped)
    _hook_group_creation(c10d)
    _hook_work_wait(c10d)


def _hook_group_creation(c10d):
    import functools

    real_init = getattr(c10d, "init_process_group", None)
    real_new = getattr(c10d, "new_group", None)
    package = sys.modules.get("torch.distributed")
    if real_init is not None:
        def init_process_group(*args, **kwargs):
            result = real_init(*args, **kwargs)
            _record_group(c10d, None, _GROUP_INIT)
            return result
        functools.update_wrapper(init_process_group, real_init)
        c10d.init_process_group = init_process_group
        if package is not None and getattr(package, "init_process_group", None) is real_init:
            package.init_process_group = init_process_group
    real_destroy = getattr(c10d, "destroy_process_group", None)
    if real_destroy is not None:
        def destroy_process_group(*args, **kwargs):
            global _default_entry
            _default_entry = None
            _groups.clear()
            if _module is not None:
                _module.forget()
            return real_destroy(*args, **kwargs)
        functools.update_wrapper(destroy_process_group, real_destroy)
        c10d.destroy_process_group = destroy_process_group
        if package is not None and getattr(package, "destroy_process_group", None) is real_destroy:
            package.destroy_process_group = destroy_process_group
    if real_new is not None:
        def new_group(*args, **kwargs):
            group = real_new(*args, **kwargs)
            if group is not None and getattr(c10d, "GroupMember", None) is not None and \
                    group is not c10d.GroupMember.NON_GROUP_MEMBER:
                _record_group(c10d, group, _GROUP_NEW)
            return group
        functools.update_wrapper(new_group, real_new)
        c10d.new_group = new_group
        if package is not None and getattr(package, "new_group", None) is real_new:
            package.new_group = new_group


def _hook_work_wait(c10d):
    work = getattr(c10d, "Work", None)
    real_wait = getattr(work, "wait", None)
    if real_wait is None or getattr(real_wait, "_colabtrace_collective", False):
        return
    inside, enter, end, getframe = _inside, _enter, _end, sys._getframe

    # Called inside every blocking collective (torch's own wait): the plain call is
    # about 150 ns cheaper than one through *args, **kwargs (tools/bench --suite dist).
    def wait(self, *args, **kwargs):
        if inside():
            return real_wait(self, *args, **kwargs) if args or kwargs else real_wait(self)
        try:
            enter(_OP_WORK_WAIT, 0, 0, 0, _where_id(getframe(1)))
        except Exception:  # noqa: BLE001
            return real_wait(self, *args, **kwargs)
        try:
            result = real_wait(self, *args, **kwargs) if args or kwargs else real_wait(self)
        except BaseException:
            end(_STATUS_RAISED, 0)
            raise
        end(_STATUS_RETURNED, 0)
        return result

    wait._colabtrace_collective = True
    wait.__wrapped__ = real_wait  # torch's own, as functools.update_wrapper keeps it
    # The pass-through in C (entry_module.cpp, wrap_wait): torch's blocking collectives
    # each call Work.wait() from inside the collective.
    # It carries no __wrapped__ (an instancemethod has no attributes of its own): torch's
    # own is _real_wait.
    global _real_wait
    _real_wait = real_wait
    fast = _module.wrap_wait(real_wait, wait) if _module is not None else None
    try:
        work.wait = fast if fast is not None else wait
    except (AttributeError, TypeError):
        pass


def _hook_ddp(ddp_module):
    global _torch_dir
    ddp = getattr(ddp_module, "DistributedDataParallel", None)
    real_forward = getattr(ddp, "forward", None)
    torch = sys.modules.get("torch")
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if real_forward is None or torch is None or c10d is None or _enter is None or \
            getattr(real_forward, "_colabtrace_ddp", False):
        return
    autograd = torch.autograd
    real_backward = getattr(autograd, "backward", None)
    if real_backward is None:
        return
    import functools

    _torch_dir = os.path.dirname(torch.__file__) + os.sep
    is_grad_enabled = torch.is_grad_enabled

    def forward(self, *args, **kwargs):
        global _ddp_pending
        try:
            if is_grad_enabled() and getattr(self, "require_backward_grad_sync", True):
                grads = _ddp_grads.get(id(self))
                if grads is None:
                    params = [p for p in self.module.parameters() if p.requires_grad]
                    grads = _ddp_grads[id(self)] = (
                        sum(p.numel() for p in params), params[0].dtype if params else None)
                _ddp_pending = (getattr(self, "process_group", None), grads[0], grads[1])
        except Exception:  # noqa: BLE001
            pass
        return real_forward(self, *args, **kwargs)

    inside, enter, end, getframe = _inside, _enter, _end, sys._getframe

    def backward(*args, **kwargs):
        global _ddp_pending
        pending = _ddp_pending
        if pending is None or inside():
            return real_backward(*args, **kwargs)
        _ddp_pending = None
        try:
            entry = _group_entry(c10d, pending[0])
            seq = _sequence(entry[0]) - entry[2] + 1 if entry[2] is not None else 0
            dtype = _dtype_id(pending[2]) if pending[2] is not None else 0
            enter(_OP_DDP_ALL_REDUCE | entry[1] << 8, seq, pending[1], dtype,
                  _where_id(_program_frame(getframe(1))))
        except Exception:  # noqa: BLE001
            return real_backward(*args, **kwargs)
        try:
            result = real_backward(*args, **kwargs)
        except BaseException:
            _end_collective(end, _STATUS_RAISED, entry, seq)
            raise
        _end_collective(end, _STATUS_RETURNED, entry, seq)
        return result

    functools.update_wrapper(forward, real_forward)
    forward._colabtrace_ddp = True
    functools.update_wrapper(backward, real_backward)
    ddp.forward = forward
    autograd.backward = backward


_STEP_HOOKS = (
    ("torch.optim.optimizer", _hook_optimizers),
    ("torch.utils.data.dataloader", _hook_dataloader),
    ("torch.utils.data._utils.worker", _hook_workers),
    ("torch.distributed.distributed_c10d", _hook_distributed),
    ("torch.nn.parallel.distributed", _hook_ddp),
)


def _install_step_hooks():
    """Hooks the torch modules that are loaded, and watches for those that are not yet."""
    global _step_auto
    if _step_auto is None:
        _step_auto = _shim_function("colabtrace_step_auto")
        if _step_auto is None:
            return  # no shim: nothing to record into
    for name, hook in _STEP_HOOKS:
        module = sys.modules.get(name)
        if module is not None:
            _hook_safely(hook, module)
        else:
            _watcher.watch(name, lambda module, hook=hook: _hook_safely(hook, module))


def _hook_safely(hook, module):
    try:
        hook(module)
    except Exception:  # noqa: BLE001
        pass


def _on_cuda_initialized(torch):
    try:
        memory = torch.cuda.memory
        try:  # PyTorch >= 2.1
            memory._record_memory_history(enabled="all", context="all", stacks="python",
                                          max_entries=_TORCH_MAX_ENTRIES)
        except TypeError:  # 2.0
            memory._record_memory_history(True, trace_alloc_max_entries=_TORCH_MAX_ENTRIES,
                                          trace_alloc_record_context=True)
        torch._C._cuda_attach_out_of_memory_observer(
            lambda device, alloc, device_alloc, device_free: _on_oom(
                torch, device, alloc, device_alloc, device_free))
    except Exception:  # noqa: BLE001
        pass


_oom_written = False


def _on_oom(torch, device, alloc, device_alloc, device_free):
    """Writes the allocator snapshot of the first out-of-memory error as JSON."""
    global _oom_written
    if _oom_written:
        return
    try:
        import json

        path = _side_file(".torch-snapshot.json")
        if path is None:
            return
        snapshot = torch.cuda.memory._snapshot()
        snapshot = dict(snapshot) if isinstance(snapshot, dict) else {"segments": snapshot}
        snapshot["colabtrace"] = {
            "pid": os.getpid(),
            "device": int(device),
            "requested_bytes": int(alloc),
            "device_allocated_bytes": int(device_alloc),
            "device_free_bytes": int(device_free),
        }
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(snapshot, f, default=repr)
        os.replace(tmp, path)
        _oom_written = True
    except Exception:  # noqa: BLE001
        pass


# ---- uncaught exceptions ------------------------------------------------------------------
# The shim's colabtrace_python_exception writes a PyException record (shim/python,
# include/colabtrace/format/records.h): how (below), the type as Python's traceback names
# it, str(exc) (the shim keeps its first 512 bytes), the traceback innermost frame first
# ("path:line in function", the innermost _EXCEPTION_FRAMES frames, at most
# _EXCEPTION_STACK_BYTES bytes, cut at a frame boundary) and the traceback's depth. Each
# hook records, then calls the hook it replaced and returns what that returned, with the
# frames of this module's own wrappers taken out of the traceback (a bare run has none):
# what the program prints and how it exits stay the same. SystemExit is an exit, not an
# exception, and is never recorded. A program that installs its own sys.excepthook later
# replaces ours (and whatever it chains to).

_EXCEPTION_MAIN_THREAD = 1  # format::PyExceptionHow::kMainThread
_EXCEPTION_THREAD = 2       # kThread
_EXCEPTION_PASSED_ON = 3    # kPassedOn: a DataLoader worker's, re-raised by the main process
_EXCEPTION_SPAWNED = 4      # kSpawned: a torch.multiprocessing.spawn process's function's
_EXCEPTION_FRAMES = 64      # format::kPyExceptionFrames
_EXCEPTION_STACK_BYTES = 4000  # under the shim's longest interned string (4096)

_THIS_FILE = __file__  # the frames of this module's wrappers
_record_exception_fn = None  # the shim's entry point, bound at the first exception (False: none)


def _exception_type_name(exc_type):
    """The class as Python's traceback prints it: "ValueError", "pkg.mod.Error"."""
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "<unknown>")
    module = getattr(exc_type, "__module__", None)
    if not isinstance(module, str):
        return "<unknown>." + str(name)
    if module in ("builtins", "__main__"):
        return str(name)
    return module + "." + str(name)


def _exception_stack(tb):
    """(text, depth): the traceback's frames innermost first, one per line."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        line = tb.tb_lineno
        if code.co_filename != _THIS_FILE:  # our own wrappers (the DataLoader's __next__)
            frames.append((code.co_filename, line if line is not None else 0, code.co_name))
        tb = tb.tb_next
    depth = len(frames)
    lines, size = [], 0
    for filename, line, function in reversed(frames[-_EXCEPTION_FRAMES:]):
        text = "%s:%d in %s" % (filename, line, function)
        size += len(text.encode("utf-8", "backslashreplace")) + 1
        if size > _EXCEPTION_STACK_BYTES:
            break
        lines.append(text)
    return "\n".join(lines), depth


def _record_exception(how, exc_type, value, tb):
    """Writes one PyException record. Never raises."""
    global _record_exception_fn
    try:
        # Only an exception class (a program may call the hook with anything: CPython's
        # test_sys does), and never SystemExit.
        if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)) or \
                issubclass(exc_type, SystemExit):
            return
        if _record_exception_fn is None:  # bound late: _ctypes costs about 1 ms to import
            _record_exception_fn = _shim_function("colabtrace_python_exception") or False
        if not _record_exception_fn:
            return
        try:
            message = str(value)
        except BaseException:  # noqa: BLE001 - what Python prints then
            message = "<exception str() failed>"
        raw = message.encode("utf-8", "backslashreplace")
        stack, depth = _exception_stack(tb)
        _record_exception_fn(how, _exception_type_name(exc_type).encode("utf-8", "backslashreplace"),
                             raw, len(raw), stack.encode("utf-8", "backslashreplace"), depth)
    except BaseException:  # noqa: BLE001 - never in the program's way
        pass


def _without_own_frames(tb):
    """(True, tb less the frames of this module's wrappers: the DataLoader iterator's
    __next__), or (False, None) when it holds none."""
    kept, own = [], False
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _THIS_FILE:
            own = True
        else:
            kept.append(tb)
        tb = tb.tb_next
    if not own:
        return False, None
    out = None
    for t in reversed(kept):
        out = type(t)(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return True, out


def _hide_own_frames(value, tb):
    """The traceback Python's hook prints without our wrappers' frames, as a bare run
    prints it: value's and its chained exceptions' tracebacks are replaced (Python prints
    value.__traceback__ over the tb it is given). Returns the tb to pass on."""
    try:
        seen, todo = set(), [value]
        while todo and len(seen) < 16:
            exc = todo.pop()
            if not isinstance(exc, BaseException) or id(exc) in seen:
                continue
            seen.add(id(exc))
            own, stripped = _without_own_frames(exc.__traceback__)
            if own:
                exc.__traceback__ = stripped
            todo += [exc.__cause__, exc.__context__]
        if tb is not None and isinstance(value, BaseException):
            own, stripped = _without_own_frames(tb)
            return stripped if own else tb
        return tb
    except Exception:  # noqa: BLE001
        return tb


def _install_excepthook():
    previous = sys.excepthook

    def excepthook(exc_type, value, tb):
        _record_exception(_EXCEPTION_MAIN_THREAD, exc_type, value, tb)
        return previous(exc_type, value, _hide_own_frames(value, tb))

    sys.excepthook = excepthook
    threading = sys.modules.get("threading")
    if threading is not None:
        _hook_safely(_hook_threading, threading)
    else:
        _watcher.watch("threading", lambda module: _hook_safely(_hook_threading, module))


def _hook_threading(threading):
    previous = getattr(threading, "excepthook", None)
    if previous is None:  # before 3.8
        return

    def excepthook(args):
        _record_exception(_EXCEPTION_THREAD, args.exc_type, args.exc_value, args.exc_traceback)
        _hide_own_frames(args.exc_value, args.exc_traceback)  # printed from exc_value
        return previous(args)

    threading.excepthook = excepthook


def _hook_worker_exceptions(utils):
    """In a DataLoader worker: torch's worker loop catches the dataset's exception and
    wraps it (torch._utils.ExceptionWrapper: its type and formatted traceback) for the
    main process, which raises it again. Records it there, as passed on."""
    wrapper_class = getattr(utils, "ExceptionWrapper", None)
    real_init = getattr(wrapper_class, "__init__", None)
    if real_init is None or getattr(real_init, "_colabtrace_records", False):
        return

    def __init__(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        try:
            info = args[0] if args else kwargs.get("exc_info")
            if info is None:
                info = sys.exc_info()
            _record_exception(_EXCEPTION_PASSED_ON, *info)
        except Exception:  # noqa: BLE001
            pass

    import functools  # loaded by torch already

    functools.update_wrapper(__init__, real_init)
    __init__._colabtrace_records = True
    wrapper_class.__init__ = __init__


def _hook_spawn(spawn):
    """In a process torch.multiprocessing.spawn started: torch's _wrap(fn, i, args, ...)
    catches fn's exception, hands the formatted traceback to the parent and calls
    sys.exit(1), so neither excepthook sees it. Records it, as spawned, from the SystemExit
    leaving _wrap: its __context__ is the exception torch caught, with the traceback torch
    printed (our frame is above it, and SystemExit is never printed). The spawn start
    method pickles _wrap by name: the wrapper takes its name and module, so the parent
    pickles it and the child finds it (this module hooks torch there too, before the
    unpickling looks it up)."""
    real_wrap = getattr(spawn, "_wrap", None)
    if real_wrap is None or getattr(real_wrap, "_colabtrace_records", False):
        return

    def _wrap(*args, **kwargs):
        try:
            return real_wrap(*args, **kwargs)
        except SystemExit as stop:
            caught = stop.__context__
            if isinstance(caught, Exception) and stop.code not in (None, 0):
                _record_exception(_EXCEPTION_SPAWNED, type(caught), caught, caught.__traceback__)
            raise

    import functools  # loaded by torch already

    functools.update_wrapper(_wrap, real_wrap)
    _wrap._colabtrace_records = True
    spawn._wrap = _wrap


def _install_spawn_hook():
    spawn = sys.modules.get("torch.multiprocessing.spawn")
    if spawn is not None:
        _hook_safely(_hook_spawn, spawn)
    else:
        _watcher.watch("torch.multiprocessing.spawn", lambda module: _hook_safely(_hook_spawn, module))


# ---- package versions at exit -------------------------------------------------------------

def _third_party_modules():
    """Top-level modules imported from outside the standard library."""
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    skip = {"__main__", "sitecustomize", "usercustomize"}
    return {name for name in list(sys.modules)
            if "." not in name and name not in stdlib and name not in skip
            and name not in sys.builtin_module_names}


def _distributions(wanted):
    """{module: (dist name, version)} for the modules in `wanted`, from the *.dist-info and
    *.egg-info folders on sys.path: names and versions from the folder names, top-level
    modules from the folder name or its top_level.txt. A few listdirs and small reads,
    where importlib.metadata would cost ~150 ms at every exit."""
    found, pending = {}, set(wanted)
    infos = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info") or n.endswith(".egg-info"):
                parts = n.rsplit(".", 1)[0].split("-")
                if len(parts) >= 2:
                    infos.append((os.path.join(entry or ".", n), parts[0], parts[1]))
    for path, name, version in infos:  # the common case: the module is named like the dist
        module = name.replace("-", "_").lower()
        if module in pending:
            found[module] = (name, version)
            pending.discard(module)
    for path, name, version in infos:
        if not pending:
            break
        try:
            with open(os.path.join(path, "top_level.txt"), encoding="utf-8") as f:
                tops = {line.strip() for line in f}
        except OSError:
            continue
        for module in tops & pending:
            found[module] = (name, version)
        pending -= tops
    return found


def _record_packages():
    try:
        modules = _third_party_modules()
        if not modules:
            return
        set_quiet = _shim_function("colabtrace_python_quiet")
        record = _shim_function("colabtrace_python_package")
        if set_quiet is None or record is None:
            return
        # The scan of installed distributions is the hook's work, not the program's: the
        # shim does not record this thread's calls meanwhile.
        quiet = set_quiet(1) == 0
        try:
            by_dist = {}
            for module, (name, version) in _distributions(modules).items():
                by_dist.setdefault((name, version), set()).add(module)
        finally:
            if quiet:
                set_quiet(0)
        for (name, version), mods in sorted(by_dist.items()):
            record(name.encode(), version.encode(), ",".join(sorted(mods)).encode())
    except Exception:  # noqa: BLE001
        pass


def _install():
    try:
        _restore_environment()
    except Exception:  # noqa: BLE001
        pass
    try:
        _install_excepthook()
    except Exception:  # noqa: BLE001
        pass
    if "torch" not in sys.modules:
        _watcher.watch("torch", _on_torch_imported)
    else:
        _on_torch_imported(sys.modules["torch"])
    import atexit

    atexit.register(_record_packages)


_install()
_chain_next_sitecustomize()
