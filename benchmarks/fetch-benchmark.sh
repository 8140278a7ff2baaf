#!/usr/bin/env bash
# The engine's fetch benchmark: this engine (software provider) vs Spark's NettyBlockTransferService,
# fetching the same file segments from another JVM, alternated in one run. See docs/benchmarks.md.
# Builds what it needs first (mvn install -DskipTests).
#   benchmarks/fetch-benchmark.sh [--rounds N] [--csv FILE] [--heap-by-layer] [--batch K] [--variant k=v,...]
#                                 [--server-variant k=v,...] [2000x256k 50000x4k ...]
#   --rounds N          measured rounds per workload and system (default 3)
#   --csv FILE          also write every sample to FILE
#   --heap-by-layer     record each run with JFR and split its heap per block by layer
#   --batch K           each reducer reads K contiguous partitions as one block (divides every workload's partitions)
#   --variant k=v,...   a second client engine with these settings (e.g. busyPoll=0) in the same rounds
#   --server-variant k=v,...  a second serving engine with these settings (e.g. memoryWindows=true)
#   BLOCKSxSIZE         a workload: BLOCKS blocks of SIZE bytes (k, m: KiB, MiB), in maps of 100 partitions
#                       (1000 for blocks under 64 KiB): BLOCKS a multiple of that (default 2000x256k 50000x4k)
#   -h, --help          this text
# Exit status: 0 when it ran, 2 for a usage error (nothing built), else 1.
set -euo pipefail
me=benchmarks/fetch-benchmark.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../bin/args.sh
source "$here/../bin/args.sh"
settings() { [[ $2 =~ ^[A-Za-z][A-Za-z0-9.]*=[^,]*(,[A-Za-z][A-Za-z0-9.]*=[^,]*)*$ ]] \
  || refuse "$1 takes key=value[,key=value] engine settings, not '$2'"; }
batch=1 partitions=()
args=("$@")
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --rounds) need "$@"; number "$1" "$2" 1; shift 2 ;;
    --batch) need "$@"; number "$1" "$2" 1; batch=$((10#$2)); shift 2 ;;
    --csv|--dir) need "$@"; shift 2 ;;
    --heap-by-layer) shift ;;
    --variant|--server-variant) need "$@"; settings "$1" "$2"; shift 2 ;;
    -*) refuse "unknown argument '$1'" ;;
    *)
      # A workload, as FetchWorkload reads it.
      [[ ${1,,} =~ ^([1-9][0-9]{0,8})x([1-9][0-9]{0,8})([km]?)$ ]] \
        || refuse "workload '$1' is not BLOCKSxSIZE, e.g. 2000x256k or 100000x512"
      blocks=${BASH_REMATCH[1]} size=${BASH_REMATCH[2]}
      case ${BASH_REMATCH[3]} in k) size=$((size << 10)) ;; m) size=$((size << 20)) ;; esac
      ((size <= 1 << 30)) || refuse "workload '$1': blocks of at most 1 GiB"
      p=$((size < 64 << 10 ? 1000 : 100))
      ((p <= blocks)) || p=$blocks
      ((blocks % p == 0)) || refuse "workload '$1': the block count must be a multiple of $p"
      partitions+=("$1:$p")
      shift ;;
  esac
done
((${#partitions[@]})) || partitions=(2000x256k:100 50000x4k:1000)
for w in "${partitions[@]}"; do
  ((${w##*:} % batch == 0)) || refuse "--batch $batch does not divide workload ${w%:*}'s ${w##*:} partitions per map"
done
set -- "${args[@]}"
# shellcheck source=../bin/spark-env.sh
source "$here/../bin/spark-env.sh"
data=$(mktemp -d "${TMPDIR:-/tmp}/rdma-shuffle-fetch-bench.XXXXXX")
trap 'rm -rf "$data"' EXIT
java -Xmx2g $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.engine.FetchBenchmark --dir "$data" "$@"
