"""`colabtrace report --format html` end to end (issue 11): real programs run under the
shim, and the page is checked against what they did, with exact counts:

- GPU memory: one failure marker per failed cudaMalloc, the capacity line, the
  address-space maps (at the peak and at each out-of-memory failure);
- host memory: the processes stacked, the killed one marked (under `colabtrace run`);
- I/O: the small-file histogram counts exactly the files read, bin by bin;
- tables: libraries with their CUDA majors, duplicates and mixed majors highlighted;
  processes grouped by role;
- a hostile file name is escaped: no <img> element exists in the parsed page, nor in
  headless Chromium's DOM (skipped, with a message, where Chromium is not installed);
- the page loads nothing external (CSP meta, no src, only #anchors) and Chromium logs
  no console error;
- 2,000 processes: tables capped, series down-sampled, the page under 5 MB.
"""
import html.parser
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import unittest
import zlib

import ctharness as h

CLI_WORKLOAD = h.test_bin("cli", "cli_workload")
GPU_WORKLOAD = h.test_bin("cli", "cli_gpu_workload")
SIMCUDA_DIR = os.path.join(h.BUILD, "simcuda")
CTLOAD = h.test_bin("libs", "ctload")
FAKE_CUDART12 = os.path.join(h.BUILD, "tests", "libs", "fakecuda12", "libcudart.so.12")
SIM_CUDART13 = os.path.join(SIMCUDA_DIR, "libcudart.so.13")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "headless Chromium is not installed (Debian package `chromium`; tools/lib/setup.sh lists it)"
HOSTILE = "<img src=x onerror=alert(1)>.bin"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
MIB = 1 << 20
HAVE_TORCH = os.path.exists(h.SYSTEM_PYTHON) and subprocess.run(
    [h.SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
VOID = {"meta", "br", "img", "input", "link", "hr", "source", "area", "base", "col", "embed", "wbr"}


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.parts = [], []

    @property
    def classes(self):
        return (self.attrs.get("class") or "").split()

    def text(self):
        return "".join(p if isinstance(p, str) else p.text() for p in self.parts)

    def walk(self):
        for c in self.children:
            yield c
            yield from c.walk()

    def find(self, tag=None, cls=None):
        return [e for e in self.walk() if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)]


class Dom(html.parser.HTMLParser):
    """The page as a tree of elements (the stdlib parser decodes entities in text and
    attributes exactly as a browser does)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.cur = self.root
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self.cur)
        self.cur.children.append(e)
        self.cur.parts.append(e)
        if tag not in VOID:
            self.cur = e

    def handle_startendtag(self, tag, attrs):
        e = Element(tag, attrs, self.cur)
        self.cur.children.append(e)
        self.cur.parts.append(e)

    def handle_endtag(self, tag):
        e = self.cur
        while e is not self.root and e.tag != tag:
            e = e.parent
        if e is not self.root:
            self.cur = e.parent

    def handle_data(self, data):
        self.cur.parts.append(data)


def render(*paths) -> tuple[str, Dom]:
    out = os.path.join(tempfile.mkdtemp(prefix="ct-html-"), "report.html")
    p = h.cli("report", "--format", "html", "-o", out, *paths)
    with open(out, encoding="utf-8") as f:
        text = f.read()
    shutil.rmtree(os.path.dirname(out))
    return text, Dom(text)


def cli_workload(out_dir, *args, check=True):
    r = h.run_traced([CLI_WORKLOAD, *map(str, args)], out_dir=out_dir)
    if check and r.returncode != 0:
        raise AssertionError(f"cli_workload {args} exited {r.returncode}: {r.stderr}")
    return r


def chromium(*args, timeout=120) -> subprocess.CompletedProcess:
    home = tempfile.mkdtemp(prefix="ct-chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-dev-shm-usage",
                               "--user-data-dir=" + home, "--enable-logging=stderr", "--v=0", *args],
                              capture_output=True, text=True, timeout=timeout,
                              env={**{k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}, "HOME": home})
    finally:
        shutil.rmtree(home, ignore_errors=True)


_CHROMIUM_RUNS = None


def chromium_cannot_run() -> str:
    """Why an installed Chromium cannot render even a trivial page on this machine (a
    container without what it needs), or "" when it can. Our pages are judged only by a
    Chromium that works: a broken install is a skip with its reason, not a failure."""
    global _CHROMIUM_RUNS
    if _CHROMIUM_RUNS is None:
        page = os.path.join(tempfile.mkdtemp(prefix="ct-chromium-probe-"), "ok.html")
        with open(page, "w") as f:
            f.write("<!DOCTYPE html><html><body><p>ok</p></body></html>")
        try:
            r = chromium("--dump-dom", "file://" + page, timeout=90)
            ok = r.returncode == 0 and "<p>ok</p>" in r.stdout
            _CHROMIUM_RUNS = "" if ok else f"Chromium is installed but cannot render a page here (exit {r.returncode}): {r.stderr[-500:]}"
        except subprocess.TimeoutExpired:
            _CHROMIUM_RUNS = "Chromium is installed but did not render a trivial page within 90 s here"
        finally:
            shutil.rmtree(os.path.dirname(page), ignore_errors=True)
    return _CHROMIUM_RUNS


def png_pixels(path: str) -> tuple[int, int, list[bytes]]:
    """(width, height, rows) of an 8-bit RGB or RGBA PNG (as Chromium writes its
    screenshots), each row its pixels' bytes with the filters undone."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for k, v in enumerate(line) if k % 4 != 3))
        prev = line
    return width, height, rows


def count_color(rows: list[bytes], rgb: tuple[int, int, int]) -> int:
    """Pixels of exactly this colour."""
    px = bytes(rgb)
    return sum(sum(1 for k in range(0, len(r), 3) if r[k:k + 3] == px) for r in rows)


def console_errors(stderr: str) -> list[str]:
    """Console messages of the page (errors, CSP refusals) in Chromium's log."""
    return [l for l in stderr.splitlines() if "CONSOLE" in l or "Refused to" in l or "Uncaught" in l]


class ReportHtml(h.TempDirTest):
    def assertSelfContained(self, text, dom):
        metas = [m for m in dom.root.find("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"]
        self.assertEqual([m.attrs["content"] for m in metas], [CSP])
        self.assertEqual(dom.root.find("script"), [])
        self.assertEqual(dom.root.find("img"), [])
        self.assertEqual(dom.root.find("link"), [])
        for e in dom.root.walk():
            self.assertNotIn("src", e.attrs, e.tag)
            if "href" in e.attrs:
                self.assertTrue(e.attrs["href"].startswith("#"), e.attrs["href"])
            for name in e.attrs:
                self.assertFalse(name.startswith("on"), (e.tag, name))
        self.assertIsNone(re.search(r"https?://", text))

    # ---- GPU memory ---------------------------------------------------------------------

    def test_gpu_failure_markers_capacity_and_address_maps(self):
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_CONTEXT_BYTES": "64M"}
        r = h.run_traced([GPU_WORKLOAD, "--allocs", "5", "--size", str(64 * MIB), "--leak", "1", "--fail", "3"],
                         env=env, out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = h.report(self.tmp)
        self.assertEqual(rep["gpu"]["failed_allocations"], 3)
        text, dom = render(self.tmp)
        self.assertSelfContained(text, dom)
        (device,) = dom.root.find("div", "device")
        self.assertEqual(device.attrs["data-failures"], "3")
        self.assertEqual(device.attrs["data-oom"], "3")
        markers = device.find("polygon", "fail")
        self.assertEqual(sum(int(m.attrs["data-n"]) for m in markers), 3)
        self.assertEqual({m.attrs["data-kind"] for m in markers}, {"oom"})
        for m in markers:
            self.assertIn("cudaMalloc of 1.0 TiB failed (cudaErrorMemoryAllocation)", m.text())
        # The device's capacity (1 GiB) is drawn, the peak (5 x 64 MiB) named.
        self.assertEqual(len(device.find("line", "capacity")), 1)
        legend = device.find("ul", "legend")[0].text()
        self.assertIn("device memory 1.0 GiB", legend)
        self.assertIn("peak 320.0 MiB", legend)
        self.assertIn("3 out-of-memory failures", legend)
        # Address maps: at the peak, then at each failure; all five segments live in each.
        maps = device.find("figure", "amap")
        self.assertEqual(len(maps), 4)
        self.assertIn("at its peak (320.0 MiB", maps[0].text())
        for m in maps[1:]:
            self.assertIn("at the failure", m.text())
        self.assertEqual([m.attrs["data-segments"] for m in maps], ["5"] * 4)
        self.assertEqual(len(maps[0].find("rect", "amap-seg")), 5)
        # The verdict comes first (no process stepped: no step plot), then the findings
        # with their evidence.
        sections = [s.attrs["id"] for s in dom.root.find("section")]
        self.assertEqual(sections[:3], ["verdict", "findings", "gpu"])
        ids = [a.attrs["data-id"] for a in dom.root.find("article", "finding")]
        self.assertEqual(ids, [f["id"] for f in rep["findings"]])
        self.assertIn("gpu.oom", ids)
        oom = [a for a in dom.root.find("article", "finding") if a.attrs["data-id"] == "gpu.oom"][0]
        self.assertIn("request_bytes", oom.find("details", "evidence")[0].text())

    def test_address_map_at_each_failure_follows_the_frees_between_them(self):
        # Four 1 GiB segments fill a 4 GiB device; then fail, free one, fail, free one, fail.
        code = ("import ctypes, sys\n"
                "rt = ctypes.CDLL('libcudart.so.13')\n"
                "rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]\n"
                "rt.cudaFree.argtypes = [ctypes.c_void_p]\n"
                "G = 1 << 30\n"
                "ps = [ctypes.c_void_p() for _ in range(4)]\n"
                "assert all(rt.cudaMalloc(ctypes.byref(p), G) == 0 for p in ps)\n"
                "q = ctypes.c_void_p()\n"
                "assert rt.cudaMalloc(ctypes.byref(q), G) == 2\n"
                "assert rt.cudaFree(ps[1]) == 0\n"
                "assert rt.cudaMalloc(ctypes.byref(q), 2 * G) == 2\n"
                "assert rt.cudaFree(ps[3]) == 0\n"
                "assert rt.cudaMalloc(ctypes.byref(q), 3 * G) == 2\n")
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": "4G", "SIMCUDA_CONTEXT_BYTES": "0"}
        r = h.run_traced([h.SYSTEM_PYTHON, "-c", code], env=env, out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        text, dom = render(self.tmp)
        (device,) = dom.root.find("div", "device")
        maps = device.find("figure", "amap")[1:]  # after the one at the peak
        self.assertEqual([(m.attrs["data-segments"], m.attrs["data-free-extents"]) for m in maps],
                         [("4", "0"), ("3", "1"), ("2", "2")])
        self.assertEqual([len(m.find("rect", "amap-gap")) for m in maps], [0, 1, 2])
        self.assertEqual([len(m.find("rect", "amap-seg")) for m in maps], [4, 3, 2])

    def test_two_processes_on_one_device_add_up(self):
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_CONTEXT_BYTES": "64M"}
        for allocs in (2, 3):  # one after the other: 128 MiB, then 192 MiB
            r = h.run_traced([GPU_WORKLOAD, "--allocs", str(allocs), "--size", str(64 * MIB)], env=env,
                             out_dir=self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
        rep = h.report(self.tmp)
        by_peak = sorted((p["gpu"]["peak_bytes"], p["pid"]) for p in rep["processes"])
        self.assertEqual([b for b, _ in by_peak], [128 * MIB, 192 * MIB])
        text, dom = render(self.tmp)
        (device,) = dom.root.find("div", "device")
        legend = [li.text() for li in device.find("ul", "legend")[0].find("li")]
        self.assertEqual(legend[0], "live bytes, all processes (peak 192.0 MiB)")
        self.assertEqual(sorted(legend[1:3]), sorted([f"pid {by_peak[0][1]} (peak 128.0 MiB)",
                                                      f"pid {by_peak[1][1]} (peak 192.0 MiB)"]))
        self.assertEqual(len(device.find("polyline", "rss")), 2)

    def test_gpu_series_down_sampled_keeps_the_peak_and_counts_every_failure(self):
        # 2,500 allocations and frees (5,000 changes of live bytes) and 600 failures: more
        # than a plot draws one by one.
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": "16G", "SIMCUDA_CONTEXT_BYTES": "64M"}
        r = h.run_traced([GPU_WORKLOAD, "--allocs", "2500", "--size", str(2 * MIB), "--fail", "600"],
                         env=env, out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = h.report(self.tmp)
        self.assertEqual(rep["gpu"]["failed_allocations"], 600)
        self.assertEqual(rep["gpu"]["peak_bytes"], 2500 * 2 * MIB)
        text, dom = render(self.tmp)
        (device,) = dom.root.find("div", "device")
        markers = device.find("polygon", "fail")
        self.assertLess(len(markers), 600)
        self.assertEqual(sum(int(m.attrs["data-n"]) for m in markers), 600)
        (line,) = device.find("polyline", "s0")
        points = [tuple(map(float, p.split(","))) for p in line.attrs["points"].split()]
        self.assertLessEqual(len(points), 2 * 1000 + 1)
        # The peak survives down-sampling: the highest point is the 4.9 GiB one.
        self.assertIn("peak 4.9 GiB", device.find("ul", "legend")[0].text())
        # The plot maps [0, y_max] onto y in [230, 16]; y_max is 1.05 x the 16 GiB capacity.
        y_max = 1.05 * 16 * 1024 * MIB
        (capacity,) = device.find("line", "capacity")
        self.assertAlmostEqual(float(capacity.attrs["y1"]), 16 + 214 * (1 - 16 * 1024 * MIB / y_max), delta=0.06)
        top = min(y for _, y in points)
        self.assertAlmostEqual(top, 16 + 214 * (1 - 2500 * 2 * MIB / y_max), delta=0.06)
        self.assertEqual(len(device.find("figure", "amap")), 1 + 8)  # the peak, then 8 of 600 failures
        self.assertIn("592 more address maps at failures", device.text())

    # ---- host memory --------------------------------------------------------------------

    def run_python_sampled(self, code: str, returncode: int, timeout: int) -> tuple[dict, Dom]:
        """`colabtrace run` of Debian's python3 -c code, sampled every 50 ms: its JSON report
        and its HTML page (checked self-contained)."""
        r = h.colabtrace_run(self.tmp, [h.SYSTEM_PYTHON, "-c", code], env={"COLABTRACE_SAMPLE_MS": "50"},
                             timeout=timeout)
        self.assertEqual(r.returncode, returncode, r.stderr)
        rep = h.report(self.tmp)
        text, dom = render(self.tmp)
        self.assertSelfContained(text, dom)
        return rep, dom

    def test_host_memory_stacks_workers_and_marks_the_kill(self):
        code = ("import os, signal, time\n"
                "kids = []\n"
                "for i in range(2):\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        b = bytearray(24 << 20)\n"
                "        for j in range(0, len(b), 4096): b[j] = 1\n"
                "        time.sleep(0.6)\n"
                "        os._exit(0)\n"
                "    kids.append(pid)\n"
                "big = bytearray(32 << 20)\n"
                "for j in range(0, len(big), 4096): big[j] = 1\n"
                "for p in kids: os.waitpid(p, 0)\n"
                "os.kill(os.getpid(), signal.SIGKILL)\n")
        rep, dom = self.run_python_sampled(code, 128 + signal.SIGKILL, timeout=120)
        killed = [p for p in rep["processes"] if p["end"]["kind"] == "killed"]
        self.assertEqual(len(killed), 1)
        (host,) = dom.root.find("div", "host")
        self.assertEqual(host.attrs["data-processes"], "3")
        (fig,) = host.find("figure", "hostmem")
        self.assertEqual(fig.attrs["data-kills"], "1")
        kill_labels = [t.text() for t in fig.find("text", "event-label")]
        self.assertEqual(kill_labels, [f"pid {killed[0]['pid']} killed (SIGKILL)"])
        legend = [li.text() for li in host.find("ul", "legend")[0].find("li")]
        pss = [l for l in legend if l.startswith("PSS: ")]
        self.assertEqual(len(pss), 3, legend)
        self.assertEqual(sum("(fork)" in l for l in pss), 2, pss)
        self.assertGreaterEqual(len(fig.find("polygon", "band")), 3)
        self.assertIn("1 killed", legend)

    @unittest.skipUnless(HAVE_TORCH, "needs python3-torch (Debian's /usr/bin/python3)")
    def test_torch_dataloader_workers_are_stacked_on_the_main_process(self):
        code = ("import time, torch\n"
                "from torch.utils.data import DataLoader, Dataset\n"
                "class Slow(Dataset):\n"
                "    def __len__(self): return 16\n"
                "    def __getitem__(self, i):\n"
                "        time.sleep(0.05)\n"
                "        return torch.full((1 << 18,), float(i))\n"
                "if __name__ == '__main__':\n"
                "    print(sum(int(b.sum().item()) for b in DataLoader(Slow(), batch_size=2, num_workers=2)))\n")
        rep, dom = self.run_python_sampled(code, 0, timeout=300)
        workers = [p for p in rep["processes"] if p["origin"] == "fork"]
        self.assertEqual(len(workers), 2, [(p["pid"], p["argv"]) for p in rep["processes"]])
        (host,) = dom.root.find("div", "host")
        legend = [li.text() for li in host.find("ul", "legend")[0].find("li")]
        pss = [l for l in legend if l.startswith("PSS: ")]
        # The main process first (bottom of the stack), its two workers above it.
        self.assertEqual(len(pss), 3, legend)
        self.assertNotIn("(fork)", pss[0])
        self.assertEqual(sorted(int(re.search(r"pid (\d+)", l).group(1)) for l in pss[1:]),
                         sorted(p["pid"] for p in workers))
        self.assertEqual(dom.root.find("figure", "hostmem")[0].attrs["data-kills"], "0")
        roles = {r.find("td")[0].text(): int(r.attrs["data-count"]) for r in dom.root.find("tr", "role")}
        self.assertEqual(sum(roles.values()), len(rep["processes"]))
        self.assertEqual(sum(n for role, n in roles.items() if role.endswith("(fork)")), 2)

    def test_damaged_traces_still_render(self):
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_CONTEXT_BYTES": "64M"}
        r = h.run_traced([GPU_WORKLOAD, "--allocs", "50", "--fail", "2"], env=env, out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(r.traces[0], "rb") as f:
            data = f.read()
        cut_dir = os.path.join(self.tmp, "cut")
        os.makedirs(cut_dir)
        for n, size in enumerate(range(100, len(data), max(1, len(data) // 12))):
            path = os.path.join(cut_dir, f"c{n}.ctrace")
            with open(path, "wb") as f:
                f.write(data[:size])
            p = h.cli("report", "--format", "html", "-o", os.path.join(cut_dir, f"c{n}.html"), path, check=False)
            self.assertIn(p.returncode, (0, 1, 2), p.stderr)
            if p.returncode == 0:
                with open(os.path.join(cut_dir, f"c{n}.html"), encoding="utf-8") as f:
                    text = f.read()
                self.assertSelfContained(text, Dom(text))
        flipped = bytearray(data)
        for i in range(4096, len(flipped), 97):
            flipped[i] ^= 0x5a
        path = os.path.join(cut_dir, "flipped.ctrace")
        with open(path, "wb") as f:
            f.write(flipped)
        p = h.cli("report", "--format", "html", "-o", os.path.join(cut_dir, "flipped.html"), path, check=False)
        self.assertIn(p.returncode, (0, 1, 2), p.stderr)

    # ---- I/O and the processes table -----------------------------------------------------

    def test_small_file_histogram_counts_each_file_read(self):
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        sizes = [100] * 7 + [5000] * 5 + [2 * MIB] * 2
        out = os.path.join(self.tmp, "traces")
        os.makedirs(out)
        for i, size in enumerate(sizes):
            path = os.path.join(data, f"f{i:02d}.bin")
            with open(path, "wb") as f:
                f.write(os.urandom(size))
            cli_workload(out, "--file", path, "--reads", 1, "--chunk", size)
        rep = h.report(out)
        self.assertEqual(len(rep["processes"]), len(sizes))
        text, dom = render(out)
        self.assertSelfContained(text, dom)
        (fig,) = dom.root.find("figure", "sizes")
        self.assertEqual(fig.attrs["data-files"], str(len(sizes)))
        bins = {}
        for rect in fig.find("rect", "bar"):
            m = re.fullmatch(r"(\d+) files of (\S+) bytes read", rect.text())
            bins[m.group(2)] = int(m.group(1))
        self.assertEqual({k: v for k, v in bins.items() if v}, {"0-100": 7, "1K-10K": 5, "1M-4M": 2})
        self.assertEqual(sum(bins.values()), len(sizes))
        self.assertEqual(len(bins), 10)
        # The files table: every file read, each once.
        paths = sorted(td.text() for td in dom.root.find("table", "files")[0].find("td", "path"))
        self.assertEqual(paths, sorted(os.path.join(data, f"f{i:02d}.bin") for i in range(len(sizes))))
        # Time by directory: the one data directory.
        io = [s for s in dom.root.find("section") if s.attrs["id"] == "io"][0]
        self.assertIn(data, io.find("svg", "bars")[0].text())
        # The processes: one role, 14 processes, each in the table.
        (role,) = dom.root.find("tr", "role")
        self.assertEqual(role.attrs["data-count"], str(len(sizes)))
        self.assertEqual(sorted(int(r.attrs["data-pid"]) for r in dom.root.find("tr", "proc")),
                         sorted(p["pid"] for p in rep["processes"]))

    def test_processes_grouped_by_role(self):
        cli_workload(self.tmp, "--fork", 3)
        cli_workload(self.tmp, "--setenv", 1)
        text, dom = render(self.tmp)
        roles = {r.find("td")[0].text(): int(r.attrs["data-count"]) for r in dom.root.find("tr", "role")}
        self.assertEqual(roles, {"cli_workload": 2, "cli_workload (fork)": 3})
        self.assertEqual(len(dom.root.find("tr", "proc")), 5)

    # ---- libraries ------------------------------------------------------------------------

    def test_libraries_table_highlights_duplicates_and_mixed_majors(self):
        r = h.run_traced([CTLOAD, f"open:{SIM_CUDART13}", f"open:{FAKE_CUDART12}"],
                         env={"LD_LIBRARY_PATH": SIMCUDA_DIR}, out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = h.report(self.tmp)
        self.assertEqual(len(h.findings(rep, "abi.duplicate-library")), 1)
        self.assertEqual(len(h.findings(rep, "abi.mixed-cuda-majors")), 1)
        text, dom = render(self.tmp)
        rows = {}
        for tr in dom.root.find("table", "libs")[0].find("tr"):
            tds = tr.find("td")
            if tds:
                rows[tds[4].text()] = (tr.classes, tds[2].text())
        self.assertEqual(rows[SIM_CUDART13], (["dup", "mixed"], "13"))
        self.assertEqual(rows[FAKE_CUDART12], (["dup", "mixed"], "12"))
        flagged = [p for p, (cls, _) in rows.items() if cls]
        self.assertEqual(sorted(flagged), sorted([SIM_CUDART13, FAKE_CUDART12]))
        self.assertEqual(len(rows), len({l["path"] for l in rep["libraries"] if l["ok"]}))

    # ---- escaping and Chromium -------------------------------------------------------------

    def test_hostile_file_name_is_escaped(self):
        path = os.path.join(self.tmp, HOSTILE)
        with open(path, "wb") as f:
            f.write(b"x" * 8192)
        out = os.path.join(self.tmp, "traces")
        os.makedirs(out)
        cli_workload(out, "--file", path, "--reads", 2, "--chunk", 4096)
        rep = h.report(out)
        self.assertIn(path, [f["path"] for f in rep["io"]["files"]])
        text, dom = render(out)
        self.assertNotIn(HOSTILE, text)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;.bin", text)
        self.assertSelfContained(text, dom)
        self.assertIn(path, [td.text() for td in dom.root.find("td", "path")])
        if not CHROMIUM:
            self.skipTest(NO_CHROMIUM)
        if chromium_cannot_run():
            self.skipTest(chromium_cannot_run())
        page = os.path.join(self.tmp, "report.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(text)
        r = chromium("--dump-dom", "file://" + page)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("<section id=\"io\">", r.stdout)
        self.assertNotIn("<img", r.stdout)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;.bin", r.stdout)
        self.assertEqual(console_errors(r.stderr), [])

    @unittest.skipUnless(CHROMIUM, NO_CHROMIUM)
    def test_chromium_loads_the_page_without_console_errors_or_requests(self):
        if chromium_cannot_run():
            self.skipTest(chromium_cannot_run())
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_CONTEXT_BYTES": "64M"}
        r = h.run_traced([GPU_WORKLOAD, "--allocs", "3", "--fail", "1"], env=env, out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        cli_workload(self.tmp, "--file", GPU_WORKLOAD, "--reads", 2, "--chunk", 4096)
        text, dom = render(self.tmp)
        self.assertSelfContained(text, dom)
        page = os.path.join(self.tmp, "report.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(text)
        # The detector sees a console error where there is one (a page of our own).
        probe = os.path.join(self.tmp, "probe.html")
        with open(probe, "w") as f:
            f.write("<!DOCTYPE html><html><body><script>console.error('probe-error')</script></body></html>")
        pr = chromium("--dump-dom", "file://" + probe)
        self.assertTrue(any("probe-error" in l for l in console_errors(pr.stderr)), pr.stderr[-2000:])
        r = chromium("--dump-dom", "file://" + page)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(console_errors(r.stderr), [])
        rendered = Dom(r.stdout)
        self.assertGreaterEqual(len(rendered.root.find("svg", "chart")), 2)  # GPU and host memory
        self.assertSelfContained(r.stdout, rendered)
        shot = os.path.join(self.tmp, "shot.png")
        r = chromium("--screenshot=" + shot, "--window-size=1100,1400", "file://" + page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertEqual(console_errors(r.stderr), [])

    @unittest.skipUnless(CHROMIUM, NO_CHROMIUM)
    @unittest.skipUnless(HAVE_TORCH, "needs python3-torch (Debian's /usr/bin/python3)")
    def test_first_screen_shows_the_verdict_and_the_step_plot(self):
        # A real PyTorch loop: 24 optimizer steps fed by two DataLoader workers whose
        # samples take 10 ms each, 5 ms of compute per step.
        if chromium_cannot_run():
            self.skipTest(chromium_cannot_run())
        code = ("import time, torch\n"
                "from torch.utils.data import DataLoader, Dataset\n"
                "class Slow(Dataset):\n"
                "    def __len__(self): return 96\n"
                "    def __getitem__(self, i):\n"
                "        time.sleep(0.01)\n"
                "        return torch.randn(8), torch.randn(1)\n"
                "if __name__ == '__main__':\n"
                "    model = torch.nn.Linear(8, 1)\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
                "    for x, y in DataLoader(Slow(), batch_size=4, num_workers=2):\n"
                "        loss = ((model(x) - y) ** 2).mean()\n"
                "        opt.zero_grad(); loss.backward(); opt.step()\n"
                "        t = time.time()\n"
                "        while time.time() - t < 0.005: pass\n")
        rep, dom = self.run_python_sampled(code, 0, timeout=300)
        (main,) = [p for p in rep["processes"] if "steps" in p]
        steps = main["steps"]
        self.assertEqual((steps["count"], steps["source"]), (24, "optimizer"))
        (verdict,) = dom.root.find("section", "verdict")
        serious = [f for f in rep["findings"] if f["severity"] in ("error", "warning")]
        self.assertEqual(int(verdict.attrs["data-warnings"]) + int(verdict.attrs["data-errors"]), len(serious))
        (line,) = verdict.find("p", "verdict-line")
        if serious:
            self.assertIn(serious[0]["id"], line.text())
        else:
            self.assertEqual(line.text(), f"Healthy: no errors or warnings in {len(rep['processes'])} processes"
                             + (f" ({len(rep['findings'])} info)" if rep["findings"] else ""))
        vitals = {tr.find("th")[0].text(): tr.find("td")[0].text() for tr in verdict.find("tr")}
        self.assertTrue(vitals["steps"].startswith(f"24 optimizer steps in pid {main['pid']}, median "), vitals)
        self.assertIn("input wait", vitals)
        (fig,) = dom.root.find("figure", "stepplot")
        bars = fig.find("g", "step")
        self.assertEqual(int(fig.attrs["data-bars"]), steps["timed"])
        self.assertEqual(len(bars), steps["timed"])
        self.assertEqual(sum(int(b.attrs["data-steps"]) for b in bars), steps["timed"])
        # In Chromium: no console error, and the first screen (1100 x 900) shows the verdict
        # box and the step bars (their input-wait red and other blue, as the stylesheet
        # paints them).
        text, _ = render(self.tmp)
        page = os.path.join(self.tmp, "report.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(text)
        shot = os.path.join(self.tmp, "first-screen.png")
        r = chromium("--screenshot=" + shot, "--hide-scrollbars", "--window-size=1100,900", "file://" + page)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(console_errors(r.stderr), [])
        width, height, rows = png_pixels(shot)
        self.assertEqual((width, height), (1100, 900))
        box = {"healthy": (240, 255, 244), "warning": (255, 251, 234), "error": (255, 245, 245)}
        state = [c for c in verdict.classes if c in box][0]
        self.assertGreater(count_color(rows, box[state]), 20000, state)
        self.assertGreater(count_color(rows, (207, 34, 46)), 200)   # .step-wait
        self.assertGreater(count_color(rows, (9, 105, 218)), 200)   # .step-other

    # ---- scale ------------------------------------------------------------------------------

    def test_two_thousand_processes_stay_small(self):
        cli_workload(self.tmp, "--fork", 1999)
        rep = h.report(self.tmp)
        self.assertEqual(len(rep["processes"]), 2000)
        text, dom = render(self.tmp)
        self.assertLess(len(text.encode()), 5 * MIB)
        self.assertSelfContained(text, dom)
        self.assertEqual(sum(int(r.attrs["data-count"]) for r in dom.root.find("tr", "role")), 2000)
        self.assertEqual(len(dom.root.find("tr", "proc")), 200)
        more = [p for p in dom.root.find("p", "more") if "more processes" in p.text()]
        self.assertEqual([p.attrs["data-omitted"] for p in more], ["1800"])
        for line in dom.root.find("polyline"):
            self.assertLessEqual(len(line.attrs["points"].split()), 2 * 1000 + 1)
        (host,) = dom.root.find("div", "host")
        self.assertEqual(host.attrs["data-processes"], "2000")
        self.assertLessEqual(len(host.find("polygon", "band")), 10 * 300)
        legend = [li.text() for li in host.find("ul", "legend")[0].find("li")]
        self.assertEqual(len([l for l in legend if l.startswith("RSS: ")]), 10)
        self.assertIn("RSS: 1991 other processes", legend)


if __name__ == "__main__":
    unittest.main()
