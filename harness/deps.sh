#!/bin/sh
# Install, with apt-get, every Debian package the pipeline uses that is
# missing.  `make` runs this once (and again when this file changes).
set -eu
pkgs="linux-source-6.12 build-essential bc bison flex cpio xz-utils kmod
git patch python3 python3-dev libssl-dev libelf-dev libdw-dev libunwind-dev
libtraceevent-dev libdebuginfod-dev libcap-dev libnuma-dev libzstd-dev
liblzma-dev zlib1g-dev pkg-config qemu-system-x86 busybox-static ccache
gcc-multilib gnuplot-nox stress-ng trinity golang-go
golang-github-google-pprof-dev"
# python3-dev: perf's python binding (make perf-python); gcc-multilib: the 32-bit (compat) test program of the perf_events
# selftests; gnuplot-nox: the plots of `make bench`; stress-ng, trinity:
# `make stress`; golang-go: `go tool pprof`, the independent reader that
# the perf test of `perf data convert --to-pprof` checks its output with;
# golang-github-google-pprof-dev: the sources of the standalone pprof
# (`make pprof`), which, unlike `go tool pprof`, symbolises local files
# by build-ID

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
	echo "deps: need root to install packages: sudo apt-get install$missing" >&2
	exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
