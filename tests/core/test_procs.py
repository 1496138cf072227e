"""fork, exec, posix_spawn, vfork and shell wrappers: one trace per process that ran,
each with its exit code, the right ppid and children links, and the exec'd image named
as the job."""
import glob
import os
import subprocess
import time
import unittest

import coretest
from coretest import env_values, prog, python, records, report, shim_env, trace_pid
from ctharness import TempDirTest, by_pid


def by_pid_trace(directory, pid):
    """The trace file of pid in directory."""
    (t,) = [t for t in glob.glob(os.path.join(directory, "*.ctrace")) if trace_pid(t) == pid]
    return t


class ProcessTreeTest(TempDirTest):
    def run_traced(self, argv, expect_rc=0):
        p = subprocess.run(argv, env=shim_env(self.tmp), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, expect_rc, p.stderr)
        # Only what the programs themselves print (ct_exit writes one "err:" line).
        self.assertEqual([l for l in p.stderr.splitlines() if not l.startswith("err: ")], [])
        traces = sorted(glob.glob(os.path.join(self.tmp, "*.ctrace")))
        pids = [trace_pid(t) for t in traces]
        self.assertEqual(len(pids), len(set(pids)), f"one trace per process: {traces}")
        return p, dict(zip(pids, traces))

    @staticmethod
    def parse(stdout):
        children, parent = [], None
        for line in stdout.splitlines():
            w = line.split()
            if w[0] == "child":
                children.append((int(w[1]), int(w[2])))
            elif w[0] == "parent":
                parent = int(w[1])
        return parent, children

    def test_fork_children_each_get_a_trace_with_their_exit_code(self):
        n = 5
        p, traces = self.run_traced([prog("ct_procs"), "fork", str(n)])
        parent, children = self.parse(p.stdout)
        self.assertEqual([c for _, c in children], [10 + i for i in range(n)])
        self.assertEqual(set(traces), {parent} | {pid for pid, _ in children})
        rep = report(self.tmp)
        procs = by_pid(rep)
        self.assertEqual(len(rep["processes"]), n + 1)
        self.assertEqual(procs[parent]["end"], {"kind": "exited", "code": 0, "signal": None, "reaped_by": None})
        self.assertEqual(procs[parent]["children"], [pid for pid, _ in children])
        for i, (pid, code) in enumerate(children):
            child = procs[pid]
            self.assertEqual(child["end"]["kind"], "exited")
            self.assertEqual(child["end"]["code"], code)
            self.assertEqual(child["ppid"], parent)
            self.assertEqual(child["origin"], "fork")
            self.assertEqual(env_values(traces[pid], "CUDA_CHILD"), [str(i)])
            # The child's trace holds only its own events, not the parent's later ones.
            self.assertEqual(env_values(traces[pid], "CUDA_PARENT_DONE"), [])
        self.assertEqual(env_values(traces[parent], "CUDA_CHILD"), [])
        self.assertEqual(env_values(traces[parent], "CUDA_PARENT_DONE"), ["1"])

    def test_fork_then_exec_continues_the_childs_trace(self):
        target = prog("ct_exit")
        p, traces = self.run_traced([prog("ct_procs"), "forkexec", target, "exit", "5"])
        parent, children = self.parse(p.stdout)
        self.assertEqual(len(children), 1)
        child, code = children[0]
        self.assertEqual(code, 5)
        self.assertEqual(set(traces), {parent, child})
        procs = by_pid(report(self.tmp))
        c = procs[child]
        self.assertEqual([os.path.basename(i["exe"]) for i in c["images"]], ["ct_procs", "ct_exit"])
        self.assertEqual(c["exe"], target)
        self.assertEqual(c["argv"], [target, "exit", "5"])
        self.assertEqual(c["end"], {"kind": "exited", "code": 5, "signal": None, "reaped_by": parent,
                                    "reaped_by_run": False})
        self.assertEqual(c["ppid"], parent)
        self.assertEqual(len(records(traces[child], "exec_start")), 1)
        # Both images wrote into the one file.
        # Set by setenv in the first image, then seen in the second's start-up env.
        before = [r for r in records(traces[child], "env") if r["name"] == "CUDA_BEFORE_EXEC"]
        self.assertEqual([(r["value"], r["source"]) for r in before], [("1", "1"), ("1", "0")])
        self.assertEqual(env_values(traces[child], "CUDA_EXIT_MODE"), ["exit"])
        self.assertEqual(procs[parent]["children"], [child])
        self.assertEqual(procs[parent]["end"]["code"], 0)
        self.assertEqual(procs[parent]["exe"], prog("ct_procs"))

    def test_posix_spawn_child_gets_its_own_trace(self):
        target = prog("ct_exit")
        p, traces = self.run_traced([prog("ct_procs"), "spawn", target, "_exit", "6"])
        parent, children = self.parse(p.stdout)
        child, code = children[0]
        self.assertEqual(code, 6)
        self.assertEqual(set(traces), {parent, child})
        procs = by_pid(report(self.tmp))
        self.assertEqual(procs[parent]["children"], [child])
        self.assertEqual(procs[child]["ppid"], parent)
        self.assertEqual(procs[child]["exe"], target)
        self.assertEqual([i["exe"] for i in procs[child]["images"]], [target])
        self.assertEqual(procs[child]["end"]["code"], 6)
        spawns = records(traces[parent], "spawn")
        self.assertEqual([(int(s["child_pid"]), s["path"]) for s in spawns], [(child, target)])

    def test_vfork_exec_child_does_not_pollute_the_parent(self):
        target = prog("ct_exit")
        p, traces = self.run_traced([prog("ct_procs"), "vfork", target, "return", "7"])
        parent, children = self.parse(p.stdout)
        child, code = children[0]
        self.assertEqual(code, 7)
        self.assertEqual(set(traces), {parent, child})
        procs = by_pid(report(self.tmp))
        self.assertEqual(procs[child]["exe"], target)
        self.assertEqual(procs[child]["ppid"], parent)
        self.assertEqual(procs[child]["end"]["code"], 7)
        self.assertEqual([i["exe"] for i in procs[child]["images"]], [target])
        # Nothing of the child in the parent's trace.
        self.assertEqual(len(records(traces[parent], "exit")), 1)
        self.assertEqual(records(traces[parent], "exec_start"), [])
        self.assertEqual(env_values(traces[parent], "CUDA_EXIT_MODE"), [])
        self.assertEqual(procs[parent]["end"], {"kind": "exited", "code": 0, "signal": None, "reaped_by": None})

    def test_vfork_child_exit_after_failed_exec_leaves_the_parent_trace_open(self):
        p, traces = self.run_traced([prog("ct_procs"), "vforkfail"])
        parent, children = self.parse(p.stdout)
        self.assertEqual(children[0][1], 127)
        self.assertEqual(list(traces), [parent])
        trace = traces[parent]
        exits = records(trace, "exit")
        self.assertEqual([int(e["code"]) for e in exits], [0], "the child's _exit(127) is not ours")
        self.assertEqual(env_values(trace, "CUDA_PARENT_DONE"), ["1"], "recording went on")
        self.assertEqual(by_pid(report(self.tmp))[parent]["end"]["code"], 0)

    def test_shell_exec_wrapper_becomes_the_job(self):
        target = prog("ct_exit")
        p, traces = self.run_traced(["/bin/sh", "-c", f"exec '{target}' exit 4"], expect_rc=4)
        self.assertEqual(len(traces), 1)
        (proc,) = report(self.tmp)["processes"]
        self.assertEqual(proc["exe"], target)
        self.assertEqual(proc["argv"], [target, "exit", "4"])
        self.assertEqual(proc["end"]["code"], 4)
        self.assertEqual(len(proc["images"]), 2)
        self.assertEqual(proc["images"][1]["exe"], target)
        self.assertNotEqual(proc["images"][0]["exe"], target)

    def test_exec_into_an_untraced_program_is_not_a_kill(self):
        # env drops LD_PRELOAD and execs the job: the trace ends at that exec.
        target = prog("ct_exit")
        p, traces = self.run_traced(["/bin/sh", "-c", f"exec env -u LD_PRELOAD '{target}' exit 4"],
                                    expect_rc=4)
        self.assertEqual(len(traces), 1)
        rep = report(self.tmp)
        (proc,) = rep["processes"]
        # The process is the program env ran: named, with its argv, as an untraced image.
        self.assertEqual([os.path.basename(i["exe"]) for i in proc["images"]], ["dash", "env", "ct_exit"])
        self.assertEqual(proc["images"][-1], {"image": 2, "exe": target, "traced": False,
                                              "untraced_why": "no-preload"})
        self.assertEqual(proc["exe"], target)
        self.assertEqual(proc["argv"], [target, "exit", "4"])
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertIsNone(proc["end"]["code"])
        self.assertEqual(proc["end"]["exec_untraced"], target)
        self.assertEqual([f for f in rep["findings"] if f["id"] == "proc.killed"], [])

    def test_exec_into_a_static_program_names_it(self):
        # A static executable has no loader, so no preload: the trace ends at the exec,
        # and the report names the static program (exe, argv) as what the pid ran.
        target = prog("ct_exit_static")
        p, traces = self.run_traced(["/bin/sh", "-c", f"exec '{target}' exit 4 two"], expect_rc=4)
        self.assertEqual(p.stdout, "out: mode=exit code=4\n")
        self.assertEqual(len(traces), 1)
        rep = report(self.tmp)
        (proc,) = rep["processes"]
        self.assertEqual(proc["exe"], target)
        self.assertEqual(proc["argv"], [target, "exit", "4", "two"])
        self.assertEqual([(i["image"], os.path.basename(i["exe"]), i.get("traced", True)) for i in proc["images"]],
                         [(0, "dash", True), (1, "ct_exit_static", False)])
        self.assertEqual(proc["images"][1]["untraced_why"], "static")
        self.assertEqual(proc["end"]["exec_untraced"], target)
        self.assertEqual(rep["findings"], [])

    def test_children_running_static_programs_are_listed(self):
        # CPython starts subprocesses with vfork+exec (_posixsubprocess) and os.posix_spawn
        # with posix_spawn; a child that runs a static program writes no trace. Its row
        # comes from the parent: exe, argv and the exit status the parent's wait saw.
        static, dynamic = prog("ct_exit_static"), prog("ct_exit")
        script = f"""if 1:
            import os, subprocess
            a = subprocess.run([{static!r}, "exit", "3"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            b = subprocess.run([{dynamic!r}, "exit", "4"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                subprocess.run([{static!r} + ".missing"])
            except FileNotFoundError:
                pass
            pid = os.posix_spawn({static!r}, ["static-by-spawn", "_exit", "5"], os.environ,
                                 file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
                                               (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
            c = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            print(a.returncode, b.returncode, c, a.args and pid)
            """
        p, traces = self.run_traced([python(), "-c", script])
        rc_a, rc_b, rc_c, spawned = p.stdout.split()
        self.assertEqual((rc_a, rc_b, rc_c), ("3", "4", "5"))
        self.assertEqual(len(traces), 2)  # python and ct_exit: the static ones write none
        rep = report(self.tmp)
        (py,) = [q for q in rep["processes"] if q["argv"][:1] == [python()] and q.get("traced") is not False]
        untraced = [q for q in rep["processes"] if q.get("traced") is False]
        got = sorted((q["exe"], q["argv"], q["ppid"], q["end"]["kind"], q["end"]["code"], q["end"]["reaped_by"],
                      q["images"][0]["untraced_why"]) for q in untraced)
        self.assertEqual(got, sorted([
            (static, [static, "exit", "3"], py["pid"], "exited", 3, py["pid"], "static"),
            (static, ["static-by-spawn", "_exit", "5"], py["pid"], "exited", 5, py["pid"], "static"),
            # The vfork child whose exec of the missing file failed: it ran python until
            # _posixsubprocess's _exit(255); the program it tried is in end.exec_failed.
            (py["exe"], py["argv"], py["pid"], "exited", 255, py["pid"], "exec-failed")]))
        (failed,) = [q for q in untraced if "exec_failed" in q["end"]]
        self.assertEqual(failed["end"]["exec_failed"],
                         {"path": static + ".missing", "argv": [static + ".missing"], "error": "ENOENT"})
        self.assertIn(int(spawned), [q["pid"] for q in untraced])
        # python, ct_exit, two static children, the child whose exec failed
        self.assertEqual(len(rep["processes"]), 5)
        # No library rows for it: it ran no program of its own.
        self.assertNotIn(failed["pid"], {l["pid"] for l in rep["libraries"]})
        self.assertEqual(rep["findings"], [])

    def test_threads_starting_static_programs_at_once_each_get_their_row(self):
        # Each vfork child takes a note of its own: threads that start children at the same
        # time (a thread pool running subprocesses) keep every row.
        static = prog("ct_exit_static")
        script = f"""if 1:
            import subprocess, threading
            codes = []
            def work(k):
                for i in range(10):
                    r = subprocess.run([{static!r}, "exit", str(k)], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                    codes.append(r.returncode)
            ts = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
            for t in ts: t.start()
            for t in ts: t.join()
            print(sorted(codes) == sorted([k for k in range(1, 5) for _ in range(10)]))
            """
        p, traces = self.run_traced([python(), "-c", script])
        self.assertEqual(p.stdout.strip(), "True")
        rep = report(self.tmp)
        rows = [q for q in rep["processes"] if q.get("traced") is False]
        self.assertEqual(sorted((q["exe"], q["end"]["code"], q["images"][0]["untraced_why"]) for q in rows),
                         sorted((static, k, "static") for k in range(1, 5) for _ in range(10)))
        self.assertEqual(rep["findings"], [])

    def test_a_path_search_is_named_by_the_program_it_found(self):
        # A PATH search execs each directory in turn: the failures before the program is
        # found make no row of their own; a search that finds nothing is the child's row,
        # named by the last program it tried.
        static, dynamic = prog("ct_exit_static"), prog("ct_exit")
        d = os.path.dirname(dynamic)
        script = f"""if 1:
            import os, subprocess
            env = dict(os.environ, PATH="/nonexistent-a:/nonexistent-b:{d}")
            a = subprocess.run(["ct_exit", "exit", "4"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            b = subprocess.run(["ct_exit_static", "exit", "3"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                subprocess.run(["ct-no-such-tool", "-x"], env=env)
            except FileNotFoundError:
                print("not found")
            print(a.returncode, b.returncode)
            """
        p, traces = self.run_traced([python(), "-c", script])
        self.assertEqual(p.stdout.split(), ["not", "found", "4", "3"])
        rep = report(self.tmp)
        (py,) = [q for q in rep["processes"] if q["argv"][:1] == [python()] and q.get("traced") is not False]
        rows = sorted((q["exe"], q["argv"], q["end"]["code"], q["images"][0].get("untraced_why"))
                      for q in rep["processes"] if q["pid"] != py["pid"])
        self.assertEqual(rows, sorted([
            (dynamic, ["ct_exit", "exit", "4"], 4, None),
            (static, ["ct_exit_static", "exit", "3"], 3, "static"),
            (py["exe"], py["argv"], 255, "exec-failed")]))
        (failed,) = [q for q in rep["processes"] if "exec_failed" in q["end"]]
        self.assertEqual(failed["end"]["exec_failed"],
                         {"path": d + "/ct-no-such-tool", "argv": ["ct-no-such-tool", "-x"], "error": "ENOENT"})
        self.assertEqual(rep["findings"], [])

    def test_a_sigkill_sent_by_the_job_names_its_sender(self):
        # subprocess.run(timeout=) and multiprocessing's Process.kill() end a child with
        # SIGKILL: proc.killed (no end record) names the traced process that sent it. A
        # SIGKILL from outside the job (here: this test, untraced) names no sender.
        script = """if 1:
            import multiprocessing as mp, os, subprocess, sys, time
            try:
                subprocess.run(["sleep", "10"], timeout=0.5)
            except subprocess.TimeoutExpired:
                print("timed out")
            if __name__ == "__main__":
                p = mp.get_context("fork").Process(target=time.sleep, args=(10,))
                p.start(); time.sleep(0.3); p.kill(); p.join()
                print(p.exitcode, p.pid)
                victim = subprocess.Popen(["sleep", "10"])
                print(victim.pid, flush=True)
                victim.wait()
            """
        proc = subprocess.Popen([python(), "-c", script], env=shim_env(self.tmp), stdout=subprocess.PIPE,
                                text=True)
        lines = [proc.stdout.readline() for _ in range(3)]
        outside = int(lines[2])
        for _ in range(500):  # its trace exists (killed before its shim began, it has none)
            if any(trace_pid(t) == outside for t in glob.glob(os.path.join(self.tmp, "*.ctrace"))):
                break
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(outside, 9)  # from outside the job
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(lines[0], "timed out\n")
        worker = int(lines[1].split()[1])
        self.assertEqual(lines[1].split()[0], "-9")
        rep = report(self.tmp)
        (py,) = [q for q in rep["processes"] if q["argv"][:1] == [python()] and q["pid"] != worker]
        killed = {f["pid"]: f for f in rep["findings"] if f["id"] == "proc.killed"}
        (sleeper,) = [q["pid"] for q in rep["processes"] if q["argv"] == ["sleep", "10"] and q["pid"] != outside]
        self.assertEqual(sorted(killed), sorted([sleeper, worker, outside]))
        for pid in (sleeper, worker):
            sender = killed[pid]["evidence"]["sender"]
            self.assertEqual((sender["pid"], sender["api"]), (py["pid"], "kill"))
            self.assertIn(f"pid {py['pid']} (", killed[pid]["summary"])
        self.assertNotIn("sender", killed[outside]["evidence"])
        kills = records(by_pid_trace(self.tmp, py["pid"]), "kill_sent")
        self.assertEqual(sorted((int(k["target"]), int(k["signo"]), int(k["result"])) for k in kills),
                         sorted([(sleeper, 9, 0), (worker, 9, 0)]))

    def test_failed_exec_of_a_static_program_leaves_no_untraced_image(self):
        # A static program that fails to exec (not executable, EACCES): the shell's child
        # goes on and exits 126; no image is recorded as the static program. The child
        # (dash vforks) is a row of its own, named by the shell it ran, with the exec that
        # failed.
        target = os.path.join(self.tmp, "noexec")
        with open(prog("ct_exit_static"), "rb") as src, open(target, "wb") as dst:
            dst.write(src.read())
        os.chmod(target, 0o644)
        p, traces = self.run_traced(["/bin/sh", "-c", f"exec 2>/dev/null; '{target}' exit 4; exit 3"],
                                    expect_rc=3)
        rep = report(self.tmp)
        self.assertEqual([q["exe"] for q in rep["processes"] if q["exe"] == target], [])
        (failed,) = [q for q in rep["processes"] if q.get("traced") is False]
        self.assertEqual(failed["images"], [{"image": 0, "exe": os.path.realpath("/bin/sh"), "traced": False,
                                             "untraced_why": "exec-failed"}])
        self.assertEqual((failed["end"]["kind"], failed["end"]["code"]), ("exited", 126))
        self.assertEqual(failed["end"]["exec_failed"], {"path": target, "argv": [target, "exit", "4"],
                                                        "error": "EACCES"})

    def test_shell_wrapper_that_forks_is_not_mistaken_for_the_job(self):
        target = prog("ct_exit")
        p, traces = self.run_traced(["/bin/sh", "-c", f"'{target}' exit 4; exit 3"],
                                    expect_rc=3)
        self.assertEqual(p.stdout, "out: mode=exit code=4\n")
        self.assertEqual(len(traces), 2)
        rep = report(self.tmp)
        jobs = [q for q in rep["processes"] if q["exe"] == target]
        shells = [q for q in rep["processes"] if q["exe"] != target]
        self.assertEqual(len(jobs), 1)
        self.assertEqual(len(shells), 1)
        job, shell = jobs[0], shells[0]
        self.assertEqual(job["end"]["code"], 4)
        self.assertEqual(job["argv"], [target, "exit", "4"])
        self.assertEqual(shell["end"]["code"], 3)
        self.assertEqual(job["ppid"], shell["pid"])
        # dash starts commands with vfork; vfork children are not listed in the
        # parent's children[] (the shim records no Fork for vfork), only linked by ppid.
        self.assertIn(shell["children"], ([], [job["pid"]]))
        self.assertIn(os.path.basename(shell["exe"]), ("dash", "sh", "bash"))


if __name__ == "__main__":
    unittest.main()
