#!/bin/bash
# perf python binding reads build-ID offset records and deferred callchains
# SPDX-License-Identifier: GPL-2.0

# A daemon written in Python opens CPU-wide sampling events with
# PERF_SAMPLE_BUILD_ID_OFFSET and defer_callchain, and a receiver, through
# 'import perf'; it must read PERF_RECORD_BUILD_ID_OFFSET and
# PERF_RECORD_CALLCHAIN_DEFERRED (the binding raised on both) and resolve
# the workload's samples right (lib/build_id_offset_python.py).
# PERF_PYTHONPATH: where perf's python module is (else python's path).

shelldir=$(dirname "$0")
# shellcheck source=lib/build_id_offset.sh
. "${shelldir}"/lib/build_id_offset.sh

rc=0
bido_support "Build-ID offset through perf's python binding" || rc=$?
[ "${rc}" = 0 ] || exit "${rc}"
bido_cpu_wide "Build-ID offset through perf's python binding" || exit 2

export PYTHONPATH=${PERF_PYTHONPATH:+${PERF_PYTHONPATH}:}${PYTHONPATH}
if ! python3 -c 'import perf' 2> /dev/null
then
  echo "Build-ID offset through perf's python binding" \
       "[Skipped no perf python module${PERF_PYTHONPATH:+ in ${PERF_PYTHONPATH}}]"
  exit 2
fi

if ! python3 "${shelldir}"/lib/build_id_offset_python.py perf test -w noploop 2
then
  echo "Build-ID offset through perf's python binding [Failed]"
  exit 1
fi
echo "Build-ID offset through perf's python binding [Success]"
exit 0
