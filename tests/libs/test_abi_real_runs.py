"""The abi.* findings on real runs (issue 9): no false alarms, exact causes.

Real programs load real libraries under the shim; `colabtrace report --format json` is
checked exactly: auditwheel-vendored copies are not duplicates (a CUDA library or
libstdc++ still is), abi.load-failed is info for an optional load the program handled and
an error when it matters, and a trace analyzed on another host gets no disk-based
evidence (COLABTRACE_ANALYZER_HOST_ID makes the analyzer another host, test-only)."""
import json
import os
import shutil
import subprocess
import unittest

import ctharness as h

LIBS = os.path.join(h.BUILD, "tests", "libs")
CTLOAD = h.test_bin("libs", "ctload")
VEND = os.path.join(LIBS, "vendored")
PLAIN = os.path.join(VEND, "ct_vend", "libct_vend.so.1")
HASHED_A = os.path.join(VEND, "ct_vend-a34b3233", "libct_vend-a34b3233.so.1")
HASHED_B = os.path.join(VEND, "ct_vend-040039e1", "libct_vend-040039e1.so.1")
FAKE_CUDART12 = os.path.join(LIBS, "fakecuda12", "libcudart.so.12")
VENDORED_CUDART = os.path.join(VEND, "cudart", "libcudart-1a2b3c4d.so.12")
DEP = os.path.join(LIBS, "origin", "deps", "libct_dep.so")
LOCALDEP = os.path.join(LIBS, "origin", "deps", "libct_localdep.so")
PLUGIN = os.path.join(LIBS, "origin", "libct_plugin.so")  # needs libct_localdep.so via $ORIGIN/deps
LIBSTDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
MISSING = "cannot open shared object file: No such file or directory"


def pyenv_shim():
    """The pyenv `python3` shim on PATH (a bash script), or None."""
    p = shutil.which("python3")
    if not p:
        return None
    with open(p, "rb") as f:
        head = f.read(4096)
    return p if head.startswith(b"#!") and b"pyenv" in head else None


class RealRunsTest(h.TempDirTest):
    def load(self, *ops, rc=0):
        r = h.run_traced([CTLOAD, *ops])
        self.assertEqual(r.returncode, rc, r.stderr)
        return r, h.report(*r.traces)

    def errors(self, rep):
        return [(f["id"], f["summary"]) for f in rep["findings"] if f["severity"] == "error"]

    # ---- abi.duplicate-library -----------------------------------------------------------

    def test_vendored_copies_are_not_duplicates(self):
        r, rep = self.load(f"open:{PLAIN}", f"open:{HASHED_A}", f"open:{HASHED_B}",
                           f"call:{PLAIN}:ct_which", f"call:{HASHED_A}:ct_which", f"call:{HASHED_B}:ct_which")
        # Three different files, all mapped at once, each answering for itself.
        self.assertEqual(r.stdout, f"open {PLAIN}: ok\nopen {HASHED_A}: ok\nopen {HASHED_B}: ok\n"
                         "call ct_which: ct_vend\ncall ct_which: ct_vend-a34b3233\ncall ct_which: ct_vend-040039e1\n")
        sonames = {l["path"]: l["soname"] for l in rep["libraries"] if l["ok"]}
        self.assertEqual([sonames[p] for p in (PLAIN, HASHED_A, HASHED_B)],
                         ["libct_vend.so.1", "libct_vend-a34b3233.so.1", "libct_vend-040039e1.so.1"])
        self.assertEqual(h.findings(rep, "abi.duplicate-library"), [])
        self.assertEqual(self.errors(rep), [])

    def test_vendored_cuda_copy_is_still_a_duplicate(self):
        r, rep = self.load(f"open:{FAKE_CUDART12}", f"open:{VENDORED_CUDART}")
        self.assertEqual(r.stdout, f"open {FAKE_CUDART12}: ok\nopen {VENDORED_CUDART}: ok\n")
        fs = h.findings(rep, "abi.duplicate-library")
        self.assertEqual(len(fs), 1, fs)
        self.assertEqual(fs[0]["severity"], "error")
        self.assertEqual((fs[0]["evidence"]["family"], fs[0]["evidence"]["library"]), ("cudart", "cudart"))
        self.assertEqual([c["path"] for c in fs[0]["evidence"]["copies"]], [FAKE_CUDART12, VENDORED_CUDART])

    @unittest.skipUnless(os.path.exists(LIBSTDCXX), "needs the system libstdc++")
    def test_vendored_libstdcxx_copy_is_still_a_duplicate(self):
        copy = os.path.join(self.tmp, "libstdc++-1a2b3c4d.so.6")
        shutil.copy(LIBSTDCXX, copy)
        r, rep = self.load(f"open:{LIBSTDCXX}", f"open:{copy}")
        self.assertEqual(r.stdout, f"open {LIBSTDCXX}: ok\nopen {copy}: ok\n")
        fs = h.findings(rep, "abi.duplicate-library")
        self.assertEqual(len(fs), 1, fs)
        self.assertEqual(fs[0]["evidence"]["family"], "libstdc++")
        self.assertEqual(sorted(c["path"] for c in fs[0]["evidence"]["copies"]), sorted([LIBSTDCXX, copy]))

    # ---- abi.load-failed severity ------------------------------------------------------------

    def test_optional_load_in_a_run_that_went_on_is_info(self):
        r, rep = self.load("open:libct_optional_plugin.so.1", f"open:{DEP}")
        self.assertEqual(r.stdout, f"open libct_optional_plugin.so.1: error libct_optional_plugin.so.1: {MISSING}\n"
                         f"open {DEP}: ok\n")
        f = h.findings(rep, "abi.load-failed")
        self.assertEqual([(x["severity"], x["evidence"]["requested"]) for x in f],
                         [("info", "libct_optional_plugin.so.1")])
        self.assertEqual(f[0]["evidence"]["severity_reason"],
                         "an optional load: the process went on and ended normally")
        self.assertEqual(self.errors(rep), [])

    def test_optional_load_then_the_process_failed_is_an_error(self):
        r, rep = self.load("open:libct_optional_plugin.so.1", "exit:3", rc=3)
        f = h.findings(rep, "abi.load-failed")
        self.assertEqual([x["severity"] for x in f], ["error"])
        self.assertEqual(f[0]["evidence"]["severity_reason"], "the process failed after this load failed")

    def test_missing_dt_needed_dependency_is_an_error(self):
        # The plugin is found, its DT_NEEDED libct_localdep.so is not (no deps/ beside it).
        plugin = os.path.join(self.tmp, "libct_plugin.so")
        shutil.copy(PLUGIN, plugin)
        r, rep = self.load(f"open:{plugin}")
        self.assertEqual(r.stdout, f"open {plugin}: error libct_localdep.so: {MISSING}\n")
        f = h.findings(rep, "abi.load-failed")
        self.assertEqual([x["severity"] for x in f], ["error"])
        self.assertEqual(f[0]["evidence"]["severity_reason"],
                         "the library was found but its dependency (DT_NEEDED) libct_localdep.so is missing")

    def test_cuda_family_probe_is_info_in_a_healthy_run_and_an_error_when_it_then_failed(self):
        # Issue 21: CuPy probes cuTENSOR and runs on without it. A healthy process (exit 0, no
        # failed GPU call) that went on without a CUDA-family library made an optional probe.
        r, rep = self.load("open:libcudnn.so.1234", "open:libcuda.so.1234")
        by_req = {x["evidence"]["requested"]: x for x in h.findings(rep, "abi.load-failed")}
        self.assertEqual(sorted(by_req), ["libcuda.so.1234", "libcudnn.so.1234"])
        self.assertEqual((by_req["libcudnn.so.1234"]["severity"], by_req["libcudnn.so.1234"]["evidence"]["severity_reason"]),
                         ("info", "an optional cudnn library: the process went on without it, ended normally and no "
                                  "GPU call failed"))
        self.assertEqual(by_req["libcuda.so.1234"]["severity"], "info")
        self.assertEqual(by_req["libcuda.so.1234"]["evidence"]["severity_reason"],
                         "no CUDA driver on this host and no GPU use recorded: a CPU-only run")
        r, rep = self.load("open:libcudnn.so.1234", "exit:3", rc=3)
        f = h.findings(rep, "abi.load-failed")
        self.assertEqual([(x["severity"], x["evidence"]["severity_reason"]) for x in f],
                         [("error", "the process failed after this load failed")])

    def test_version_probe_then_the_library_is_info(self):
        # cuDNN 9.19's way: libct_dep.so.1.2 (absent) before libct_dep.so, which loads.
        r, rep = self.load("open:libct_dep.so.1.2", f"open:{DEP}")
        self.assertEqual(r.stdout, f"open libct_dep.so.1.2: error libct_dep.so.1.2: {MISSING}\nopen {DEP}: ok\n")
        f = h.findings(rep, "abi.load-failed")
        self.assertEqual([(x["severity"], x["evidence"]["severity_reason"], x["evidence"]["loaded_later"]) for x in f],
                         [("info", "a version probe: the same library (libct_dep.so) was loaded", DEP)])

    @unittest.skipUnless(pyenv_shim(), "needs pyenv's python3 shim on PATH")
    def test_pyenv_shim_python3_has_no_error_findings(self):
        r = h.run_traced(["python3", "-c", "pass"])
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        rep = h.report(*r.traces)
        self.assertEqual(self.errors(rep), [])
        # bash's `enable -f .../pyenv-realpath.dylib` fails and pyenv falls back: info, with
        # the real error text.
        lf = h.findings(rep, "abi.load-failed")
        self.assertTrue(all(f["severity"] == "info" for f in lf), lf)
        self.assertTrue(any("pyenv-realpath.dylib" in f["evidence"]["requested"] for f in lf), lf)

    def bash_probe_then(self, tail):
        """A subshell probes an absent builtin (`enable -f`, as pyenv's shim does), then runs
        tail; its traced parent reaps it (so its end is known after an untraced exec too).
        The abi.load-failed findings of the probe."""
        r = h.run_traced(["bash", "-c", "(enable -f /nonexistent/libct_probe.so x 2>/dev/null; " + tail + "); exit $?"])
        rep = h.report(*r.traces)
        return r, [(f["severity"], f["evidence"]["severity_reason"]) for f in h.findings(rep, "abi.load-failed")
                   if f["evidence"]["requested"] == "/nonexistent/libct_probe.so"]

    def test_a_failed_load_before_an_exec_is_not_blamed_for_the_next_programs_exit(self):
        # numpy's suite runs `python3 -c 'import blah'` through pyenv's bash shim: bash's
        # probe failed, bash exec'd python, python exited 1. The exit is python's, from an
        # image that never made the load (it was an error).
        for tail, rc in ((f"exec {h.SYSTEM_PYTHON} -c 'raise SystemExit(1)'", 1),
                         (f"exec {h.built_test_program('core', 'ct_exit_static')} exit 4", 4)):
            r, lf = self.bash_probe_then(tail)
            self.assertEqual(r.returncode, rc, r.stderr)
            self.assertEqual(lf, [("info", "an optional load: the image that made it went on and exec'd another "
                                           "program")], tail)

    def test_a_failed_load_by_the_image_that_then_fails_is_an_error(self):
        r, lf = self.bash_probe_then("exit 3")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(lf, [("error", "the process failed after this load failed")])

    # ---- another host ------------------------------------------------------------------------

    def report_as(self, host_id, *traces):
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        if host_id:
            env["COLABTRACE_ANALYZER_HOST_ID"] = host_id
        p = subprocess.run([h.CLI, "report", "--format", "json", *traces], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return json.loads(p.stdout)

    @unittest.skipUnless(shutil.which("cc"), "needs cc")
    def test_jit_extension_removed_after_loading_is_not_stale_and_rebuilt_is(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "py", "jit_extension.py")
        for mode, stale, on_disk in (("cleanup", 0, "removed during the run"),
                                     ("rebuild", 1, "changed during the run")):
            src = os.path.join(self.tmp, mode)
            os.makedirs(src)
            r = h.run_traced([h.SYSTEM_PYTHON, script, src, mode], out_dir=os.path.join(self.tmp, "out-" + mode))
            self.assertEqual((r.returncode, r.stdout), (0, "[42, 42]\n"), r.stderr)
            py = [t for t in r.traces if h.records(t, "lib_check")]
            self.assertEqual(len(py), 1, mode)  # only the python process saw its object change
            (check,) = h.records(py[0], "lib_check")
            self.assertTrue(check["path"].endswith("/libjit_ext.so"), check)
            rep = h.report(*r.traces)
            rows = [l for l in rep["libraries"] if l["path"] == check["path"]]
            self.assertEqual([l["on_disk"] for l in rows], [on_disk], mode)
            found = h.findings(rep, "abi.stale-library")
            self.assertEqual([f["evidence"]["path"] for f in found], [check["path"]] * stale, mode)

    def test_disk_checks_are_skipped_for_a_trace_from_another_host(self):
        lib = os.path.join(self.tmp, "libct_swapped.so")
        shutil.copy(DEP, lib)
        # The file is swapped during the run and the process is killed before it exits, so
        # the shim never re-checks it: only the file on disk tells (changed during the run).
        r = h.run_traced([CTLOAD, f"open:{lib}", f"replace:{LOCALDEP}:{lib}", "sleep:300", "killself"],
                         env={"COLABTRACE_SAMPLE_MS": "50"})
        self.assertEqual(r.returncode, -9, r.stderr)
        self.assertEqual(h.records(r.traces[0], "lib_check"), [])
        host = {x["key"]: x["value"] for x in h.records(r.traces[0], "host_info")}
        with open("/proc/sys/kernel/random/boot_id") as f:
            self.assertEqual(host["boot_id"], f.read().strip())
        if os.path.exists("/etc/machine-id"):
            with open("/etc/machine-id") as f:
                self.assertEqual(host["machine_id"], f.read().strip())
        # Analyzed here: the swap is a true abi.stale-library.
        here = self.report_as(None, *r.traces)
        stale = h.findings(here, "abi.stale-library")
        self.assertEqual([f["evidence"]["path"] for f in stale], [lib])
        self.assertEqual([l["on_disk"] for l in here["libraries"] if l["path"] == lib], ["changed during the run"])
        self.assertNotIn("disk_checks", here["processes"][0]["libraries"])
        # Analyzed on "another host": this machine's file says nothing about the traced one.
        there = self.report_as("another-host-0123", *r.traces)
        self.assertEqual(h.findings(there, "abi.stale-library"), [])
        self.assertEqual([l["on_disk"] for l in there["libraries"] if l["path"] == lib], ["unknown"])
        self.assertEqual(there["processes"][0]["libraries"]["disk_checks"],
                         "skipped: trace from another host (boot_id differs)")

    def test_load_failed_searches_no_disk_for_a_trace_from_another_host(self):
        d = os.path.join(self.tmp, "late")
        os.makedirs(d)
        shutil.copy(DEP, os.path.join(d, "libct_late.so.3"))
        r = h.run_traced([CTLOAD, f"setenv:LD_LIBRARY_PATH={d}", "open:libct_late.so.3"])
        here = h.findings(self.report_as(None, *r.traces), "abi.load-failed")
        self.assertEqual([c["path"] for c in here[0]["evidence"]["copies_found"]], [os.path.join(d, "libct_late.so.3")])
        there = h.findings(self.report_as("another-host-0123", *r.traces), "abi.load-failed")
        self.assertEqual(there[0]["evidence"]["copies_found"], [])
        self.assertEqual(there[0]["evidence"]["disk_checks"], "skipped: trace from another host (boot_id differs)")


if __name__ == "__main__":
    unittest.main()
