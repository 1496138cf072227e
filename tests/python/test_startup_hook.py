"""The Python start-up hook (python/colabtrace/_startup/sitecustomize.py), end to end.

A fake `torch` package on PYTHONPATH stands in for PyTorch: it records what the hook
asks of it (allocator history, the OOM observer) and lets the program initialise "CUDA"
and raise a simulated OOM through the attached observer. A user sitecustomize on
PYTHONPATH proves chaining. Debian's CPU-only torch checks that a real torch program
prints exactly what it prints bare.
"""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
import unittest

import ctharness as h

PYTHON = "/usr/bin/python3.11"

FAKE_TORCH = {
    "torch/__init__.py": """\
        from . import _C, cuda
        __version__ = "0.0.fake"
        """,
    "torch/_C.py": """\
        import os
        observers = []
        if os.environ.get("FAKE_TORCH_CUDA") == "1":
            def _cuda_attach_out_of_memory_observer(cb):
                observers.append(cb)
        """,
    "torch/cuda/__init__.py": """\
        from . import memory
        _initialized = False
        _queued_calls = []
        def is_initialized():
            return _initialized
        def _lazy_call(fn, **kwargs):
            if _initialized:
                fn()
            else:
                _queued_calls.append(fn)
        def init():
            global _initialized
            _initialized = True
            for fn in _queued_calls:
                fn()
        """,
    "torch/cuda/memory.py": """\
        history_calls = []
        def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=0):
            history_calls.append({"enabled": enabled, "stacks": stacks, "max_entries": max_entries})
        def _snapshot():
            return {"segments": [{"device": 0, "address": 4096, "total_size": 20 << 20,
                                  "allocated_size": 12 << 20, "active_size": 12 << 20,
                                  "stream": 0, "segment_type": "large",
                                  "blocks": [
                                      {"address": 4096, "size": 6 << 20, "requested_size": 6 << 20,
                                       "state": "active_allocated",
                                       "frames": [{"filename": "train.py", "line": 7, "name": "step"}]},
                                      {"address": 4096 + (6 << 20), "size": 4 << 20,
                                       "requested_size": 0, "state": "inactive", "frames": []},
                                      {"address": 4096 + (10 << 20), "size": 6 << 20,
                                       "requested_size": 6 << 20, "state": "active_allocated",
                                       "frames": []},
                                      {"address": 4096 + (16 << 20), "size": 4 << 20,
                                       "requested_size": 0, "state": "inactive", "frames": []}]}],
                    "device_traces": [[]]}
        """,
}

USER_SITECUSTOMIZE = """\
    import os
    os.environ["USER_SITECUSTOMIZE_RAN"] = "yes"
    """

PROGRAM = """\
    import os, sys, json
    import torch
    torch.cuda.init()
    for cb in torch._C.observers:
        cb(0, 8 << 20, 12 << 20, 1 << 20)  # a simulated OOM: 8 MiB asked, 1 MiB free
    print(json.dumps({
        "history": torch.cuda.memory.history_calls,
        "observers": len(torch._C.observers),
        "user_sitecustomize": os.environ.get("USER_SITECUSTOMIZE_RAN"),
        "pythonpath": os.environ.get("PYTHONPATH"),
        "hook_on_path": any("_startup" in p for p in sys.path),
        "sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None),
    }, sort_keys=True))
    """


@unittest.skipUnless(os.path.exists(PYTHON), "needs Debian's CPython 3.11")
class StartupHookTest(h.TempDirTest):
    def setUp(self):
        super().setUp()
        self.lib = os.path.join(self.tmp, "lib")
        self.user = os.path.join(self.tmp, "user")
        for rel, text in FAKE_TORCH.items():
            path = os.path.join(self.lib, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        os.makedirs(self.user)
        with open(os.path.join(self.user, "sitecustomize.py"), "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(USER_SITECUSTOMIZE))
        self.prog = os.path.join(self.tmp, "prog.py")
        with open(self.prog, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(PROGRAM))
        self.pythonpath = self.lib + os.pathsep + self.user

    def run_prog(self, cuda: bool, hook: bool, preload: bool = True):
        env = {"PYTHONPATH": self.pythonpath, "FAKE_TORCH_CUDA": "1" if cuda else "0"}
        if hook:
            env["COLABTRACE_PYTHON"] = "1"
        return h.run_traced([PYTHON, "-B", self.prog], env=env, preload=preload)

    def test_hook_chains_enables_history_and_writes_snapshot_on_oom(self):
        run = self.run_prog(cuda=True, hook=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stderr, "")
        out = json.loads(run.stdout)
        self.assertEqual(out["history"], [{"enabled": "all", "stacks": "python", "max_entries": 20000}])
        self.assertEqual(out["observers"], 1)
        # Chained: the user's sitecustomize ran and is the one in sys.modules.
        self.assertEqual(out["user_sitecustomize"], "yes")
        self.assertEqual(out["sitecustomize"], os.path.join(self.user, "sitecustomize.py"))
        # The environment the program sees is the one it was given.
        self.assertEqual(out["pythonpath"], self.pythonpath)
        self.assertFalse(out["hook_on_path"])
        (trace,) = run.traces
        snap_path = trace[: -len(".ctrace")] + ".torch-snapshot.json"
        with open(snap_path, encoding="utf-8") as f:
            snap = json.load(f)
        self.assertEqual(snap["colabtrace"]["requested_bytes"], 8 << 20)
        self.assertEqual(snap["colabtrace"]["device_free_bytes"], 1 << 20)
        self.assertEqual(len(snap["segments"][0]["blocks"]), 4)
        self.assertEqual(os.stat(snap_path).st_mode & 0o777, 0o600)
        # The analyzer reads it: 8 MiB free in two 4 MiB split blocks + 1 MiB on the
        # device >= 8 MiB asked, but no block holds 8 MiB: fragmentation.
        rep = h.report(trace)
        ts = h.by_pid(rep)[int(snap["colabtrace"]["pid"])]["python"]["torch_snapshot"]
        self.assertEqual(ts["verdict"], "fragmentation")
        self.assertEqual(ts["largest_free_block"], 4 << 20)
        self.assertEqual(ts["inactive_split_blocks"], 2)
        self.assertEqual(ts["inactive_split_bytes"], 8 << 20)
        self.assertEqual(ts["reserved_bytes"], 20 << 20)
        self.assertEqual(ts["allocated_bytes"], 12 << 20)

    def test_no_cuda_changes_nothing(self):
        bare = self.run_prog(cuda=False, hook=False, preload=False)
        run = self.run_prog(cuda=False, hook=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual((run.stdout, run.stderr), (bare.stdout, bare.stderr))
        self.assertEqual(json.loads(run.stdout)["history"], [])
        self.assertEqual([f for f in os.listdir(run.out_dir) if f.endswith(".json")], [])

    def test_pythonpath_unset_empty_or_set_is_kept(self):
        # The shim puts the hook's folder in front of PYTHONPATH and the hook takes it out
        # again: the program sees PYTHONPATH (unset, empty, or a value) and sys.path as it
        # would bare. An empty PYTHONPATH adds nothing to sys.path, where "DIR:" would
        # add the working directory ('').
        show = "import json, os, sys; print(json.dumps([os.environ.get('PYTHONPATH'), sys.path]))"
        for value in (None, "", self.user):
            with self.subTest(pythonpath=value):
                argv = ["env", "-u" if value is None else f"PYTHONPATH={value}"]
                argv += ["PYTHONPATH"] if value is None else []
                argv += [PYTHON, "-c", show]
                bare = h.run_traced(argv, preload=False)
                run = h.run_traced(argv, env={"COLABTRACE_PYTHON": "1"})
                self.assertEqual((run.returncode, run.stderr), (0, ""), run.stderr)
                self.assertEqual(json.loads(run.stdout), json.loads(bare.stdout))
                self.assertEqual(json.loads(run.stdout)[0], value)

    def test_interpreter_that_skips_the_hook_keeps_pythonpath(self):
        # -E and -I ignore PYTHONPATH and -S skips site (which imports sitecustomize): the
        # hook never runs, so the shim leaves PYTHONPATH alone. The program and the child
        # it starts see what they would bare (CPython's test helpers start every child
        # with -I).
        child = "import os; print(repr(os.environ.get('PYTHONPATH')))"
        show = (f"import os, subprocess, sys; print(repr(os.environ.get('PYTHONPATH'))); "
                f"subprocess.run([sys.executable, '-c', {child!r}])")
        for flags in (["-I"], ["-E"], ["-S"], ["-Es"], ["-X", "utf8", "-I"]):
            for value in (None, "", self.user):
                with self.subTest(flags=flags, pythonpath=value):
                    argv = ["env", "-u" if value is None else f"PYTHONPATH={value}"]
                    argv += ["PYTHONPATH"] if value is None else []
                    argv += [PYTHON, *flags, "-c", show]
                    bare = h.run_traced(argv, preload=False)
                    run = h.run_traced(argv, env={"COLABTRACE_PYTHON": "1"})
                    self.assertEqual((run.returncode, run.stderr), (0, ""), run.stderr)
                    self.assertEqual(run.stdout, bare.stdout)
                    self.assertEqual(run.stdout.splitlines(), [repr(value)] * 2)

    def test_without_flag_no_hook(self):
        run = self.run_prog(cuda=True, hook=False)
        self.assertEqual(json.loads(run.stdout)["history"], [])

    def test_packages_recorded_at_exit(self):
        # A real distribution: numpy from Debian's python3-numpy.
        run = h.run_traced([PYTHON, "-c", "import numpy"], env={"COLABTRACE_PYTHON": "1"})
        self.assertEqual(run.returncode, 0, run.stderr)
        import_version = subprocess.run(
            [PYTHON, "-c", "import importlib.metadata as m; print(m.version('numpy'))"],
            capture_output=True, text=True, check=True).stdout.strip()
        (trace,) = run.traces
        rows = [r for r in h.records(trace, "py_package") if r["name"] == "numpy"]
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["version"], rows[0]["modules"]), (import_version, "numpy"))
        rep = h.report(trace)
        pkgs = {p["name"]: p for p in rep["python"]["packages"]}
        self.assertEqual(pkgs["numpy"]["version"], import_version)
        # The hook's own scan of the installed distributions is not recorded as the
        # program's I/O (it reads every *.dist-info/METADATA it finds).
        self.assertEqual([l for l in h.dump(trace) if ".dist-info" in l], [])

    def test_exit_records_packages_without_importing_ctypes(self):
        # `import ctypes` cost 2-5 ms at every traced Python exit (issue 12): the hook binds
        # the shim's entry points through _ctypes alone. -X importtime lists every import,
        # the exit hook's included. A third-party package of our own (it imports nothing)
        # gives the hook something to record.
        site = os.path.join(self.tmp, "site")
        os.makedirs(os.path.join(site, "ctfakepkg"))
        os.makedirs(os.path.join(site, "ctfakepkg-1.2.3.dist-info"))
        open(os.path.join(site, "ctfakepkg", "__init__.py"), "w", encoding="utf-8").close()
        run = h.run_traced([PYTHON, "-X", "importtime", "-c", "import ctfakepkg"],
                           env={"COLABTRACE_PYTHON": "1", "PYTHONPATH": site})
        self.assertEqual(run.returncode, 0, run.stderr)
        imported = {l.rsplit("|", 1)[1].strip() for l in run.stderr.splitlines()
                    if l.startswith("import time:") and "|" in l}
        self.assertIn("ctfakepkg", imported)
        self.assertNotIn("ctypes", imported)
        (trace,) = run.traces
        rows = [r for r in h.records(trace, "py_package") if r["name"] == "ctfakepkg"]
        self.assertEqual([(r["version"], r["modules"]) for r in rows], [("1.2.3", "ctfakepkg")])

    def test_real_cpu_torch_output_identical(self):
        code = "import torch; x = torch.arange(6).reshape(2, 3); print(x.sum().item(), torch.cuda.is_available())"
        bare = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=300)
        if bare.returncode != 0:
            self.skipTest("Debian's python3-torch is not installed")
        run = h.run_traced([h.CLI, "run", "-o", os.path.join(self.tmp, "run"), "--", PYTHON, "-c", code],
                           preload=False, timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertTrue(run.stdout.startswith(bare.stdout), (run.stdout, bare.stdout))
        # `colabtrace run` installed the hook by itself: the packages are in the trace.
        run_rep = h.report(os.path.join(self.tmp, "run"))
        self.assertIn("torch", {p["name"] for p in run_rep["python"]["packages"]})
        traced = h.run_traced([PYTHON, "-c", code], env={"COLABTRACE_PYTHON": "1"}, timeout=300)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr),
                         (bare.returncode, bare.stdout, bare.stderr))
        rep = h.report(*traced.traces)
        self.assertIn("torch", {p["name"] for p in rep["python"]["packages"]})


if __name__ == "__main__":
    unittest.main()
