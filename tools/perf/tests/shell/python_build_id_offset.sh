#!/bin/bash
# perf python reads build-ID offset records
# SPDX-License-Identifier: GPL-2.0
#
# A task sampled through perf's python binding, with
# PERF_SAMPLE_BUILD_ID_OFFSET and deferred callchains: in time order every
# sample's cookie is its tid's latest record before it or a record after
# it, whose maps (for an UNCHANGED record, those of the record before it)
# put the sampled IP in the task's own mapping (/proc/PID/maps) with the
# file's build-ID, and the deferred user frames in a map.

shelldir=$(dirname "$0")
# shellcheck source=lib/setup_python.sh
. "${shelldir}"/lib/setup_python.sh

MODULE_DIR=$(dirname "$(which perf)")/python
if [ -d "${MODULE_DIR}" ]
then
  export PYTHONPATH="${MODULE_DIR}${PYTHONPATH:+:${PYTHONPATH}}"
fi
name="perf python reads build-ID offset records"
if ! $PYTHON -c 'import perf; perf.SAMPLE_BUILD_ID_OFFSET' 2> /dev/null
then
  echo "${name} [Skipped no binding with the feature]"
  exit 2
fi
if ! perf record --buildid-offset -e cpu-clock -o /dev/null -- true > /dev/null 2>&1
then
  echo "${name} [Skipped kernel has no PERF_SAMPLE_BUILD_ID_OFFSET]"
  exit 2
fi

perf_bin=$(readlink -f "$(which perf)")
build_id=$(perf buildid-list -i "${perf_bin}")
if $PYTHON "${shelldir}"/lib/build_id_offset.py "${perf_bin}" "${build_id}"
then
  echo "${name} [Success]"
  exit 0
fi
echo "${name} [Failed]"
exit 1
