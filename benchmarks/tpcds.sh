#!/usr/bin/env bash
# TPC-DS with Spark's built-in shuffle and with rdma-shuffle, alternated query by query, results
# compared; writes benchmarks/results/tpcds-sf<scale>/ (CSV, markdown, PNG charts). Data is generated
# once per scale under benchmarks/data/ and reused.
#   benchmarks/tpcds.sh [--scale 0.1|1] [--queries all|q3,q7,...] [--hosts N [--rate RATE] [--profile]]
#                       [--rounds K] [--shuffle-partitions N] [--control] [--rdma-first]
# --rounds K: every query K times per side, every round kept (round-<r>/, rounds.md with the medians);
# --shuffle-partitions N: spark.sql.shuffle.partitions on both; --control: both applications on the
# built-in shuffle (what the bed itself does to two applications); --rdma-first: start the plugin's first.
# --hosts N: both applications on Spark's standalone cluster across N Worker hosts of the cluster bed
# (bin/cluster-bed; needs root), the plugin shipped as users ship it; results go to tpcds-sf<scale>-Nhosts/.
set -euo pipefail
for arg in "$@"; do
  # The cluster ships the plugin as users do: the shaded jar.
  [ "$arg" = --hosts ] && export RDMA_SHUFFLE_BUILD_PLUGIN=1
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=../bin/spark-env.sh
source "$root/bin/spark-env.sh"
cd "$root"
exec java -Xmx1g $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.tpcds.TpcdsRunner "$@"
