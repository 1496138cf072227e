"""The analyzer on real CUDA stacks (issue 21): traces an NVIDIA H200 recorded under the
shim (shared/gpu-corpus; its README says what really happened in each run), read here with
`colabtrace report --sysroot` over the few library files the corpus keeps (`files/`, laid
out under their paths on that machine). For each run the abi.* findings are exactly its
truth: an sm_80-only program on the sm_90 GPU is `abi.no-kernel-image` naming it, and a
healthy PyTorch run (cu13 wheels, cuDNN 9.19) has no abi.* warning or error: the cu13
wheel's libcufile.so.0 is no CUDA 11 library for its PTX ISA 7.1, cuDNN's version probes
(`libcudnn_graph.so.9.19` before `.so.9`) are info, and cuFFT, which keeps its kernels
outside its registered fatbin, is not judged from that fatbin (checked with the toolkit's
libcufft.so.12, the same build as the wheel's, where it is installed).

The `libraries_files` summary is checked exactly: the recorded libraries (a fact of the
traces), those read under the sysroot, and those whose path on this machine holds the
recorded build (found here by reading the ELF notes independently), so the numbers are
exact on any machine. Only abi.* findings and this summary are asserted here.

The corpus lives beside the repository (../shared/gpu-corpus from its root); the test
skips with a message where it is absent."""
import os
import shutil
import struct
import tarfile
import tempfile
import unittest

import ctharness as h

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.normpath(os.path.join(ROOT, "..", "shared", "gpu-corpus"))
TARBALL = os.path.join(CORPUS, "traces.tar.xz")
SYSROOT = os.path.join(CORPUS, "files")
TOOLKIT_CUFFT = "/usr/local/cuda/lib64/libcufft.so.12"
CUFFT_BUILD_ID = "d65143a76809bd95e14025ea0705eaa1e571836f"
WHEEL_LIB = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib"
BIN = "/opt/gpu-corpus/bin"

# The recorded libraries of each run: distinct (path, build id) of the objects its
# traced processes mapped (the vDSO aside; torch_cupti: not the libcupti the shim loaded
# for itself). Facts of the traces, the same on any machine.
RECORDED = {
    "basic": 10, "kern_wrong": 13, "kern_right": 12, "kern_static": 12, "torch_oom": 65, "torch_frag": 65,
    "torch_late": 65, "torch_leak_kill": 65, "torch_train": 83, "torch_cupti": 83, "other": 65, "frag2": 78,
    "frag2_exp": 66, "prof": 78, "prof_cupti": 79,
}
# The files/ copies each run mapped: one each, the program (basic, kern_sm80,
# kern_sm80_static, kern_sm90) or the wheel's libcufile.so.0 (every torch run).
FROM_SYSROOT = {run: 1 for run in RECORDED}

# cuDNN 9.19's version probes in the runs that use it (torch_train's conv net): each a
# failed dlopen followed by the .so.9 that loads. Info, and nothing else is.
CUDNN_PROBES = sorted(
    f"libcudnn_{lib}.so.9.19{tail}"
    for lib in ("graph", "engines_precompiled", "engines_runtime_compiled", "heuristic") for tail in ("", ".0"))

# The abi.* findings (id, severity) each run really deserves.
TRUTH = {run: [] for run in RECORDED}
TRUTH["kern_wrong"] = [("abi.no-kernel-image", "error")]
TRUTH["kern_static"] = [("abi.no-kernel-image", "error")]
TRUTH["torch_train"] = [("abi.load-failed", "info")] * len(CUDNN_PROBES)
# torch_cupti: the shim's own dlopen("libcupti.so") mapped the toolkit's copy beside the
# wheel's libcupti.so.13 (README: "caused by colabtrace"). Those loads are colabtrace's,
# not the program's: no abi.duplicate-library nor abi.system-vs-pip.
TRUTH["torch_cupti"] = [("abi.load-failed", "info")] * len(CUDNN_PROBES)


def build_id(path):
    """The NT_GNU_BUILD_ID of an ELF file (lowercase hex), or None: read from its PT_NOTE
    segments, independently of the analyzer."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            f.seek(phoff)
            phdrs = f.read(phentsize * phnum)
            for i in range(phnum):
                p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", phdrs, i * phentsize)
                if p_type != 4:  # PT_NOTE
                    continue
                f.seek(p_offset)
                notes = f.read(min(p_filesz, 1 << 16))
                pos = 0
                while pos + 12 <= len(notes):
                    namesz, descsz, ntype = struct.unpack_from("<III", notes, pos)
                    name_at = pos + 12
                    desc_at = name_at + (namesz + 3) // 4 * 4
                    if ntype == 3 and notes[name_at:name_at + namesz].rstrip(b"\0") == b"GNU":
                        return notes[desc_at:desc_at + descsz].hex()
                    pos = desc_at + (descsz + 3) // 4 * 4
    except OSError:
        return None
    return None


def recorded_libraries(rep):
    """{(path, build id)} of the libraries[] rows the traces recorded (not the vDSO, not
    rows made for untraced programs, which have no load base)."""
    return {(l["path"], l["build_id"] or "") for l in rep["libraries"]
            if l["ok"] and (l["path"] or "").startswith("/") and l["base"] is not None}


def expected_files(rep, sysroot):
    """What libraries_files must say, found independently: a library is read under the
    sysroot when the copy there has its build id, else at its own path when the file here
    has it (a trace from another host: nothing else proves a file is the loaded one)."""
    from_sysroot = here = 0
    for path, bid in recorded_libraries(rep):
        if not bid:
            continue
        if sysroot and build_id(sysroot + path) == bid:
            from_sysroot += 1
        elif build_id(path) == bid:
            here += 1
    n = len(recorded_libraries(rep))
    readable = from_sysroot + here
    return {"recorded": n, "readable": readable, "same_file": 0, "matched_by_build_id": readable,
            "from_sysroot": from_sysroot, "unreadable": n - readable}


def skipped(rep, check):
    """{why: count} of libraries_files.skipped_checks for one check."""
    return {s["why"]: s["count"] for s in rep["libraries_files"]["skipped_checks"] if s["check"] == check}


@unittest.skipUnless(os.path.exists(TARBALL), f"no GPU corpus at {CORPUS} (shared/gpu-corpus beside the repository)")
class GpuCorpusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-gpu-corpus-")
        with tarfile.open(TARBALL) as t:
            t.extractall(cls.tmp, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(cls.tmp)
        cls.traces = os.path.join(cls.tmp, "traces")
        cls.reports = {}

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def report(self, run, sysroot=SYSROOT):
        key = (run, sysroot)
        if key not in self.reports:
            extra = ("--sysroot", sysroot) if sysroot else ()
            self.reports[key] = h.report(os.path.join(self.traces, run), extra=extra)
        return self.reports[key]

    def abi(self, rep):
        return sorted((f["id"], f["severity"]) for f in rep["findings"] if f["id"].startswith("abi."))

    def test_the_corpus_holds_every_run(self):
        self.assertEqual(sorted(d for d in os.listdir(self.traces) if os.path.isdir(os.path.join(self.traces, d))),
                         sorted(RECORDED))

    def test_abi_findings_are_the_truth_of_each_run(self):
        for run in sorted(RECORDED):
            with self.subTest(run=run):
                rep = self.report(run)
                self.assertEqual(self.abi(rep), sorted(TRUTH[run]),
                                 [(f["id"], f["summary"]) for f in rep["findings"] if f["id"].startswith("abi.")])

    def test_no_kernel_image_names_the_sm80_programs(self):
        for run, program in (("kern_wrong", "kern_sm80"), ("kern_static", "kern_sm80_static")):
            with self.subTest(run=run):
                (f,) = h.findings(self.report(run), "abi.no-kernel-image")
                self.assertEqual(f["summary"], f"no kernel image for sm_90 in {program}: no cubin runs on it "
                                               "and no PTX can be JIT-compiled for it")
                self.assertEqual([l["path"] for l in f["evidence"]["libraries"]], [f"{BIN}/{program}"])
                self.assertEqual(f["evidence"]["libraries"][0]["device_code"], ["sm_80"])
                self.assertEqual(f["evidence"]["arch_source"], "device 0 (NVIDIA H200)")
                self.assertEqual(f["evidence"]["pids"], [f["pid"]])
        # The same program built for sm_90 runs: nothing.
        self.assertEqual(h.findings(self.report("kern_right"), "abi.no-kernel-image"), [])

    def test_cudnn_version_probes_are_info(self):
        for run in ("torch_train", "torch_cupti"):
            with self.subTest(run=run):
                lf = h.findings(self.report(run), "abi.load-failed")
                self.assertEqual(sorted(f["evidence"]["requested"] for f in lf), CUDNN_PROBES)
                for f in lf:
                    graph = "libcudnn_graph.so.9" if "graph" in f["evidence"]["requested"] else None
                    self.assertEqual(f["severity"], "info", f["summary"])
                    self.assertTrue(f["evidence"]["severity_reason"].startswith("a version probe: the same library ("),
                                    f["evidence"]["severity_reason"])
                    if graph:
                        self.assertEqual(f["evidence"]["severity_reason"],
                                         f"a version probe: the same library ({graph}) was loaded")

    def test_libcufile_has_no_cuda_major_from_its_ptx(self):
        rep = self.report("torch_train")
        (row,) = [l for l in rep["libraries"] if l["path"] == f"{WHEEL_LIB}/libcufile.so.0"]
        self.assertIsNone(row["cuda_major"])
        # Read (the corpus keeps it), not skipped: the major was looked for and is none.
        self.assertEqual(self.report("torch_train")["libraries_files"]["from_sysroot"], 1)
        self.assertEqual(h.findings(rep, "abi.mixed-cuda-majors"), [])

    def test_libraries_files_counts_are_exact(self):
        for run in sorted(RECORDED):
            with self.subTest(run=run):
                rep = self.report(run)
                files = rep["libraries_files"]
                self.assertEqual(files["sysroot"], SYSROOT)
                self.assertEqual(files["recorded"], RECORDED[run])
                self.assertEqual(files["from_sysroot"], FROM_SYSROOT[run])
                want = expected_files(rep, SYSROOT)
                self.assertEqual({k: files[k] for k in want}, want)

    def test_skipped_checks_are_counted(self):
        rep = self.report("torch_train")
        n = rep["libraries_files"]["recorded"]
        unreadable = rep["libraries_files"]["unreadable"]
        self.assertEqual(skipped(rep, "abi.no-kernel-image"), {"no readable file: device code not checked": unreadable})
        self.assertEqual(skipped(rep, "abi.stale-library"), {
            "trace from another host: the file on disk not compared (the shim's own re-checks still count)": n})
        self.assertEqual(skipped(rep, "abi.load-failed"),
                         {"trace from another host: no search for copies": len(CUDNN_PROBES)})
        text = h.cli("report", "--sysroot", SYSROOT, os.path.join(self.traces, "torch_train")).stdout
        self.assertIn(f"library files: {n - unreadable} of {n} recorded libraries read (0 the same file, "
                      f"{n - unreadable} by build id, 1 under --sysroot {SYSROOT})", text)
        self.assertIn(f"  not checked: abi.no-kernel-image for {unreadable}: no readable file: device code not "
                      "checked", text)

    def test_without_the_files_the_check_is_skipped_and_says_so(self):
        rep = self.report("kern_wrong", sysroot=None)
        self.assertEqual(self.abi(rep), [])
        files = rep["libraries_files"]
        self.assertIsNone(files["sysroot"])
        self.assertEqual(files["from_sysroot"], 0)
        want = expected_files(rep, None)
        self.assertEqual({k: files[k] for k in want}, want)
        self.assertEqual(skipped(rep, "abi.no-kernel-image"),
                         {"no readable file: device code not checked": files["unreadable"]})
        self.assertIn(f"{BIN}/kern_sm80", files["unreadable_sample"])

    @unittest.skipUnless(os.path.exists(TOOLKIT_CUFFT) and build_id(TOOLKIT_CUFFT) == CUFFT_BUILD_ID,
                         f"needs {TOOLKIT_CUFFT} of build {CUFFT_BUILD_ID} (the CUDA 13.0 toolkit)")
    def test_cufft_is_not_judged_from_its_registered_fatbin(self):
        # A sysroot with the wheel's libcufft.so.12 (the toolkit's copy is the same build)
        # and libcufile.so.0 at their paths on the H200. cuFFT registers one sm_75 cubin;
        # the sm_90 kernels it runs on the H200 are in .ldata.
        root = tempfile.mkdtemp(prefix="ct-sysroot-", dir=self.tmp)
        os.makedirs(root + WHEEL_LIB)
        os.symlink(TOOLKIT_CUFFT, f"{root}{WHEEL_LIB}/libcufft.so.12")
        os.symlink(f"{SYSROOT}{WHEEL_LIB}/libcufile.so.0", f"{root}{WHEEL_LIB}/libcufile.so.0")
        rep = self.report("torch_train", sysroot=root)
        self.assertEqual(h.findings(rep, "abi.no-kernel-image"), [])
        self.assertEqual(self.abi(rep), sorted(TRUTH["torch_train"]))
        files = rep["libraries_files"]
        self.assertEqual(files["from_sysroot"], 2)
        self.assertEqual({k: files[k] for k in expected_files(rep, root)}, expected_files(rep, root))
        # Judged, with the code it keeps outside its registered fatbin: not skipped.
        cufft = f"{WHEEL_LIB}/libcufft.so.12"
        self.assertFalse([s for s in files["skipped_checks"] if cufft in s["examples"]], files["skipped_checks"])
        # On a GPU none of its cubins or PTX covers (sm_70), the check cannot judge it: it
        # also keeps LTO IR there, which could be compiled for any GPU. libcufile.so.0,
        # whose whole device code is sm_75, sm_80, sm_86 and compute_86, is an error there.
        rep = h.report(os.path.join(self.traces, "torch_train"), extra=("--sysroot", root, "--gpu-arch", "sm_70"))
        (f,) = h.findings(rep, "abi.no-kernel-image")
        self.assertEqual(f["summary"], "no kernel image for sm_70 in libcufile.so.0: no cubin runs on it and no PTX "
                                       "can be JIT-compiled for it")
        self.assertEqual([(l["path"], l["device_code"]) for l in f["evidence"]["libraries"]],
                         [(f"{WHEEL_LIB}/libcufile.so.0", ["compute_86", "sm_75", "sm_80", "sm_86"])])
        self.assertEqual([l["path"] for l in f["evidence"]["not_judged"]], [cufft])
        self.assertEqual(f["evidence"]["not_judged"][0]["why"],
                         "it carries 23983 fatbin containers (23983 in .ldata) outside its registered fatbins, "
                         "which it may load itself; nothing there runs on sm_70, but 12728 of their entries are of "
                         "a kind this check cannot judge (not cubin or PTX)")
        (not_judged,) = [s for s in rep["libraries_files"]["skipped_checks"]
                         if s["why"] == "device code outside its registered fatbins that this check cannot judge"]
        self.assertEqual((not_judged["check"], not_judged["count"], not_judged["examples"]),
                         ("abi.no-kernel-image", 1, [cufft]))


if __name__ == "__main__":
    unittest.main()
