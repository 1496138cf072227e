#!/usr/bin/env bash
# Builds Darshan (runtime without MPI, plus darshan-parser) from a LOCAL source tree, as
# the benchmark peer of tools/bench. It fetches nothing: the source must already be on
# this machine (one-time step: docs/benchmarks.md, "Reproduce").
#
#   tools/bench_darshan/build.sh            # prints the install prefix on stdout
#
#   DARSHAN_SRC     the source tree (a release or a `git archive` of a tag);
#                   default: $COLABTRACE_CACHE/darshan-src
#   DARSHAN_PREFIX  where to install; default: $COLABTRACE_CACHE/darshan-<version>
#   COLABTRACE_CACHE  default: ${XDG_CACHE_HOME:-$HOME/.cache}/colabtrace
#
# Exit status: 0 built (or already built), 77 no source tree (a skip, with a message),
# anything else a failed build (the log is named on stderr). Needs autoconf, automake,
# libtool and zlib1g-dev (COLABTRACE_BENCH_PACKAGES in tools/lib/setup.sh).
set -euo pipefail

cache="${COLABTRACE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colabtrace}"
src="${DARSHAN_SRC:-$cache/darshan-src}"

if [ ! -f "$src/darshan.version" ] || [ ! -d "$src/darshan-runtime" ]; then
  echo "bench_darshan: skipped: no Darshan source tree at $src (set DARSHAN_SRC, or see" \
       "docs/benchmarks.md 'Reproduce' for the one-time step that puts it there)" >&2
  exit 77
fi

version=$(tr -d ' \n' < "$src/darshan.version")
prefix="${DARSHAN_PREFIX:-$cache/darshan-$version}"
stamp="$prefix/.colabtrace-built"
if [ -f "$stamp" ] && [ -x "$prefix/bin/darshan-parser" ] && [ -f "$prefix/lib/libdarshan.so" ]; then
  echo "$prefix"
  exit 0
fi

for tool in autoreconf automake libtoolize cc make; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench_darshan: $tool is missing (install autoconf automake libtool zlib1g-dev;" \
         "tools/lib/setup.sh lists them in COLABTRACE_BENCH_PACKAGES)" >&2
    exit 1
  fi
done

# Build in a copy: autoreconf writes into the tree, and the source stays pristine.
work="$cache/darshan-build-$version"
log="$work.log"
rm -rf "$work"
mkdir -p "$work" "$prefix"
cp -a "$src/." "$work/"
echo "bench_darshan: building Darshan $version into $prefix (log: $log)" >&2
{
  cd "$work"
  [ -x configure ] || autoreconf -fi
  # No MPI; the log goes where DARSHAN_LOGFILE / DARSHAN_LOGPATH say at run time
  # (tools/bench sets DARSHAN_LOGFILE per run); no job id variable.
  ./configure --prefix="$prefix" --without-mpi \
    --with-log-path-by-env=DARSHAN_LOGPATH --with-jobid-env=NONE \
    --enable-darshan-runtime --enable-darshan-util --disable-pydarshan
  make -j"$(nproc)"
  make install
} >"$log" 2>&1 || {
  echo "bench_darshan: the build failed; the last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
}
rm -rf "$work"
echo "$version $(date -u +%FT%TZ)" > "$stamp"
echo "$prefix"
