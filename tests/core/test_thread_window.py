"""Exited threads under the window (issue 39; docs/trace-format.md, "Exited threads"): a
program that makes a thread per task keeps a trace bounded by the window, not by the
threads it made, and still counts every event of every thread; and when each task opens a
path no earlier task opened, the threads' strings share record chunks, so the trace grows
by those strings' bytes, not by a record chunk per thread.

progs/ct_threads.c starts THREADS short threads, 8 at a time; three in four open, read
(4 KiB, then end of file) and close one of NFILES files (four file I/O events), one in
four of those ends in pthread_exit, and every fourth thread writes nothing at all. Its run
with no threads gives the events every run writes besides, so each count is exact."""
import os
import struct
import sys
import unittest

from coretest import prog, report
from test_window import CHUNK, MIB, FilesTest, chunk_kinds, header, io_lines

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
from iotest import assert_same_io, file_rows  # noqa: E402 (tests/io's helpers)

NFILES = 16
THREADS = 20000
READERS = THREADS * 3 // 4  # i % 4 == 3 reads nothing
WINDOW_CHUNKS = MIB // CHUNK  # COLABTRACE_WINDOW_MB=1
# The chunks that are never given up, whatever the thread count: the main thread's record
# chunks (at most 4), a record chunk per file's first reader (its path's string), one state
# chunk (the notes of the 9 threads alive at once), at most 2 I/O aggregate and 3
# thinned-sample chunks. Measured 16 at 3e6c7a1 (13 record chunks, one of each other kind;
# c7719b7's shim made 15,000 more event chunks and 94 state chunks for the same run).
NEVER_DROPPED = 4 + NFILES + 1 + 2 + 3


def events_retired(trace):
    """FileHeader::events_retired (1.5, offset 248)."""
    with open(trace, "rb") as f:
        return struct.unpack_from("<Q", f.read(256), 248)[0]


class ThreadsTest(FilesTest):
    """Runs of ct_threads over the class's NFILES files."""

    def argv(self, threads):
        return [prog("ct_threads"), self.files, str(self.NFILES), str(threads), "8", self.counter]

    def run_threads(self, threads, env):
        """Runs ct_threads under the shim; returns (trace, its JSON report)."""
        trace, out, rep = self.run_prog(self.argv(threads), env)
        self.assertEqual(out, f"threads {threads} reads {threads * 3 // 4}\n")
        return trace, rep

    def base_events(self):
        trace, rep = self.run_threads(0, {})
        w = rep["processes"][0]["window"]
        self.assertEqual(w["events_in_full"], w["events_total"])
        self.assertLess(w["events_total"], 50)
        return w["events_total"]


class ThreadWindowTest(ThreadsTest):
    NFILES = NFILES

    def test_thread_per_task_under_a_small_window_and_in_full(self):
        base = self.base_events()
        trace, small = self.run_threads(THREADS, {"COLABTRACE_WINDOW_MB": "1"})
        w = small["processes"][0]["window"]
        self.assertEqual(w["events_total"], base + 4 * READERS)
        # Each reading thread's one event chunk was retired at its exit with its 4 events.
        self.assertEqual(events_retired(trace), 4 * READERS)
        # The file holds the window's 32 event chunks: the main thread's (its start-up
        # events, never left) and the last 31 reading threads' (4 events each).
        kinds = chunk_kinds(trace)
        self.assertEqual(kinds["event"], WINDOW_CHUNKS)
        self.assertEqual(w["events_in_full"], base + 4 * (WINDOW_CHUNKS - 1))
        self.assertEqual(len(io_lines(trace)), w["events_in_full"])
        h = header(trace)
        self.assertEqual(h["recycled"], READERS - (WINDOW_CHUNKS - 1))
        self.assertLessEqual(sum(n for k, n in kinds.items() if k not in ("event", "unused")), NEVER_DROPPED, kinds)
        self.assertEqual(kinds["state"], 1, "the exited threads' notes are taken again")
        self.assertLessEqual(h["hwm"], CHUNK * (1 + WINDOW_CHUNKS + NEVER_DROPPED))
        self.assertLessEqual(os.path.getsize(trace) - h["hwm"], 2 * MIB, "one reservation ahead at most")
        # The I/O aggregates count every read of every thread.
        rows = file_rows(small, self.files + "/")
        self.assertEqual(len(rows), NFILES * 3 // 4, "thread i reads file i % NFILES")
        self.assertEqual(sum(r["opens"] for r in rows.values()), READERS)
        self.assertEqual(sum(r["reads"] for r in rows.values()), 2 * READERS)
        self.assertEqual(sum(r["bytes_read"] for r in rows.values()), 4096 * READERS)
        self.assertTrue(small["processes"][0]["io"]["from_aggregates"])

        # The same run with a window that holds every thread's event chunk (15,001 of 32 KiB:
        # the default 256 MiB would roll) keeps every event, and gives the same I/O.
        trace, full = self.run_threads(THREADS, {"COLABTRACE_WINDOW_MB": "1024"})
        w = full["processes"][0]["window"]
        self.assertEqual(w["events_total"], base + 4 * READERS)
        self.assertEqual(w["events_in_full"], w["events_total"])
        assert_same_io(self, full, small, self.files)

    def test_sigkill_while_threads_come_and_go(self):
        base = self.base_events()

        def check(trace, done, w):
            # Every thread done is counted; each of the 8 alive may be part way.
            self.assertGreaterEqual(w["events_total"], base + 4 * done)
            self.assertLessEqual(w["events_total"], base + 4 * (done + 8))
            self.assertGreaterEqual(events_retired(trace), 4 * (done - 8))
            self.assertLessEqual(w["events_in_full"], w["events_total"])
            self.assertEqual(len(io_lines(trace)), w["events_in_full"])
            self.assertLessEqual(chunk_kinds(trace)["event"], WINDOW_CHUNKS + 8)

        # 1 MiB is 31 threads' event chunks: the window has long rolled.
        self.kill_runs(self.argv(-1), 4, 500, 3000, check)


DISTINCT = 5000  # files: thread i opens file i, a path no earlier thread opened
DISTINCT_READERS = DISTINCT * 3 // 4
# Record chunks besides the strings' bytes: the main thread's (at most 4) and one lent to
# each thread alive at once (8, and the main thread).
RECORD_CHUNKS_BESIDES = 4 + 9


class DistinctPathsTest(ThreadsTest):
    """Each reading thread interns a new path (one String record) and exits: its string goes
    into a record chunk that an exited thread left with room (docs/trace-format.md, "Exited
    threads"), where each such thread took a 32 KiB record chunk of its own before (5,000
    threads: a 120 MiB trace, 3,751 record chunks, at 68028cb)."""
    NFILES = DISTINCT

    def record_chunks_bound(self, readers):
        """Record chunks for `readers` threads' strings (each the path, at most 16 bytes of
        record around it, in chunks of which at most 1 KiB stays unused) and the rest."""
        path = len(os.path.join(self.files, "f00000"))
        return -(-readers * (path + 16) // (CHUNK - 1024)) + RECORD_CHUNKS_BESIDES

    def assert_every_path_named(self, rep, opened):
        """io.files[] has a row, by its path, for each of the first `opened` files whose
        thread read (i % 4 != 3), each opened once and read whole: every path's String reads."""
        rows = file_rows(rep, self.files + "/")
        expected = {os.path.join(self.files, f"f{i:05d}") for i in range(opened) if i % 4 != 3}
        self.assertEqual(set(rows), expected)
        for path, r in rows.items():
            self.assertEqual((r["opens"], r["reads"], r["bytes_read"]), (1, 2, 4096), path)

    def test_a_new_path_per_thread_adds_its_bytes_not_a_chunk(self):
        base = self.base_events()
        trace, rep = self.run_threads(DISTINCT, {"COLABTRACE_WINDOW_MB": "1"})
        w = rep["processes"][0]["window"]
        self.assertEqual(w["events_total"], base + 4 * DISTINCT_READERS)
        self.assert_every_path_named(rep, DISTINCT)
        kinds = chunk_kinds(trace)
        bound = self.record_chunks_bound(DISTINCT_READERS)
        self.assertLessEqual(bound, 30)
        self.assertLessEqual(kinds["record"], bound, kinds)
        self.assertEqual(kinds["event"], WINDOW_CHUNKS)
        # The file: the window, the record chunks, a slot of 128 bytes per file in the I/O
        # aggregates (254 a chunk) and the few others; 2.5 MiB at most.
        aggregates = -(-(DISTINCT_READERS + 254) // 254)
        self.assertLessEqual(kinds["aggregate"], aggregates, kinds)
        h = header(trace)
        self.assertLessEqual(h["hwm"], CHUNK * (1 + WINDOW_CHUNKS + bound + aggregates + 1 + 3))
        self.assertLessEqual(h["hwm"], 5 * MIB // 2)

    def test_sigkill_while_threads_with_new_paths_come_and_go(self):
        base = self.base_events()

        def check(trace, done, w):
            # Threads come and go until the kill, each with the next file: done reading
            # threads finished (about 4 in 3 threads started), up to 8 more part way.
            self.assertGreaterEqual(w["events_total"], base + 4 * done)
            self.assertLessEqual(w["events_total"], base + 4 * (done + 8))
            rep = report(trace)
            rows = file_rows(rep, self.files + "/")
            self.assertGreaterEqual(len(rows), done)
            self.assertLessEqual(len(rows), done + 8)
            finished = [r for r in rows.values() if r["reads"] == 2]
            self.assertGreaterEqual(len(finished), done)
            self.assertLessEqual(chunk_kinds(trace)["record"], self.record_chunks_bound(done + 8))

        # Killed after 500 to 3,500 reading threads: every one opened a new path.
        self.kill_runs(self.argv(-1), 4, 500, 3000, check)


if __name__ == "__main__":
    unittest.main()
