"""The dl* hooks keep glibc's semantics exactly: every dltest subcommand prints the same
with the shim as without it, and what it prints is what glibc is documented to do.

What is at stake (a naive hook makes libcolabtrace.so "the caller"):
  - a plugin's bare-name dlopen searches the plugin's RUNPATH/RPATH, and $ORIGIN is the
    plugin's directory (cuDNN/cuBLAS load their sub-libraries this way);
  - dlsym(RTLD_NEXT) continues after the calling library (interposer chains);
  - dlsym/dlvsym(RTLD_DEFAULT) from an RTLD_LOCAL library searches its local scope;
  - dlerror() after a failed traced dlopen returns the same text, once;
  - a lookup that only the shim's own hooks could answer fails with glibc's text;
  - RTLD_NOLOAD, dlmopen(LM_ID_NEWLM), dlopen(NULL), LD_LIBRARY_PATH order and
    glibc-hwcaps subdirectories;
  - backtraces taken inside dlopen still reach the program's frames.
"""
import os
import unittest

import ctharness as h

LIBS = os.path.join(h.BUILD, "tests", "libs")
DLTEST = h.test_bin("libs", "dltest")
PLUGIN = os.path.join(LIBS, "origin", "libct_plugin.so")
PLUGIN_RPATH = os.path.join(LIBS, "origin", "libct_plugin_rpath.so")
DEP = os.path.join(LIBS, "origin", "deps", "libct_dep.so")


def run(args, traced, env=None):
    r = h.run_traced([DLTEST, *args], env=env, preload=traced)
    return r


class DlSemanticsTest(h.TempDirTest):
    def same(self, args, expected, env=None):
        """Runs dltest with and without the shim; both must print `expected` exactly."""
        bare = run(args, traced=False, env=env)
        traced = run(args, traced=True, env=env)
        self.assertEqual(bare.stdout, expected, f"without the shim: {bare.stderr}")
        self.assertEqual(traced.stdout, expected, f"with the shim: {traced.stderr}")
        self.assertEqual(bare.returncode, traced.returncode)
        self.assertEqual(traced.stderr, bare.stderr)
        self.assertEqual(len(traced.traces), 1, traced.traces)
        return traced

    def test_origin_runpath_bare_name(self):
        for plugin in (PLUGIN, PLUGIN_RPATH):
            self.same(["origin", plugin, "ct_plugin_bare"],
                      "ct_plugin_bare: dep from origin/deps\n")

    def test_origin_dst_in_filename(self):
        self.same(["origin", PLUGIN, "ct_plugin_dst"], "ct_plugin_dst: dep from origin/deps\n")

    def test_rtld_default_searches_callers_local_scope(self):
        self.same(["origin", PLUGIN, "ct_plugin_default_local"],
                  "ct_plugin_default_local: localdep\n")

    def test_rtld_next_from_plugin(self):
        self.same(["origin", PLUGIN, "ct_plugin_next"], "ct_plugin_next: localdep\n")

    def test_dlvsym_default_from_plugin(self):
        self.same(["origin", PLUGIN, "ct_plugin_dlvsym"],
                  "ct_plugin_dlvsym: versioned found, wrong version missing\n")

    def test_rtld_next_chain_of_interposers(self):
        self.same(["next"], "chain: a>b>base\nnext from main: libct_interp_a.so\n"
                            "default == direct: 1\n")

    def test_rtld_noload(self):
        self.same(["noload", DEP],
                  "noload before: NULL\ndlerror: (null)\nloaded: handle, noload after: handle, "
                  "same: 1\nnoload after close: NULL\n")

    def test_dlmopen_new_namespace(self):
        self.same(["dlmopen", DEP, "ct_dep_name"],
                  "namespace is new: 1\nct_dep_name: dep from origin/deps\n"
                  "same namespace noload: 1\nin base namespace: NULL\n")

    def test_dlopen_null(self):
        self.same(["null"], "handle: handle\nmain marker: 1\nsame: 1\n")

    def test_dlerror_state(self):
        self.same(["dlerror"],
                  "initial: (null)\nmissing: NULL\n"
                  "first: libct_missing.so.8: cannot open shared object file: No such file or directory\n"
                  "second: (null)\nafter success: (null) (1)\n"
                  "after dladdr: libct_missing.so.8: cannot open shared object file: No such file or directory\n"
                  "lookup: dltest: undefined symbol: ct_no_such_symbol\n"
                  "after dlinfo: (null)\nhandle lookup failed: 1\n")

    def test_lookups_that_only_the_shims_hooks_answer_still_fail(self):
        self.same(["cudasym"],
                  "dlsym cudaMalloc: NULL, dltest: undefined symbol: cudaMalloc\nagain: (null)\n"
                  "dlsym cuMemAlloc_v2: NULL, dltest: undefined symbol: cuMemAlloc_v2\nagain: (null)\n"
                  "dlvsym cudaMalloc: NULL, dltest: undefined symbol: cudaMalloc, version libcudart.so.12\n")

    def test_ld_library_path_order(self):
        one, two = (os.path.join(LIBS, "variants", d) for d in ("one", "two"))
        self.same(["bare", "libct_which.so", "ct_which"], "ct_which: two\n",
                  env={"LD_LIBRARY_PATH": f"{two}:{one}"})
        self.same(["bare", "libct_which.so", "ct_which"], "ct_which: one\n",
                  env={"LD_LIBRARY_PATH": f"{one}:{two}"})

    def test_glibc_hwcaps_subdirectory(self):
        hw = os.path.join(LIBS, "variants", "hw")
        bare = run(["bare", "libct_which.so", "ct_which"], traced=False,
                   env={"LD_LIBRARY_PATH": hw})
        # glibc 2.33+ prefers glibc-hwcaps/x86-64-v2 on any CPU that supports it.
        self.assertIn(bare.stdout, ("ct_which: x86-64-v2\n", "ct_which: baseline\n"))
        self.same(["bare", "libct_which.so", "ct_which"], bare.stdout,
                  env={"LD_LIBRARY_PATH": hw})

    def test_backtrace_inside_dlopen_reaches_caller(self):
        self.same(["unwind", os.path.join(LIBS, "libct_unwind_plugin.so")],
                  "marker in constructor backtrace: 1\nframes reach main: 1\n")

    def test_concurrent_loads(self):
        r = self.same(["threads", DEP], "thread failures: 0\n")
        loads = h.records(r.traces[0], "lib_load")
        calls = [x for x in loads if x["api"] == "1" and x["requested"] == DEP]
        self.assertEqual(len(calls), 8 * 200)
        failed = [x for x in loads if x["api"] == "1" and x["requested"] == "libct_missing.so.8"]
        self.assertEqual(len(failed), 8 * 200)
        self.assertTrue(all(x["ok"] == "0" for x in failed))
        self.assertTrue(all(x["error"] == "libct_missing.so.8: cannot open shared object file: "
                            "No such file or directory" for x in failed))


if __name__ == "__main__":
    unittest.main()
