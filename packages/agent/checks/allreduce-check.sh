#!/bin/sh
# `rankd check allreduce`, on every rank of its job: nccl-tests' all_reduce_perf where it is
# installed (on the rank's PATH), else rankd's own MPI benchmark (allreduce-bench.c beside
# this file), built here with the node's MPICH mpicc. Both get nccl-tests' flags and print
# nccl-tests' columns; the first line says which one runs, for the controller's parser.
#
# The build is cached in the rank user's cache directory, keyed by the source's hash and
# the compiler's, and put in place by rename(2): ranks that share a node (or a home
# directory) may build at once, and each ends with a whole binary.
#
#   allreduce-check.sh --min-bytes N --max-bytes N --iterations N
# The controller writes this argv itself (numbers only); it reaches no shell as text.
set -eu

fail() {
  # $1: the error code (docs/errors.md), then the message
  code=$1
  shift
  printf 'rankd: %s: %s\n' "$code" "$*" >&2
  exit 3
}

whole() {
  case $2 in '' | *[!0-9]*) fail RANKD_CHECK_SIZES_INVALID "$1 takes a whole number, not \"$2\"" ;; esac
}

min= max= iterations=
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || fail RANKD_CHECK_SIZES_INVALID "$1 needs a value"
  case $1 in
    --min-bytes) whole "$1" "$2"; min=$2 ;;
    --max-bytes) whole "$1" "$2"; max=$2 ;;
    --iterations) whole "$1" "$2"; iterations=$2 ;;
    *) fail RANKD_CHECK_SIZES_INVALID "unknown argument \"$1\"" ;;
  esac
  shift 2
done
[ -n "$min" ] && [ -n "$max" ] && [ -n "$iterations" ] ||
  fail RANKD_CHECK_SIZES_INVALID 'usage: allreduce-check.sh --min-bytes N --max-bytes N --iterations N'

warmup=5
[ "$iterations" -ge "$warmup" ] || warmup=$iterations
node=$(uname -n)

if perf=$(command -v all_reduce_perf); then
  printf '# rankd check allreduce: implementation=nccl-tests program=%s node=%s\n' "$perf" "$node"
  exec "$perf" -b "$min" -e "$max" -f 2 -n "$iterations" -w "$warmup" -g 1 -c 1
fi

# MPICH's compiler: rankd's PMI-1 server wires MPICH programs up (Open MPI's need --mpi openmpi)
if command -v mpicc.mpich >/dev/null 2>&1; then
  mpicc=mpicc.mpich
elif command -v mpicc >/dev/null 2>&1 && mpicc -v 2>&1 | grep -q 'MPICH'; then
  mpicc=mpicc
else
  fail RANKD_ALLREDUCE_NO_MPICC "$node has neither nccl-tests' all_reduce_perf nor MPICH's mpicc to build" \
    "rankd's allreduce benchmark: install mpich and libmpich-dev (Debian, Ubuntu: apt-get install mpich libmpich-dev)"
fi

here=$(cd "$(dirname "$0")" && pwd)
source=$here/allreduce-bench.c
[ -r "$source" ] || fail RANKD_ALLREDUCE_BUILD_FAILED "$source cannot be read by $(id -un)"
source_hash=$(sha256sum <"$source" | cut -c1-16)
# what the wrapper runs and which compiler it is: a new MPICH or gcc is a new build
compiler_hash=$({ command -v "$mpicc"; "$mpicc" -show 2>&1; "$mpicc" -v 2>&1; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-${HOME:-}/.cache}
case $cache in
  /*) ;;
  *) fail RANKD_ALLREDUCE_BUILD_FAILED "$(id -un) has no home directory to cache the build in" ;;
esac
dir=$cache/rankd/allreduce/$source_hash-$compiler_hash
binary=$dir/rankd-allreduce

if [ -x "$binary" ]; then
  built="cached"
else
  mkdir -p "$dir" 2>/dev/null || fail RANKD_ALLREDUCE_BUILD_FAILED "cannot create $dir as $(id -un)"
  tmp=$dir/.build.$node.$$
  if ! "$mpicc" -O2 -o "$tmp" "$source" 2>"$tmp.log"; then
    cat "$tmp.log" >&2
    rm -f "$tmp" "$tmp.log"
    fail RANKD_ALLREDUCE_BUILD_FAILED "$mpicc could not build $source on $node (its words are above)"
  fi
  rm -f "$tmp.log"
  mv -f "$tmp" "$binary"
  built="built"
fi
printf '# rankd check allreduce: implementation=rankd-mpi program=%s compiler=%s %s node=%s\n' \
  "$binary" "$mpicc" "$built" "$node"
exec "$binary" -b "$min" -e "$max" -f 2 -n "$iterations" -w "$warmup"
