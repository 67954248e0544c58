#!/bin/sh
# Install, with apt-get, every Debian package the pipeline uses that is
# missing.  `make` runs this once (and again when this file changes).
set -eu
# linux-source-7.3: the mainline series' base, from trixie-backports
# (below); linux-source-6.12: the backport's, from bookworm itself
pkgs="linux-source-7.3 linux-source-6.12 build-essential bc bison flex cpio
xz-utils kmod git patch python3 python3-dev libssl-dev libelf-dev libdw-dev
libunwind-dev libtraceevent-dev libdebuginfod-dev libcap-dev libnuma-dev
libzstd-dev liblzma-dev zlib1g-dev pkg-config qemu-system-x86 busybox-static
ccache gcc-multilib gnuplot-nox stress-ng trinity"
# python3-dev: perf's python binding (its perf test); gcc-multilib: -m32
# for the guest kernels (IA32_EMULATION: the compat vDSO); gnuplot-nox:
# the plots of `make bench`; stress-ng, trinity: `make stress`

# The suite that has linux-source-7.3.  Only its newest version is kept
# there, so the version found may differ from BASE: harness/tree.py says
# which it found and whether the series applies.
BACKPORTS=trixie-backports
BP_LIST=/etc/apt/sources.list.d/perf-build-id-offset-backports.sources

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

# Debian's main archive, as this machine's own apt sources name it (a
# mirror or a proxy is kept): the first deb URI whose suite is one of
# Debian's own (not -security, not a third party's)
archive_uri() {
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null
		echo
	} | awk '/^URIs:/ { uri = $2 } /^Suites:/ { s = $2 }
		/^$/ { if (uri != "" && s ~ /^(bookworm|trixie|sid|stable|testing)/ &&
			   s !~ /security/) { print uri; exit } uri = ""; s = "" }'
	grep -hE '^deb[[:space:]]' /etc/apt/sources.list \
		/etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E 's/\[[^]]*\]//' |
		awk '$3 ~ /^(bookworm|trixie|sid|stable|testing)/ && $3 !~ /security/ {
			print $2 }'
}

case " $missing " in
*" linux-source-7.3 "*)
	if ! grep -rqs "$BACKPORTS" /etc/apt/sources.list /etc/apt/sources.list.d/; then
		uri=$(archive_uri | head -n 1)
		if [ -z "$uri" ]; then
			echo "deps: no Debian archive in this machine's apt sources;" \
				"add $BACKPORTS (for linux-source-7.3) by hand" >&2
			exit 1
		fi
		echo "deps: adding $BACKPORTS from $uri to $BP_LIST"
		printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$uri" "$BACKPORTS" >"$BP_LIST"
	fi
	;;
esac

apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
