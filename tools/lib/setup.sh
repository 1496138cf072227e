# Shared by tools/test, tools/demo and tools/bench: install what is missing (Debian,
# apt-get, idempotent) and build. Source it; it defines functions only.

# Packages the build and the test suite need. python3-torch gives the tests a real
# DataLoader; bindfs a real FUSE mount, python3-fusepy a slow one (tests/harness/slowfs.py);
# strace/ltrace/heaptrack are benchmark peers.
COLABTRACE_BUILD_PACKAGES=(cmake ninja-build g++ pkg-config python3 libunwind-dev libfmt-dev
  libabsl-dev libgtest-dev libgmock-dev libzstd-dev)
# libpython3.11-testsuite, python3-pytest and python3-hypothesis: the real test suites
# of tests/parity (CPython's own regression tests, numpy's tests). python3-setuptools,
# -wheel, -venv and -pip: `pip install --no-build-isolation --no-index .` (tests/package);
# python3-ipython, -ipykernel, -nbclient, -nbformat: the notebook kernel and magics tests.
# chromium: headless checks of the HTML report (tests/report_html) and
# tools/report_screenshot. strace, git, make, zstd, sqlite3: tests/audit (strace is the
# ground truth the reports of real programs are compared with).
COLABTRACE_TEST_PACKAGES=(python3-torch python3-numpy bindfs fuse3 python3-fusepy clang libclang-rt-14-dev
  libpython3.11-testsuite python3-pytest python3-hypothesis
  python3-setuptools python3-wheel python3-venv python3-pip
  python3-ipython python3-ipykernel python3-nbclient python3-nbformat chromium
  strace git make zstd sqlite3)
# autoconf, automake, libtool, zlib1g-dev: tools/bench_darshan/build.sh builds the Darshan
# peer from a local source tree (`tools/bench --install-peers` installs this list).
COLABTRACE_BENCH_PACKAGES=(strace ltrace heaptrack autoconf automake libtool zlib1g-dev)

colabtrace_missing_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "${missing[@]:-}"
}

# colabtrace_install PKG... : apt-get installs the missing ones (once), as root or via sudo.
colabtrace_install() {
  local missing
  missing=$(colabtrace_missing_packages "$@")
  [ -z "$missing" ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "colabtrace: installing $missing" >&2
  if [ -z "${COLABTRACE_APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq || true
    COLABTRACE_APT_UPDATED=1
  fi
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >&2
}

# Optional packages: a failure only means the tests that need them skip. All in one
# apt-get transaction (one database read, one run of each trigger) and, only if that
# fails (a package this release lacks), one by one, so the others still install.
colabtrace_install_optional() {
  colabtrace_install "$@" && return 0
  local p
  for p in "$@"; do
    colabtrace_install "$p" || echo "colabtrace: could not install $p; tests that need it will skip" >&2
  done
}

# npm's DuckDB engine for tests/export (the DuckDB load of `export --format ndjson`):
# @duckdb/node-api ships its engine binary inside the npm package, so it works offline once
# installed. Optional and idempotent: without node/npm or the registry, that test skips.
COLABTRACE_NODE_DIR="${COLABTRACE_NODE_DIR:-$HOME/.cache/colabtrace/node}"
COLABTRACE_DUCKDB_NODE_PACKAGE="@duckdb/node-api@1.5.6-r.1"
colabtrace_install_duckdb_node() {
  [ -d "$COLABTRACE_NODE_DIR/node_modules/@duckdb/node-api" ] && return 0
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "colabtrace: no node/npm; the DuckDB export test will skip" >&2
    return 0
  fi
  mkdir -p "$COLABTRACE_NODE_DIR" &&
    timeout 600 npm install --prefix "$COLABTRACE_NODE_DIR" --no-audit --no-fund --silent \
      "$COLABTRACE_DUCKDB_NODE_PACKAGE" >&2 ||
    echo "colabtrace: could not install $COLABTRACE_DUCKDB_NODE_PACKAGE; the DuckDB export test will skip" >&2
}

# colabtrace_build_sanitized DIR : configure (once) and build, with ASan+UBSan
# (COLABTRACE_SANITIZE: any report fails its test), the analyzer's unit and golden tests
# and the fuzz-corpus replay (the colabtrace_analyzer_tests target) and nothing else: no
# shim (never sanitized: it is a guest in other processes) and no end-to-end programs.
# These tests are built here only (./tools/test turns them off in build/), so the analyzer
# is compiled once for the CLI and once for its tests. With clang++, the reader's
# libFuzzer target is built here too, from the same objects (tests/core/fuzz); without
# it, g++ builds the tests and the libFuzzer test is not made. The CUDA Toolkit, where
# /usr/local/cuda exists, builds the nvcc fixtures the ELF tests read. Compiled at -O1
# with line tables only (-g1), not RelWithDebInfo's -O2 -g: a third of the compile time,
# and a report still names file and line. Run its tests with ctest -L '^(unit|fuzz)$'.
colabtrace_build_sanitized() {
  local dir="$1"
  if [ ! -f "$dir/build.ninja" ]; then
    local compilers=() cuda_args=(-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
    # C stays with the system's cc: the test fixtures written in C (tests/elf, tests/libs)
    # are then linked exactly as in build/ (clang's links name libc in DT_NEEDED where
    # gcc's do not).
    command -v clang++ >/dev/null && compilers=(-DCMAKE_CXX_COMPILER=clang++)
    [ -d /usr/local/cuda ] && cuda_args=(-DCUDAToolkit_ROOT=/usr/local/cuda)
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize "${compilers[@]}" \
      -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1 -DNDEBUG" \
      -DCOLABTRACE_SANITIZE=ON -DCOLABTRACE_BUILD_SHIM=OFF "${cuda_args[@]}" >&2 || return
  fi
  cmake --build "$dir" -j "$(nproc)" --target colabtrace_analyzer_tests >&2
}

# colabtrace_build DIR [TARGET...] : configure (once) and build with Ninja: the TARGETs,
# or everything (the test suite included) when none is named. COLABTRACE_CONFIGURE_ARGS
# (an array, may be unset): cache settings given to cmake, also on a tree already
# configured.
colabtrace_build() {
  local dir="$1"
  shift
  local cuda_args=()
  [ -d /usr/local/cuda ] && cuda_args=(-DCUDAToolkit_ROOT=/usr/local/cuda)
  if [ -f "$dir/build.ninja" ] && [ -n "${COLABTRACE_CONFIGURE_ARGS+x}" ]; then
    cmake "${COLABTRACE_CONFIGURE_ARGS[@]}" "$dir" >&2 || return
  fi
  if [ ! -f "$dir/build.ninja" ]; then
    # -g1: line tables and function names for backtraces, without the full DWARF of
    # every template (a third of the analyzer's compile time).
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${cuda_args[@]}" \
      ${COLABTRACE_CONFIGURE_ARGS+"${COLABTRACE_CONFIGURE_ARGS[@]}"} >&2 || return
  fi
  if [ $# -gt 0 ]; then
    cmake --build "$dir" -j "$(nproc)" --target "$@" >&2
  else
    cmake --build "$dir" -j "$(nproc)" >&2
  fi
}
