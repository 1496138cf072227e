"""Library loads and the ABI report, end to end: real programs (ctload) load real and
stand-in libraries under the shim; the records and `colabtrace report --format json`
are checked exactly (libraries[], abi.* findings, gpu.coverage-incomplete)."""
import os
import shutil
import subprocess
import unittest

import ctharness as h

LIBS = os.path.join(h.BUILD, "tests", "libs")
CTLOAD = h.test_bin("libs", "ctload")
CUDA_LIB64 = "/usr/local/cuda/lib64"
REAL_CUDART13 = os.path.join(CUDA_LIB64, "libcudart.so.13")
REAL_CUBLASLT13 = os.path.join(CUDA_LIB64, "libcublasLt.so.13")
FAKE_CUDART12 = os.path.join(LIBS, "fakecuda12", "libcudart.so.12")
CUDA_USER = os.path.join(LIBS, "cudauser", "libct_cuda_user.so")
DEP = os.path.join(LIBS, "origin", "deps", "libct_dep.so")
LOCALDEP = os.path.join(LIBS, "origin", "deps", "libct_localdep.so")
SM80 = os.path.join(LIBS, "fatbin", "libct_sm80.so")
SM80_DATA = os.path.join(LIBS, "fatbin", "libct_sm80_data.so")  # .nv_fatbin, no host code
CUDA_APP = h.test_bin("libs", "ct_cuda_app")
SIMCUDA = os.path.join(h.BUILD, "simcuda")
MISSING = "cannot open shared object file: No such file or directory"


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


class AbiTest(h.TempDirTest):
    def load(self, *ops, env=None, extra=()):
        """Runs ctload under the shim; returns (run, report of all its traces)."""
        r = h.run_traced([CTLOAD, *ops], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        rep = h.report(*r.traces, extra=extra)
        return r, rep

    def only(self, rep, fid, pid=None):
        fs = [f for f in h.findings(rep, fid) if pid is None or f["pid"] == pid]
        self.assertEqual(len(fs), 1, [f["summary"] for f in h.findings(rep, fid)])
        return fs[0]

    def rows(self, rep, path):
        return [l for l in rep["libraries"] if l["path"] == path]

    # ---- the inventory ----------------------------------------------------------------

    def test_inventory_records_startup_dlopen_dependency_and_unload(self):
        r, rep = self.load(f"open:{CUDA_USER}", f"close:{CUDA_USER}")
        self.assertEqual(r.stdout, f"open {CUDA_USER}: ok\nclose {CUDA_USER}: 0\n")
        self.assertEqual(len(r.traces), 1)
        loads = h.records(r.traces[0], "lib_load")
        startup = [x for x in loads if x["api"] == "0"]
        self.assertEqual(startup[0]["path"], CTLOAD)  # the executable comes first
        self.assertIn("/lib/x86_64-linux-gnu/libc.so.6", [x["path"] for x in startup])
        shim = [x for x in startup if x["path"] == h.SHIM]
        self.assertEqual(len(shim), 1)
        self.assertEqual(shim[0]["requester"], "LD_PRELOAD")
        calls = [x for x in loads if x["api"] == "1"]
        self.assertEqual(len(calls), 1)
        c = calls[0]
        self.assertEqual((c["requested"], c["path"], c["requester"], c["ok"], c["fresh"], c["flags"]),
                         (CUDA_USER, CUDA_USER, CTLOAD, "1", "1", "2"))
        self.assertEqual(c["soname"], "libct_cuda_user.so")
        self.assertEqual(c["build_id"], build_id(CUDA_USER))
        st = os.stat(CUDA_USER)
        self.assertEqual((int(c["dev"]), int(c["ino"]), int(c["size"]), int(c["mtime_ns"])),
                         (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        deps = [x for x in loads if x["api"] == "3"]
        self.assertEqual([(x["path"], x["requested"], x["requester"]) for x in deps],
                         [(FAKE_CUDART12, "libcudart.so.12", CUDA_USER)])
        unloads = h.records(r.traces[0], "lib_unload")
        self.assertEqual(sorted((u["api"], u["path"]) for u in unloads),
                         sorted([("0", "-"), ("1", CUDA_USER), ("1", FAKE_CUDART12)]))
        # libraries[]
        row = self.rows(rep, CUDA_USER)
        self.assertEqual(len(row), 1)
        row = row[0]
        self.assertEqual((row["pid"], row["soname"], row["build_id"], row["loaded_by"], row["requested"],
                          row["how"], row["flags"], row["ok"], row["unloaded"], row["on_disk"]),
                         (rep["processes"][0]["pid"], "libct_cuda_user.so", build_id(CUDA_USER), CTLOAD,
                          CUDA_USER, "dlopen", "RTLD_NOW", True, True, "same"))
        dep = self.rows(rep, FAKE_CUDART12)[0]
        self.assertEqual((dep["how"], dep["loaded_by"], dep["requested"], dep["family"], dep["cuda_major"]),
                         ("dependency", CUDA_USER, "libcudart.so.12", "cudart", 12))
        self.assertEqual(rep["processes"][0]["libraries"],
                         {"loaded": len([l for l in rep["libraries"] if l["ok"]]), "failed_loads": 0,
                          "dlclose_calls": 1})

    def test_fork_child_trace_has_the_inherited_inventory(self):
        r, rep = self.load(f"open:{CUDA_USER}", "fork", f"open:{DEP}")
        self.assertEqual(len(r.traces), 2)
        pids = {p["pid"]: p for p in rep["processes"]}
        child = [p for p in rep["processes"] if p["origin"] == "fork"][0]
        rows = [l for l in rep["libraries"] if l["pid"] == child["pid"]]
        cu = [l for l in rows if l["path"] == CUDA_USER]
        self.assertEqual([(l["how"], l["loaded_by"], l["flags"]) for l in cu], [("dlopen", CTLOAD, "RTLD_NOW")])
        self.assertEqual(len([l for l in rows if l["path"] == DEP]), 1)
        parent = [p for p in pids.values() if p["origin"] != "fork"][0]
        self.assertEqual([l for l in rep["libraries"] if l["pid"] == parent["pid"] and l["path"] == DEP], [])

    # ---- findings ---------------------------------------------------------------------

    @unittest.skipUnless(os.path.exists(REAL_CUDART13), "needs the CUDA 13 toolkit")
    def test_mixed_cuda_majors(self):
        r, rep = self.load(f"open:{REAL_CUDART13}", f"open:{FAKE_CUDART12}")
        self.assertEqual(r.stdout, f"open {REAL_CUDART13}: ok\nopen {FAKE_CUDART12}: ok\n")
        f = self.only(rep, "abi.mixed-cuda-majors")
        self.assertEqual(f["severity"], "error")
        majors = f["evidence"]["majors"]
        self.assertEqual(sorted(majors), ["12", "13"])
        self.assertEqual([l["path"] for l in majors["12"]], [FAKE_CUDART12])
        self.assertEqual([l["path"] for l in majors["13"]], [REAL_CUDART13])
        self.assertEqual(self.rows(rep, REAL_CUDART13)[0]["cuda_major"], 13)
        # Both are cudart: one library loaded from two files as well.
        d = self.only(rep, "abi.duplicate-library")
        self.assertEqual([c["path"] for c in d["evidence"]["copies"]], [REAL_CUDART13, FAKE_CUDART12])

    def test_duplicate_library_same_soname_two_directories(self):
        a = os.path.join(LIBS, "dupA", "libct_dup.so.1")
        b = os.path.join(LIBS, "dupB", "libct_dup.so.1")
        r, rep = self.load(f"open:{a}", f"open:{b}", f"call:{a}:ct_which", f"call:{b}:ct_which")
        self.assertEqual(r.stdout, f"open {a}: ok\nopen {b}: ok\ncall ct_which: dup A\ncall ct_which: dup B\n")
        f = self.only(rep, "abi.duplicate-library")
        self.assertEqual(f["severity"], "error")
        self.assertEqual(f["evidence"]["library"], "ct_dup")
        self.assertEqual([(c["path"], c["soname"], c["loaded_by"]) for c in f["evidence"]["copies"]],
                         [(a, "libct_dup.so.1", CTLOAD), (b, "libct_dup.so.1", CTLOAD)])
        self.assertEqual(h.findings(rep, "abi.mixed-cuda-majors"), [])

    def test_no_duplicate_when_the_first_copy_was_closed(self):
        a = os.path.join(LIBS, "dupA", "libct_dup.so.1")
        b = os.path.join(LIBS, "dupB", "libct_dup.so.1")
        _, rep = self.load(f"open:{a}", f"close:{a}", f"open:{b}")
        self.assertEqual(h.findings(rep, "abi.duplicate-library"), [])
        self.assertEqual([l["unloaded"] for l in self.rows(rep, a)], [True])

    def test_load_failed_names_the_copy_in_site_packages(self):
        sp = os.path.join(self.tmp, "lib", "python3.11", "site-packages")
        torch_lib = os.path.join(sp, "torch", "lib")
        cudnn_lib = os.path.join(sp, "nvidia", "cudnn", "lib")
        os.makedirs(torch_lib)
        os.makedirs(cudnn_lib)
        fake_torch = os.path.join(torch_lib, "libct_fake_torch.so")
        shutil.copy(DEP, fake_torch)
        copy = os.path.join(cudnn_lib, "libcudnn.so.8")
        shutil.copy(LOCALDEP, copy)
        r, rep = self.load(f"open:{fake_torch}", "open:libcudnn.so.8")
        self.assertEqual(r.stdout, f"open {fake_torch}: ok\nopen libcudnn.so.8: error libcudnn.so.8: {MISSING}\n")
        f = self.only(rep, "abi.load-failed")
        # ctload went on and exited 0 with no failed GPU call: an optional probe (issue 21).
        self.assertEqual((f["severity"], f["evidence"]["severity_reason"]),
                         ("info", "an optional cudnn library: the process went on without it, ended normally and "
                                  "no GPU call failed"))
        ev = f["evidence"]
        self.assertEqual((ev["requested"], ev["requester"], ev["error"], ev["count"]),
                         ("libcudnn.so.8", CTLOAD, f"libcudnn.so.8: {MISSING}", 1))
        self.assertEqual(ev["copies_found"], [{"path": copy, "found_via": "site-packages"}])
        self.assertIn(copy, f["advice"])
        row = [l for l in rep["libraries"] if not l["ok"]]
        self.assertEqual([(l["requested"], l["loaded_by"], l["error"]) for l in row],
                         [("libcudnn.so.8", CTLOAD, f"libcudnn.so.8: {MISSING}")])

    def test_load_failed_after_ld_library_path_changed_at_run_time(self):
        d = os.path.join(self.tmp, "late")
        os.makedirs(d)
        shutil.copy(DEP, os.path.join(d, "libct_late.so.3"))
        r, rep = self.load(f"setenv:LD_LIBRARY_PATH={d}", "open:libct_late.so.3", "open:libct_late.so.3")
        self.assertEqual(r.stdout, "setenv LD_LIBRARY_PATH\n" + f"open libct_late.so.3: error libct_late.so.3: {MISSING}\n" * 2)
        f = self.only(rep, "abi.load-failed")
        self.assertEqual(f["severity"], "warning")  # the program wanted it: it set the path
        self.assertEqual(f["evidence"]["count"], 2)
        self.assertEqual(f["evidence"]["copies_found"],
                         [{"path": os.path.join(d, "libct_late.so.3"), "found_via": "LD_LIBRARY_PATH set at run time"}])
        self.assertIn("only when a process starts", f["advice"])

    def test_symbol_version_missing(self):
        old = os.path.join(LIBS, "prov_old", "libct_prov.so.1")
        new = os.path.join(LIBS, "prov_new", "libct_prov.so.1")
        consumer = os.path.join(LIBS, "consumer", "libct_consumer.so")
        # The old provider is loaded first; LD_LIBRARY_PATH names the directory of the new one.
        r, rep = self.load(f"open:{old}", f"open:{consumer}",
                           env={"LD_LIBRARY_PATH": os.path.dirname(new)})
        err = f"{old}: version `PROV_2.0' not found (required by {consumer})"
        self.assertEqual(r.stdout, f"open {old}: ok\nopen {consumer}: error {err}\n")
        f = self.only(rep, "abi.symbol-version-missing")
        ev = f["evidence"]
        self.assertEqual((ev["version"], ev["provider"], ev["required_by"], ev["error"]),
                         ("PROV_2.0", old, consumer, err))
        self.assertEqual(ev["provider_versions"], ["PROV_1.0"])
        self.assertEqual(sorted(ev["required_versions"]), ["libct_prov.so.1:PROV_1.0", "libct_prov.so.1:PROV_2.0"])
        self.assertEqual(ev["copies_with_version"], [new])
        self.assertIn("PROV_2.0", f["summary"])
        self.assertEqual(self.only(rep, "abi.load-failed")["evidence"]["error"], err)
        # Control: with the new provider the consumer loads and nothing is reported.
        r, rep = self.load(f"open:{new}", f"open:{consumer}")
        self.assertEqual(r.stdout, f"open {new}: ok\nopen {consumer}: ok\n")
        self.assertEqual(h.findings(rep, "abi.symbol-version-missing"), [])

    def test_stale_library_replaced_during_the_run(self):
        lib = os.path.join(self.tmp, "libct_stale.so")
        shutil.copy(DEP, lib)
        loaded_id = build_id(lib)
        r, rep = self.load(f"open:{lib}", f"replace:{LOCALDEP}:{lib}")
        self.assertEqual(r.stdout, f"open {lib}: ok\nreplace {lib}: ok\n")
        checks = h.records(r.traces[0], "lib_check")
        self.assertEqual([(c["path"], c["when"]) for c in checks], [(lib, "1")])
        self.assertEqual(int(checks[0]["ino"]), os.stat(lib).st_ino)
        f = self.only(rep, "abi.stale-library")
        self.assertEqual(f["severity"], "warning")
        ev = f["evidence"]
        self.assertEqual((ev["path"], ev["loaded_build_id"]), (lib, loaded_id))
        self.assertEqual([c["seen_at"] for c in ev["changes"]], ["exit"])
        self.assertEqual(ev["on_disk_now"]["build_id"], build_id(LOCALDEP))
        self.assertEqual(self.rows(rep, lib)[0]["on_disk"], "changed during the run")
        # Control: not replaced, not reported.
        shutil.copy(DEP, lib)
        _, rep = self.load(f"open:{lib}")
        self.assertEqual(h.findings(rep, "abi.stale-library"), [])

    def test_stale_library_seen_at_a_later_load(self):
        lib = os.path.join(self.tmp, "libct_stale.so")
        shutil.copy(DEP, lib)
        # The shim re-checks loaded files at a later load at most every 2 s.
        r, rep = self.load(f"open:{lib}", f"replace:{LOCALDEP}:{lib}", "sleep:2100", f"open:{CUDA_USER}")
        checks = h.records(r.traces[0], "lib_check")
        self.assertEqual([(c["path"], c["when"]) for c in checks], [(lib, "0")])  # not again at exit
        f = self.only(rep, "abi.stale-library")
        self.assertEqual([c["seen_at"] for c in f["evidence"]["changes"]], ["later load"])

    @unittest.skipUnless(os.path.exists(SM80), "needs nvcc (fatbin fixture)")
    def test_no_kernel_image_for_uncovered_arch(self):
        r = h.run_traced([CTLOAD, f"open:{SM80}"])
        self.assertEqual(r.stdout, f"open {SM80}: ok\n", r.stderr)
        rep = h.report(*r.traces, extra=("--gpu-arch", "sm_70"))
        f = self.only(rep, "abi.no-kernel-image")
        ev = f["evidence"]
        self.assertEqual((ev["gpu_arch"], ev["arch_source"]), ("sm_70", "--gpu-arch"))
        self.assertEqual([(l["path"], l["device_code"]) for l in ev["libraries"]], [(SM80, ["sm_80"])])
        for covered in ("sm_80", "sm_86", "sm_89"):
            rep = h.report(*r.traces, extra=("--gpu-arch", covered))
            self.assertEqual(h.findings(rep, "abi.no-kernel-image"), [], covered)
        for uncovered in ("sm_75", "sm_90", "sm_100"):
            rep = h.report(*r.traces, extra=("--gpu-arch", uncovered))
            self.assertEqual(len(h.findings(rep, "abi.no-kernel-image")), 1, uncovered)

    @unittest.skipUnless(os.path.exists(REAL_CUBLASLT13), "needs libcublasLt.so.13")
    def test_real_cublaslt_arch_coverage(self):
        r = h.run_traced([CTLOAD, f"open:{REAL_CUBLASLT13}"])
        self.assertEqual(r.stdout, f"open {REAL_CUBLASLT13}: ok\n", r.stderr)
        rep = h.report(*r.traces, extra=("--gpu-arch", "sm_70"))
        f = self.only(rep, "abi.no-kernel-image")
        self.assertEqual([l["path"] for l in f["evidence"]["libraries"]], [REAL_CUBLASLT13])
        self.assertNotIn("sm_70", f["evidence"]["libraries"][0]["device_code"])
        row = self.rows(rep, REAL_CUBLASLT13)[0]
        self.assertEqual((row["family"], row["cuda_major"]), ("cublasLt", 13))
        for covered in ("sm_90", "sm_80"):
            rep = h.report(*r.traces, extra=("--gpu-arch", covered))
            self.assertEqual(h.findings(rep, "abi.no-kernel-image"), [], covered)

    @unittest.skipUnless(os.path.exists(REAL_CUDART13), "needs the CUDA 13 toolkit")
    def test_system_vs_pip(self):
        lib = os.path.join(self.tmp, "lib", "python3.11", "site-packages", "nvidia", "cuda_runtime", "lib")
        os.makedirs(lib)
        pip_copy = os.path.join(lib, "libcudart.so.12")
        shutil.copy(FAKE_CUDART12, pip_copy)
        _, rep = self.load(f"open:{REAL_CUDART13}", f"open:{pip_copy}")
        f = self.only(rep, "abi.system-vs-pip")
        self.assertEqual(f["evidence"]["family"], "cudart")
        self.assertEqual([l["path"] for l in f["evidence"]["pip"]], [pip_copy])
        self.assertEqual([l["path"] for l in f["evidence"]["system"]], [REAL_CUDART13])

    @unittest.skipUnless(os.path.exists(CUDA_APP), "needs the simulated CUDA runtime")
    def test_driver_too_old(self):
        env = {"LD_LIBRARY_PATH": SIMCUDA, "SIMCUDA_DRIVER_VERSION": "12040"}
        r = h.run_traced([CUDA_APP], env=env)
        self.assertEqual(r.stdout, "cudaMalloc: 35\n", r.stderr)
        rep = h.report(*r.traces)
        f = self.only(rep, "abi.driver-too-old")
        self.assertEqual(f["summary"],
                         "the CUDA runtime 13.0 (libcudart.so.13) is newer than the driver supports (CUDA 12.4)")
        self.assertEqual([(v["runtime"], v["driver"]) for v in f["evidence"]["versions"]], [("13.0", "12.4")])
        self.assertEqual([(e["api"], e["rc"]) for e in f["evidence"]["errors"]], [("cudaMalloc", 35)])
        # A driver as new as the runtime: nothing.
        env["SIMCUDA_DRIVER_VERSION"] = "13000"
        r = h.run_traced([CUDA_APP], env=env)
        self.assertEqual(r.stdout, "cudaMalloc: 0\n", r.stderr)
        self.assertEqual(h.findings(h.report(*r.traces), "abi.driver-too-old"), [])

    @unittest.skipUnless(os.path.exists(CUDA_APP) and os.path.exists(SM80_DATA),
                         "needs the simulated CUDA runtime and nvcc")
    def test_no_kernel_image_for_the_recorded_device(self):
        env = {"LD_LIBRARY_PATH": SIMCUDA, "SIMCUDA_CC": "7.0", "SIMCUDA_NAME": "Tesla V100"}
        r = h.run_traced([CUDA_APP, SM80_DATA], env=env)
        self.assertEqual(r.stdout, f"open {SM80_DATA}: ok\ncudaMalloc: 0\n", r.stderr)
        f = self.only(h.report(*r.traces), "abi.no-kernel-image")
        self.assertEqual((f["evidence"]["gpu_arch"], f["evidence"]["arch_source"]),
                         ("sm_70", "device 0 (Tesla V100)"))
        self.assertEqual([(l["path"], l["device_code"]) for l in f["evidence"]["libraries"]],
                         [(SM80_DATA, ["sm_80"])])
        env["SIMCUDA_CC"] = "8.6"
        r = h.run_traced([CUDA_APP, SM80_DATA], env=env)
        self.assertEqual(r.stdout, f"open {SM80_DATA}: ok\ncudaMalloc: 0\n", r.stderr)
        self.assertEqual(h.findings(h.report(*r.traces), "abi.no-kernel-image"), [])

    def test_coverage_incomplete_deepbind_and_static_cudart(self):
        static = os.path.join(LIBS, "libct_static_rt.so")
        r, rep = self.load(f"deep:{CUDA_USER}", f"open:{static}")
        self.assertEqual(r.stdout, f"deep {CUDA_USER}: ok\nopen {static}: ok\n")
        fs = {f["evidence"]["cause"]: f for f in h.findings(rep, "gpu.coverage-incomplete")}
        self.assertEqual(sorted(fs), ["RTLD_DEEPBIND", "static cudart"])
        self.assertEqual(fs["RTLD_DEEPBIND"]["severity"], "info")
        self.assertEqual([(o["path"], o["flags"]) for o in fs["RTLD_DEEPBIND"]["evidence"]["objects"]],
                         [(CUDA_USER, "RTLD_NOW|RTLD_DEEPBIND"), (FAKE_CUDART12, "0")])
        self.assertEqual([o["path"] for o in fs["static cudart"]["evidence"]["objects"]], [static])
        self.assertEqual(self.rows(rep, CUDA_USER)[0]["deepbind"], True)
        # Without RTLD_DEEPBIND only the static runtime is reported.
        _, rep = self.load(f"open:{CUDA_USER}")
        self.assertEqual(h.findings(rep, "gpu.coverage-incomplete"), [])


if __name__ == "__main__":
    unittest.main()
