#!/bin/sh
# Make the guest kernel's .config: tinyconfig, then our fragments, then
# olddefconfig; fail if any fragment line did not land.
#
# usage: kconfig.sh SRCDIR OBJDIR FRAGMENT...
#
# KCONFIG_LENIENT=1 only warns: `make series-bisect` builds trees from
# before the patches that add some of the symbols or their dependencies.
set -eu
src=$1 obj=$2
shift 2
mkdir -p "$obj"
make -s -C "$src" O="$obj" tinyconfig >/dev/null
"$src"/scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" "$@" >/dev/null
make -s -C "$src" O="$obj" olddefconfig >/dev/null

bad=0
for frag in "$@"; do
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*)
			sym=${line%%=*}
			grep -qxF -- "$line" "$obj/.config" && continue
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }
			sym=${sym%% *}
			grep -q "^$sym=" "$obj/.config" || continue
			;;
		*)
			continue
			;;
		esac
		have=$(grep -E "^(# )?$sym[= ]" "$obj/.config" || echo "absent")
		echo "kconfig: ${frag##*/}: '$line' did not land (have: $have)" >&2
		bad=1
	done <"$frag"
done
if [ $bad -ne 0 ] && [ -n "${KCONFIG_LENIENT:-}" ]; then
	echo "kconfig: KCONFIG_LENIENT: going on without those lines" >&2
	exit 0
fi
[ $bad -eq 0 ] || { echo "kconfig: fix the fragment or its dependencies" >&2; exit 1; }
echo "kconfig: $(grep -c '^CONFIG_' "$obj/.config") options set; every fragment line landed"
