#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Helpers of the perf record/top --build-id-offset tests

# bio_support NAME: whether perf record --build-id-offset works here.
# Returns 0 if so; else prints the test's line and returns 2 (Skipped:
# the kernel lacks the feature) or 1 (Failed: another error).
bio_support() {
  local out

  if out=$(perf record --build-id-offset -e cpu-clock -o /dev/null -- true 2>&1)
  then
    return 0
  fi
  if echo "${out}" | grep -q "does not support PERF_SAMPLE_BUILD_ID_OFFSET"
  then
    echo "$1 [Skipped kernel has no PERF_SAMPLE_BUILD_ID_OFFSET]"
    return 2
  fi
  echo "$1 [Failed unexpected error: ${out}]"
  return 1
}

# bio_cc NAME OUT SOURCE FLAGS...: build a workload with build-ID; prints
# the test's Skipped line and returns 2 if there is no compiler or the
# build fails
bio_cc() {
  local name=$1 out=$2 src=$3 cc=${CC:-cc}

  shift 3
  if ! command -v "${cc}" > /dev/null
  then
    echo "${name} [Skipped no C compiler]"
    return 2
  fi
  if ! "${cc}" -Wl,--build-id "$@" -o "${out}" "${src}"
  then
    echo "${name} [Skipped cannot build the workload]"
    return 2
  fi
}
