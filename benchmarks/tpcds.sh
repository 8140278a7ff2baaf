#!/usr/bin/env bash
# TPC-DS with Spark's built-in shuffle and with rdma-shuffle in balanced pairs, results
# compared; writes benchmarks/results/tpcds-sf<scale>/ (CSV, markdown, PNG charts). Data is generated
# once per scale under benchmarks/data/ and reused. Builds what it needs first (mvn install -DskipTests).
#   benchmarks/tpcds.sh [--scale 0.1|1] [--queries all|q3,q7,...] [--hosts N [--rate RATE] [--profile] [--cpu-by-thread]]
#                       [--pairs N] [--shuffle-partitions N] [--control] [--rdma-first] [--data DIR] [--out DIR]
# --scale S: the TPC-DS scale factor, a number above 0 (default 0.1); --queries: all (default) or names;
# --pairs N: N balanced pairs (default 1): 2N rounds, each query once per side per round, the two rounds
# of a pair in opposite orders (which starts alternates by query); every round kept (round-<r>/), and
# rounds.md: each pair's ratio, their median with a 90% interval, the order effect (--rounds became --pairs);
# --shuffle-partitions N: spark.sql.shuffle.partitions on both; --control: both applications on the
# built-in shuffle (what the bed itself does to two applications); --rdma-first: start the plugin's first.
# --hosts N: both applications on Spark's standalone cluster across N Worker hosts (1..198) of the cluster
# bed (bin/cluster-bed; needs root), the plugin shipped as users ship it; results go to tpcds-sf<scale>-Nhosts/;
# --rate (e.g. 10gbit) shapes its links, --profile records the executors with JFR, --cpu-by-thread samples every
# thread's CPU from /proc each second and writes each application's executors' CPU with the shares of its task
# threads, the plugin's threads and Spark's Netty block transfer (executor-threads-cpu.md; at most 2 hours sampled).
# --data DIR, --out DIR: where the data and the results go instead. -h, --help: this text.
# Exit status: 0 when every result matched, 1 when one did not, 2 for a usage error (nothing built),
# 77 when --hosts cannot make hosts here.
set -euo pipefail
me=benchmarks/tpcds.sh
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=../bin/args.sh
source "$root/bin/args.sh"
hosts="" cluster_only=""
args=("$@")
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --scale) need "$@"; [[ $2 =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ && $2 =~ [1-9] ]] \
        || refuse "--scale takes a number above 0 such as 0.1 or 1, not '$2'"; shift 2 ;;
    --queries) need "$@"; [[ $2 == all || $2 =~ ^q[0-9]+[a-z]?(,q[0-9]+[a-z]?)*$ ]] \
        || refuse "--queries takes all or names such as q3,q7,q14a, not '$2'"; shift 2 ;;
    --hosts) need "$@"; number "$1" "$2" 1 198; hosts=$2; shift 2 ;;
    --rate) need "$@"; rate "$1" "$2"; cluster_only=$1; shift 2 ;;
    --profile|--cpu-by-thread) cluster_only=$1; shift ;;
    --pairs|--shuffle-partitions) need "$@"; number "$1" "$2" 1; shift 2 ;;
    --rounds) refuse "--rounds became --pairs N (N balanced pairs: 2N rounds, each query in both orders in every pair): give --pairs instead of --rounds${2:+ $2}" ;;
    --data|--out) need "$@"; shift 2 ;;
    --control|--rdma-first) shift ;;
    *) refuse "unknown argument '$1'" ;;
  esac
done
[[ -n $hosts || -z $cluster_only ]] || refuse "$cluster_only needs --hosts N (the cluster bed)"
set -- "${args[@]}"
# The cluster ships the plugin as users do: the shaded jar.
[ -z "$hosts" ] || export RDMA_SHUFFLE_BUILD_PLUGIN=1
# shellcheck source=../bin/spark-env.sh
source "$root/bin/spark-env.sh"
cd "$root"
exec java -Xmx1g $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.tpcds.TpcdsRunner "$@"
