#!/usr/bin/env bash
# In the Soft-RoCE guest: RDMA_READ bandwidth of perftest's ib_read_bw and of this project's verbs
# layer (benchmarks' ReadBandwidth) on the same rxe0, in the same boot, alternated, for 64 KiB and
# 1 MiB reads. Both report Gb/s (10^9 bits). Writes read-bandwidth.csv into OUTDIR and prints the
# ratio per size (target >= 0.9).
#   read-bandwidth.sh CLASSPATH OUTDIR
set -euo pipefail
cp=$1 out=$2
dev=${SOFTROCE_DEVICE:?run inside the Soft-RoCE guest} gid=${SOFTROCE_GID_INDEX:?} addr=${SOFTROCE_ADDR:?}
csv="$out/read-bandwidth.csv"
echo "size,iterations,round,perftest_gbps,rdma_shuffle_gbps" >"$csv"

perftest() { # size iterations -> Gb/s
  local args=(-d "$dev" -x "$gid" -s "$1" -n "$2" -p 18515 --report_gbits -F)
  timeout 300 ib_read_bw "${args[@]}" >/tmp/ib_read_bw.server 2>&1 &
  local srv=$! i
  for i in $(seq 150); do grep -q ":18515 " < <(ss -ltn) && break; sleep 0.2; done
  # "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]": take the average.
  ib_read_bw "${args[@]}" "$addr" | awk -v s="$1" '$1 == s && NF >= 5 { print $4 }' | tail -1
  wait $srv || { cat /tmp/ib_read_bw.server >&2; return 1; }
}

ours() { # size iterations -> Gb/s
  java -Xmx512m -XX:+UseSerialGC --enable-native-access=ALL-UNNAMED -cp "$cp" org.rdmashuffle.benchmarks.verbs.ReadBandwidth "$1" "$2" 128 16 \
    | sed -n 's/.*Gb\/s=\([0-9.]*\).*/\1/p'
}

for spec in 65536:4096 1048576:512; do
  size=${spec%%:*} n=${spec##*:}
  for round in 1 2 3; do
    p=$(perftest "$size" "$n") o=$(ours "$size" "$n")
    echo "$size,$n,$round,$p,$o" >>"$csv"
    echo "RDMA_READ $size B x $n, round $round: ib_read_bw $p Gb/s, rdma-shuffle $o Gb/s"
  done
done
awk -F, 'NR > 1 { p[$1] += $4; o[$1] += $5 } END { for (s in p) if (p[s] > 0)
  printf "ratio rdma-shuffle / ib_read_bw at %d B: %.2f (sum of rounds)\n", s, o[s] / p[s] }' "$csv" | sort -n -t' ' -k6
