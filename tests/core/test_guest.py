"""The shim is a perfect guest (issue 8): what a traced program can observe is what it
observes bare. Descriptors (no trace descriptor visible, stdin stays closed, an exec'd
child sees exactly its own descriptors), no thread of the shim's own, the loader's
bindings, vfork staying vfork, execl with any number of arguments, forks from threads
and with libc locks held, clone children."""
import glob
import os
import re
import subprocess
import sys
import unittest

from coretest import clean_env, env_values, prog, python, records, report, run_plain, shim_env
from ctharness import SHIM, TempDirTest, by_pid

FD_STATUS = "/usr/lib/python3.11/test/subprocessdata/fd_status.py"


class GuestTest(TempDirTest):
    def traced(self, argv, extra=None, timeout=60, **kw):
        return subprocess.run(argv, env=shim_env(self.tmp, extra), capture_output=True,
                              timeout=timeout, **kw)

    def same_as_bare(self, argv, extra=None, timeout=60, **kw):
        """Runs argv bare and traced; both must print the same and exit the same."""
        bare = run_plain(argv, timeout=timeout, **kw)
        traced = self.traced(argv, extra, timeout=timeout, **kw)
        self.assertEqual(traced.stderr, bare.stderr)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.returncode, bare.returncode)
        return traced

    def traces(self):
        return sorted(glob.glob(os.path.join(self.tmp, "*.ctrace")))

    # ---- descriptors -------------------------------------------------------------------

    def test_no_trace_descriptor_is_visible(self):
        p = self.same_as_bare([prog("ct_guest"), "fds"])
        self.assertEqual(p.stdout, b"0,1,2\n")
        self.assertEqual(len(self.traces()), 1)

    def test_stdin_closed_stays_closed(self):
        p = self.same_as_bare([prog("ct_guest"), "stdin-closed"])
        self.assertEqual(p.stdout, b"fstat0 -1 Bad file descriptor\nopen gave 0\n")

    def test_posix_spawn_with_fd0_closed(self):
        # CPython's test_posix test_close_file: the child finds fd 0 closed.
        p = self.same_as_bare([prog("ct_guest"), "spawn-stdin-closed"])
        self.assertEqual(p.stdout, b"fstat0 -1 Bad file descriptor\nopen gave 0\n")
        self.assertEqual(len(self.traces()), 2)

    def test_execd_child_sees_exactly_its_descriptors(self):
        for how in ("fork", "spawn"):
            with self.subTest(how=how):
                p = self.same_as_bare([prog("ct_guest"), "exec-fds", how])
                self.assertEqual(p.stdout, b"0,1,2\n")

    def test_exec_hand_over_continues_the_trace_without_leaking(self):
        # fork + exec with the shim kept: one trace for the child, two images in it.
        self.same_as_bare([prog("ct_guest"), "exec-fds", "fork"])
        rep = report(*self.traces())
        procs = [p for p in rep["processes"] if p["pid"] != rep["processes"][0]["pid"]]
        starts = [r for t in self.traces() for r in records(t, "process_start")]
        self.assertEqual(sorted(int(r["image"]) for r in starts), [0, 0, 1])
        self.assertTrue(procs)

    def test_cpython_pass_fds_redirected(self):
        # CPython's test_subprocess test_pass_fds_redirected, traced all the way down.
        script = f"""if 1:
            import os, subprocess, sys
            pass_fds = [os.open(os.devnull, os.O_RDWR) for _ in range(2)]
            r, w = os.pipe()
            pass_fds.insert(1, w)
            with subprocess.Popen([sys.executable, {FD_STATUS!r}], stdin=pass_fds[0],
                                  stdout=pass_fds[1], stderr=pass_fds[2], close_fds=True,
                                  pass_fds=pass_fds):
                out = os.read(r, 1024)
            fds = {{int(n) for n in out.split(b",")}}
            print(sorted(fds) == sorted({{0, 1, 2}} | set(pass_fds)), sorted(fds))
            """
        if not os.path.exists(FD_STATUS):
            self.skipTest("CPython's test suite (libpython3.11-testsuite) is not installed")
        p = self.same_as_bare([python(), "-c", script])
        self.assertTrue(p.stdout.startswith(b"True "), p.stdout)

    def test_hand_over_skips_an_image_that_will_not_load_the_shim(self):
        # LD_PRELOAD dropped from the new environment: the trace stays close-on-exec and
        # the previous image's trace ends as an exec into an untraced program.
        script = f"""if 1:
            import os
            env = {{k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}}
            os.execve({prog("ct_guest")!r}, [{prog("ct_guest")!r}, "fds"], env)
            """
        p = self.same_as_bare([python(), "-c", script])
        self.assertEqual(p.stdout, b"0,1,2\n")
        (trace,) = self.traces()
        (proc,) = report(trace)["processes"]
        self.assertEqual(proc["end"].get("exec_untraced"), prog("ct_guest"), proc["end"])

    def setuid_copy(self):
        """A set-user-ID copy of ct_guest owned by root, in a directory anyone may read."""
        if os.geteuid() != 0:
            self.skipTest("needs root to make a set-user-ID root program")
        os.chmod(self.tmp, 0o777)
        suid = os.path.join(self.tmp, "ct_guest_suid")
        with open(prog("ct_guest"), "rb") as src, open(suid, "wb") as dst:
            dst.write(src.read())
        os.chmod(suid, 0o4755)
        return suid

    def test_setuid_exec_that_keeps_the_identity_keeps_the_trace(self):
        # Root running root's set-user-ID program (mount, su; everything on Colab runs as
        # root) is no secure exec: ld.so loads the preload, so the trace crosses the exec
        # (one trace for the pid, two images) and no descriptor is left to the program.
        suid = self.setuid_copy()
        p = self.same_as_bare(["/bin/sh", "-c", f"exec '{suid}' fds"])
        self.assertEqual(p.stdout, b"0,1,2\n")
        (trace,) = self.traces()
        (proc,) = report(trace)["processes"]
        self.assertEqual([(i["image"], os.path.basename(i["exe"]), i.get("traced", True)) for i in proc["images"]],
                         [(0, "dash", True), (1, "ct_guest_suid", True)])
        self.assertEqual(proc["argv"], [suid, "fds"])

    def test_secure_exec_is_not_followed_and_is_named(self):
        # An unprivileged user running a set-user-ID root program is a secure exec: ld.so
        # ignores LD_PRELOAD. The trace stays close-on-exec (the program sees 0,1,2) and
        # ends with the image named, as one the shim could not follow.
        suid = self.setuid_copy()
        if os.statvfs(self.tmp).f_flag & os.ST_NOSUID:
            self.skipTest(f"{self.tmp} is on a nosuid mount: no secure exec there")
        setpriv = "/usr/bin/setpriv"
        if not os.path.exists(setpriv):
            self.skipTest("setpriv (util-linux) is not installed")
        # sh runs as nobody and loads the shim: every directory above it must be
        # searchable, and the file readable, by others (a checkout under /root is not).
        path = os.path.realpath(SHIM)
        parts = [os.path.dirname(path)]
        while parts[-1] != "/":
            parts.append(os.path.dirname(parts[-1]))
        if not os.stat(path).st_mode & 0o004 or any(not os.stat(d).st_mode & 0o001 for d in parts):
            self.skipTest(f"{path} is not readable by other users (nobody runs it here)")
        # setpriv (root) drops to nobody and execs sh, which runs `id` and then execs the
        # program. sh cannot open the trace root created by path: it keeps the handed-over
        # descriptor (close-on-exec) to extend the trace (before, tracing stopped there).
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
                f"id -u; id -u; exec '{suid}' fds"]
        p = self.same_as_bare(argv)
        self.assertEqual(p.stdout, b"65534\n65534\n0,1,2\n")
        rep = report(*self.traces())
        self.assertEqual(rep["warnings"], [])
        (proc,) = [q for q in rep["processes"] if os.path.basename(q["exe"]) != "id"]
        self.assertFalse(proc["trace_truncated"])
        ids = [q for q in rep["processes"] if os.path.basename(q["exe"]) == "id"]
        self.assertEqual([q["ppid"] for q in ids], [proc["pid"]] * 2)
        self.assertEqual([os.path.basename(i["exe"]) for i in proc["images"]], ["setpriv", "dash", "ct_guest_suid"])
        self.assertEqual(proc["images"][-1], {"image": 2, "exe": suid, "traced": False,
                                              "untraced_why": "secure-exec"})
        self.assertEqual(proc["exe"], suid)
        self.assertEqual(proc["argv"], [suid, "fds"])

    # ---- no thread of our own ----------------------------------------------------------

    def test_a_traced_single_threaded_program_has_one_thread(self):
        p = self.same_as_bare([prog("ct_guest"), "threads", "350"],
                              extra={"COLABTRACE_SAMPLE_MS": "50"})
        self.assertEqual(p.stdout, b"threads 1\n")
        # Samples were still taken, on the traced calls, about every 50 ms.
        (trace,) = self.traces()
        samples = records(trace, "sample")
        self.assertGreaterEqual(len(samples), 4, samples)  # start, periodic ones, exit
        self.assertTrue(all(int(s["threads"]) == 1 for s in samples), samples)
        clocks = records(trace, "clock")
        self.assertGreaterEqual(len(clocks), 4)
        # RSS in bytes from the real page size: a multiple of it.
        page = os.sysconf("SC_PAGESIZE")
        self.assertTrue(all(int(s["rss_bytes"]) % page == 0 and int(s["rss_bytes"]) > 0
                            for s in samples))

    def test_sample_period_zero_means_only_the_fixed_points(self):
        self.same_as_bare([prog("ct_guest"), "threads", "200"], extra={"COLABTRACE_SAMPLE_MS": "0"})
        (trace,) = self.traces()
        self.assertEqual(len(records(trace, "sample")), 2)  # start and exit

    def test_fork_from_a_thread_whose_child_ends_with_its_last_thread(self):
        # CPython's test_threading test_3_join_in_forked_from_thread hung under the shim.
        p = self.same_as_bare([prog("ct_guest"), "fork-thread"], timeout=30)
        self.assertEqual(p.stdout, b"exited 0\n")
        self.assertEqual(len(self.traces()), 2)

    def test_main_ending_with_pthread_exit_ends_the_process(self):
        p = self.same_as_bare([prog("ct_guest"), "pthread-exit"], timeout=30)
        self.assertEqual(p.stdout, b"bye\n")
        (proc,) = report(*self.traces())["processes"]
        self.assertEqual(proc["end"]["kind"], "exited")

    # ---- fork with libc's locks held, clone ------------------------------------------

    def test_underscore_fork_child_never_takes_the_loaders_lock(self):
        p = self.same_as_bare([prog("ct_guest"), "fork-locked"], timeout=30)
        self.assertEqual(p.stdout, b"exited 7\n")
        procs = by_pid(report(*self.traces()))
        self.assertEqual(len(procs), 2)
        child = [p for p in procs.values() if p["end"].get("code") == 7]
        self.assertEqual(len(child), 1, procs)

    def test_clone_child_gets_its_own_trace(self):
        p = self.same_as_bare([prog("ct_guest"), "clone"])
        self.assertEqual(p.stdout, b"exited 3\n")
        traces = self.traces()
        self.assertEqual(len(traces), 2)
        seen = {t: (env_values(t, "CUDA_CLONE_CHILD"), env_values(t, "CUDA_CLONE_PARENT"))
                for t in traces}
        self.assertEqual(sorted(seen.values()), [([], ["1"]), (["1"], [])],
                         "the child's records are in its own trace, none in the parent's")
        procs = by_pid(report(*traces))
        self.assertEqual(sorted((p["end"]["kind"], p["end"]["code"]) for p in procs.values()),
                         [("exited", 0), ("exited", 3)])

    # ---- vfork stays vfork -------------------------------------------------------------

    def test_vfork_is_vfork_when_disabled_or_unwritable(self):
        bare = run_plain([prog("ct_guest"), "vfork-shared"])
        self.assertEqual(bare.stdout, b"shared\n")
        readonly = os.path.join(self.tmp, "ro")
        os.mkdir(readonly, 0o500)
        for extra in ({"COLABTRACE_DISABLE": "1"}, {"COLABTRACE_OUT": readonly + "/"}, {}):
            with self.subTest(extra=extra):
                p = self.traced([prog("ct_guest"), "vfork-shared"], extra)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout, b"shared\n")
        if os.geteuid() != 0:  # root writes anywhere: the directory is not unwritable then
            self.assertEqual(os.listdir(readonly), [])

    # ---- execl family ----------------------------------------------------------------

    def test_execl_and_execle_pass_every_argument(self):
        p = self.same_as_bare([prog("ct_guest"), "execl"])
        self.assertEqual(p.stdout, b"argc 5002 mark (none)\n")
        p = self.same_as_bare([prog("ct_guest"), "execle"])
        self.assertEqual(p.stdout, b"argc 5002 mark from-execle\n")
        # The exec'd image kept the trace (execle's envp names the shim): all 5002 argv
        # records of image 1 are there.
        argv_records = [r for t in self.traces() for r in records(t, "argv")]
        self.assertEqual(sum(1 for r in argv_records if r["value"] == "a"), 2 * 5000)

    # ---- the loader's view -------------------------------------------------------------

    def test_nothing_binds_to_what_the_shim_brought_in(self):
        # A C++ program that throws (libstdc++ -> libgcc_s unwinder) under the shim.
        out = subprocess.run(["readelf", "-d", SHIM], capture_output=True, text=True,
                             check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
        self.assertTrue(set(needed) <= {"libc.so.6", "libdl.so.2", "ld-linux-x86-64.so.2",
                                        "ld-linux-aarch64.so.1", "libpthread.so.0"}, needed)
        env = shim_env(self.tmp, {"LD_DEBUG": "bindings"})
        script = "import ctypes, json; json.dumps({'a': 1}); ctypes.CDLL(None)"
        p = subprocess.run([python(), "-c", script], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        shim_name = os.path.basename(SHIM)
        exported = self.exported_hooks()
        bad = []
        for line in p.stderr.splitlines():
            m = re.search(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'",
                          line)
            if not m:
                continue
            src, dst, sym = m.groups()
            if "libunwind" in dst:
                bad.append(line.strip())
            if dst.endswith(shim_name) and sym not in exported and not src.endswith(shim_name):
                bad.append(line.strip())
            if sym.startswith("_Unwind_") and dst.endswith(shim_name):
                bad.append(line.strip())
        self.assertEqual(bad, [])

    def test_version_script_drops_x86_only_hooks_elsewhere(self):
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        tables = glob.glob(os.path.join(root, "shim", "**", "*.def"), recursive=True)
        x86_only = {"vfork", "dlopen", "dlmopen", "dlsym", "dlvsym"}
        for arch, want in (("x86_64", True), ("AMD64", True), ("aarch64", False),
                           ("arm64", False)):
            with self.subTest(arch=arch):
                out = os.path.join(self.tmp, f"{arch}.map")
                subprocess.run([sys.executable, os.path.join(root, "tools", "gen_version_script.py"),
                                "--arch", arch, out, *tables], check=True)
                with open(out, encoding="utf-8") as f:
                    names = set(re.findall(r"^\s+([A-Za-z_][A-Za-z0-9_]*);$", f.read(), re.M))
                self.assertIn("execve", names)
                self.assertEqual(x86_only <= names, want, sorted(x86_only & names))
                self.assertFalse(x86_only & names if not want else set())

    @staticmethod
    def exported_hooks():
        out = subprocess.run(["readelf", "--wide", "--dyn-syms", SHIM], capture_output=True,
                             text=True, check=True).stdout
        names = set()
        for line in out.splitlines():
            w = line.split()
            if len(w) >= 8 and w[0].endswith(":") and w[6] != "UND" and w[4] in ("GLOBAL", "WEAK"):
                names.add(w[7].split("@")[0])
        return names


if __name__ == "__main__":
    unittest.main()
