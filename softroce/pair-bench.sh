#!/usr/bin/env bash
# Runs inside each guest of a Soft-RoCE pair (guest-tests.sh --pair --bench): RDMA_READ bandwidth
# from host 0 reading host 1's memory, perftest's ib_read_bw against this project's verbs layer
# (CrossHostReadBandwidth: ReadBandwidth's loop with the source on the other host), 64 KiB and
# 1 MiB reads, three rounds each, the two tools alternating which goes first. Host 0 writes every
# round to REPORTS/read-bandwidth-two-hosts.csv and prints the ratio per size.
# Environment: BENCH_CP (benchmarks and native-verbs classes), REPORTS, and the harness's SOFTROCE_*.
set -euo pipefail
ulimit -l unlimited
me=host$SOFTROCE_HOST_INDEX other=host$((1 - SOFTROCE_HOST_INDEX))
trap 'echo $? > "$REPORTS/$me.exit"' EXIT
java=(java -Xmx1g -XX:+UseSerialGC -XX:TieredStopAtLevel=1 --enable-native-access=ALL-UNNAMED -cp "$BENCH_CP")
csv="$REPORTS/read-bandwidth-two-hosts.csv"

wait_for() { # FILE SECONDS
  local i
  for ((i = 0; i < $2 * 2; i++)); do
    [[ -e $REPORTS/$1 ]] && return 0
    [[ -e $REPORTS/$other.exit ]] && { echo "$me: $other ended before $1"; return 1; }
    sleep 0.5
  done
  echo "$me: no $1 after $2 s"; return 1
}

# The plan both hosts follow, step by step: "tool size iterations".
plan=()
for spec in 65536:4096 1048576:512; do
  for round in 1 2 3; do
    if ((round % 2)); then plan+=("perftest ${spec/:/ } $round" "ours ${spec/:/ } $round")
    else plan+=("ours ${spec/:/ } $round" "perftest ${spec/:/ } $round"); fi
  done
done

((SOFTROCE_HOST_INDEX == 0)) && echo "size,iterations,round,tool,gbps" >"$csv"
step=0
for entry in "${plan[@]}"; do
  read -r tool size n round <<<"$entry"
  step=$((step + 1))
  perf=(ib_read_bw -d "$SOFTROCE_DEVICE" -x "$SOFTROCE_GID_INDEX" -s "$size" -n "$n" -p 18515 -F)
  if ((SOFTROCE_HOST_INDEX == 1)); then
    if [[ $tool == perftest ]]; then
      timeout 600 "${perf[@]}" >/tmp/server.log 2>&1 & srv=$!
      for i in $(seq 300); do ss -ltn >/tmp/listening; grep -q ":18515 " /tmp/listening && break; sleep 0.2; done
    else
      "${java[@]}" org.rdmashuffle.benchmarks.verbs.CrossHostReadBandwidth serve "$SOFTROCE_ADDR" 17700 $((size * 128)) \
        >/tmp/server.log 2>&1 & srv=$!
      for i in $(seq 600); do grep -q READY /tmp/server.log && break; sleep 0.5; done
    fi
    touch "$REPORTS/step-$step.ready"
    wait $srv || { cat /tmp/server.log; exit 1; }
  else
    wait_for "step-$step.ready" 900
    if [[ $tool == perftest ]]; then
      # "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]": the average, in perftest's MB
      # (2^20 bytes), as Gb/s (10^9 bits) like ours. Not --report_gbits: it prints two decimals of ~0.2.
      g=$("${perf[@]}" "$SOFTROCE_PEER_ADDR" | awk -v s="$size" '$1 == s && NF >= 5 { printf "%.4f\n", $4 * 1048576 * 8 / 1e9 }' | tail -1)
    else
      g=$("${java[@]}" org.rdmashuffle.benchmarks.verbs.CrossHostReadBandwidth read "$SOFTROCE_ADDR" "$SOFTROCE_PEER_ADDR" \
        17700 "$size" "$n" 128 16 | sed -n 's/.*Gb\/s=\([0-9.]*\).*/\1/p')
    fi
    echo "$size,$n,$round,$tool,$g" >>"$csv"
    echo "RDMA_READ across the wire, $size B x $n, round $round: $tool $g Gb/s"
  fi
done
if ((SOFTROCE_HOST_INDEX == 0)); then
  awk -F, 'NR > 1 { if ($4 == "ours") o[$1] += $5; else p[$1] += $5 } END { for (s in p) if (p[s] > 0)
    printf "ratio rdma-shuffle / ib_read_bw across two hosts at %d B: %.2f (sum of rounds)\n", s, o[s] / p[s] }' "$csv" | sort -n -k8
fi
