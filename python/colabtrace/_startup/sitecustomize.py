"""colabtrace's Python start-up hook (imported by site.py as ``sitecustomize``).

Installed by ``colabtrace run`` and by ``COLABTRACE_PYTHON=1`` under the shim: the shim
puts this folder in front of PYTHONPATH. This module then

* undoes that: PYTHONPATH in os.environ (and so in every child) and sys.path are what
  they would have been without colabtrace;
* runs the next ``sitecustomize`` on sys.path, if there is one (Debian's, a
  virtualenv's, the user's), so chaining is invisible;
* once ``torch`` is imported and its CUDA state initialised, turns on PyTorch's bounded
  allocator history and attaches an out-of-memory observer that writes
  ``torch.cuda.memory._snapshot()`` as JSON next to the trace
  (``colabtrace.<prog>.<pid>.torch-snapshot.json``; never pickle);
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


def _shim_function(name):
    """The shim's entry point `name` (C int result), or None without the shim. Bound through
    _ctypes alone: `import ctypes` (the package, struct) cost 2-5 ms at every exit, where
    _ctypes costs about 1 ms. Arguments are ints and bytes (passed as char*)."""
    try:
        import _ctypes

        class _Int(_ctypes._SimpleCData):
            _type_ = "i"

        class _Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = _Int

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

class _TorchImportWatcher:
    """A meta-path finder that runs _on_torch_imported once `torch` has executed."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = None
        for finder in sys.meta_path:  # the finders after us decide
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
            _on_torch_imported(module)

        try:
            loader.exec_module = exec_then_hook
        except (AttributeError, TypeError):
            pass
        return spec


def _on_torch_imported(torch):
    try:
        if not hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):
            return  # a build without CUDA
        torch.cuda._lazy_call(lambda: _on_cuda_initialized(torch))
    except Exception:  # noqa: BLE001 - never break the program's import of torch
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
    if "torch" not in sys.modules:
        sys.meta_path.insert(0, _TorchImportWatcher())
    else:
        _on_torch_imported(sys.modules["torch"])
    import atexit

    atexit.register(_record_packages)


_install()
_chain_next_sitecustomize()
