#!/bin/sh
# Installs the Debian packages the test suite needs, when they are missing.
# As root it installs them; otherwise it names what is missing and the tests that
# need them skip and say so.
set -eu
# command -> package
need="numactl:numactl ip:iproute2 slurmctld:slurm-wlm ibv_devinfo:ibverbs-utils lstopo:hwloc mpicc.mpich:mpich mpicc.mpich:libmpich-dev mpirun.openmpi:openmpi-bin chromium:chromium promtool:prometheus iperf3:iperf3 ib_write_bw:perftest"
if [ "${RANKD_TEST_TORCH:-}" = 1 ] || [ "${CI:-}" = true ]; then
  need="$need /usr/bin/python3:python3-torch /usr/bin/python3-mpi4py:python3-mpi4py"
fi
missing=""
for pair in $need; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  case $cmd in
    /usr/bin/python3) /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || missing="$missing $pkg" ;;
    /usr/bin/python3-mpi4py) /usr/bin/python3 -c 'import mpi4py' >/dev/null 2>&1 || missing="$missing $pkg" ;;
    *) command -v "$cmd" >/dev/null 2>&1 || missing="$missing $pkg" ;;
  esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "test-deps: not root, not installing:$missing (tests that need them will skip)" >&2
  exit 0
fi
echo "test-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
