"""Runs one unit of a real test suite and streams per-test outcomes to a file.

This script runs INSIDE the interpreter under test (bare or with the shim preloaded), so
it uses nothing but the standard library (and pytest for pytest units). Every outcome is
appended to $PARITY_EVENTS as one JSON line and flushed at once: when the process dies
half-way (a signal, a hang killed by the watchdog), the harness still knows which tests
finished and which one was running.

  parity_driver.py unittest MODULE [MODULE...] [-k PATTERN ...]
  parity_driver.py pytest [--rootdir-of PACKAGE] PYTEST-ARGS...

Events: {"pid": N} first, then {"start": id} and {"end": id, "outcome": o, "detail": s}
with o in ok | fail | error | skip. Ids listed one per line in $PARITY_DONE (if set) are
not run again (the harness restarts a unit after a crash with the finished ids there);
if $PARITY_ONLY names a file, only the ids listed there run.
$PARITY_TEST_TIMEOUT (seconds) arms faulthandler's watchdog per test: a test that hangs
dumps every thread's stack and ends the process, and the harness records "timeout".
"""
import faulthandler
import json
import os
import sys

EVENTS_FD = os.open(os.environ["PARITY_EVENTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
TEST_TIMEOUT = float(os.environ.get("PARITY_TEST_TIMEOUT", "0") or 0)


def emit(**event):
    os.write(EVENTS_FD, (json.dumps(event) + "\n").encode())


def read_ids(var):
    path = os.environ.get(var)
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return {line.rstrip("\n") for line in f if line.strip()}


def wanted(test_id, skip=read_ids("PARITY_DONE") or set(), only=read_ids("PARITY_ONLY")):
    """False for ids already run ($PARITY_DONE) or not asked for ($PARITY_ONLY)."""
    return test_id not in skip and (only is None or test_id in only)


def arm_watchdog():
    if TEST_TIMEOUT > 0:
        faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True)


def disarm_watchdog():
    if TEST_TIMEOUT > 0:
        faulthandler.cancel_dump_traceback_later()


def run_unittest(argv):
    import unittest
    from test import support

    # As regrtest without -u: no optional resources (network, cpu, ...).
    support.use_resources = []
    support.verbose = 0
    modules, patterns = [], []
    it = iter(argv)
    for a in it:
        if a == "-k":
            patterns.append(next(it))
        else:
            modules.append(a)
    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = ["*%s*" % p if "*" not in p else p for p in patterns]
    def flatten(suite):
        for t in suite:
            if isinstance(t, unittest.TestSuite):
                yield from flatten(t)
            else:
                yield t

    tests = []
    for name in modules:
        for t in flatten(loader.loadTestsFromName(name)):
            if wanted(t.id()):
                tests.append(t)

    class StreamingResult(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self._failed = set()

        def startTest(self, test):
            super().startTest(test)
            emit(start=test.id())
            arm_watchdog()

        def stopTest(self, test):
            disarm_watchdog()
            super().stopTest(test)

        def _end(self, test, outcome, detail=""):
            emit(end=test.id(), outcome=outcome, detail=detail[-2000:])

        def addSuccess(self, test):
            super().addSuccess(test)
            if test.id() not in self._failed:
                self._end(test, "ok")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._end(test, "fail", self._exc_info_to_string(err, test))

        def addError(self, test, err):
            super().addError(test, err)
            # Fixture errors (setUpClass, tearDownModule) come with an _ErrorHolder.
            self._end(test, "error", self._exc_info_to_string(err, test))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._end(test, "skip", str(reason))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._end(test, "ok", "expected failure")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._end(test, "fail", "unexpected success")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None and test.id() not in self._failed:
                self._failed.add(test.id())
                kind = "fail" if issubclass(err[0], test.failureException) else "error"
                self._end(test, kind, "%s: %s" % (subtest.id(), self._exc_info_to_string(err, test)))

    result = StreamingResult()
    unittest.TestSuite(tests).run(result)
    return 0


def run_pytest(argv):
    import pytest

    class StreamingPlugin:
        def pytest_collection_modifyitems(self, session, config, items):
            items[:] = [i for i in items if wanted(i.nodeid)]

        def pytest_runtest_logstart(self, nodeid, location):
            emit(start=nodeid)
            arm_watchdog()

        def pytest_runtest_logreport(self, report):
            # One outcome per test: the first failing phase, else the call phase.
            if report.when == "call" or report.outcome != "passed":
                if hasattr(report, "wasxfail"):
                    outcome = "ok" if report.skipped else "fail"
                elif report.skipped:
                    outcome = "skip"
                elif report.failed:
                    outcome = "fail" if report.when == "call" else "error"
                else:
                    outcome = "ok"
                emit(end=report.nodeid, outcome=outcome, detail=str(report.longrepr or "")[-2000:])

        def pytest_runtest_logfinish(self, nodeid, location):
            disarm_watchdog()

    if argv[:1] == ["--rootdir-of"]:
        # Test ids relative to the directory that holds the package (numpy/lib/tests/...).
        import importlib
        package = importlib.import_module(argv[1])
        argv = ["--rootdir", os.path.dirname(os.path.dirname(package.__file__))] + argv[2:]
    return pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts="] + argv, plugins=[StreamingPlugin()])


def main():
    emit(pid=os.getpid())
    kind, argv = sys.argv[1], sys.argv[2:]
    rc = run_unittest(argv) if kind == "unittest" else run_pytest(argv)
    emit(finished=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown problems being reported as test results: the verdict is in
    # the events; the exit code only says that the unit ran to its end.
    return 0 if rc in (0, 1) else rc


if __name__ == "__main__":
    sys.exit(main())
