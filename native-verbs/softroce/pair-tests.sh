#!/usr/bin/env bash
# Runs inside each guest of a Soft-RoCE pair (guest-tests.sh --pair): host 1 serves (an engine with
# map outputs, the verbs agent, and Spark's Master and a Worker), host 0 reads and tests
# (CrossHostFetchTest, CrossHostVerbsTest, and MainJobOnLibibverbsAcrossTwoHostsTest, which starts
# host 0's Worker and submits the main job).
# Environment: JVM (java and its flags), CP (test classpath), REPORTS (the share both guests mount),
# KIT (the Spark kit, spark-standalone.sh), and the harness's SOFTROCE_* (device, GID index, own and
# peer address, host index).
# The hosts meet through files in REPORTS; each leaves "<host>.exit" when it ends, so the other
# stops waiting at once instead of at its deadline.
set -euo pipefail
ulimit -l unlimited
me=host$SOFTROCE_HOST_INDEX other=host$((1 - SOFTROCE_HOST_INDEX))
trap 'echo $? > "$REPORTS/$me.exit"' EXIT
PEER_PORT=17500  # the serving engine (CrossHostFetchTest)
AGENT_PORT=17600 # the verbs agent (CrossHostVerbsTest)
MASTER_URL=spark://$( ((SOFTROCE_HOST_INDEX == 1)) && echo "$SOFTROCE_ADDR" || echo "$SOFTROCE_PEER_ADDR"):7077
spark=$(dirname "$0")/spark-standalone.sh
logs=$REPORTS/spark-$SOFTROCE_ADDR
bw=(ib_read_bw -d "$SOFTROCE_DEVICE" -x "$SOFTROCE_GID_INDEX" -s 65536 -n 100 -p 18515)

# wait_for FILE SECONDS: until FILE exists; fails if the other host ended first or time runs out.
wait_for() {
  local i
  for ((i = 0; i < $2 * 2; i++)); do
    [[ -e $REPORTS/$1 ]] && return 0
    [[ -e $REPORTS/$other.exit ]] && { echo "$me: $other ended (exit $(cat "$REPORTS/$other.exit")) before $1"; return 1; }
    sleep 0.5
  done
  echo "$me: no $1 after $2 s"
  return 1
}

echo "$me: $SOFTROCE_DEVICE on $SOFTROCE_NETDEV, $SOFTROCE_ADDR; peer $SOFTROCE_PEER_ADDR"
if ((SOFTROCE_HOST_INDEX == 1)); then
  echo "--- $me: ib_read_bw server"
  timeout 600 "${bw[@]}" >/tmp/bw-server.log 2>&1 &
  srv=$!
  for i in $(seq 300); do grep -q ":18515 " < <(ss -ltn) && break; sleep 0.2; done
  touch "$REPORTS/bw.ready"
  wait $srv || { cat /tmp/bw-server.log; exit 1; }
  echo "--- $me: serving engine on $SOFTROCE_ADDR:$PEER_PORT, verbs agent on $SOFTROCE_ADDR:$AGENT_PORT"
  # shellcheck disable=SC2086
  $JVM -Drdmashuffle.test.provider=ibverbs -Drdmashuffle.test.requireDevice=true \
    -Drdmashuffle.test.bindAddress="$SOFTROCE_ADDR" -cp "$CP" org.rdmashuffle.core.ServingProcess /tmp/outputs $PEER_PORT \
    9 4 16 16384 "$REPORTS/host0.exit" >/tmp/serving.out 2>&1 &
  srv=$!
  # shellcheck disable=SC2086
  $JVM -Drdmashuffle.test.provider=ibverbs -Drdmashuffle.test.requireDevice=true -cp "$CP" \
    org.rdmashuffle.verbs.crosshost.RemotePeerAgent "$SOFTROCE_ADDR" $AGENT_PORT "$REPORTS/host0.exit" >/tmp/agent.out 2>&1 &
  agent=$!
  # Spark's Master and a Worker start meanwhile; the test on host 0 waits for the Master's port.
  mkdir -p "$logs"
  (
    bash "$spark" "$KIT" master "$SOFTROCE_ADDR" >"$logs/master.log" 2>&1 &
    master=$!
    trap 'kill $master $(jobs -p) 2>/dev/null; wait' EXIT
    trap 'exit 143' TERM
    for i in $(seq 2400); do grep -q "I have been elected leader" "$logs/master.log" && break; sleep 0.5; done
    bash "$spark" "$KIT" worker "$SOFTROCE_ADDR" "$MASTER_URL" >"$logs/worker.log" 2>&1 &
    wait_for host0.exit 3600 >/dev/null || true
  ) &
  cluster=$!
  for i in $(seq 1200); do
    grep -q READY /tmp/serving.out && grep -q READY /tmp/agent.out && break
    kill -0 $srv 2>/dev/null || { cat /tmp/serving.out; echo "$me: the serving engine exited"; exit 1; }
    kill -0 $agent 2>/dev/null || { cat /tmp/agent.out; echo "$me: the verbs agent exited"; exit 1; }
    sleep 0.5
  done
  cat /tmp/serving.out /tmp/agent.out
  touch "$REPORTS/peer.ready"
  rc=0
  wait $srv || rc=$?
  wait $agent || rc=$?
  kill $cluster 2>/dev/null; wait $cluster || true # stops the Master and the Worker (and its executors)
  cat /tmp/agent.out | grep -v READY || true
  exit $rc
else
  wait_for bw.ready 600
  echo "--- $me: ib_read_bw across the wire (reads $other's memory)"
  "${bw[@]}" "$SOFTROCE_PEER_ADDR"
  echo "--- $me: doctor, for peers reaching this host at $SOFTROCE_ADDR"
  # shellcheck disable=SC2086
  $JVM -cp "$CP" org.rdmashuffle.verbs.tools.Doctor ibverbs "$SOFTROCE_ADDR" | grep -E "port 1|GID|would use"
  wait_for peer.ready 1200
  echo "--- $me: tests with a peer on another host"
  # shellcheck disable=SC2086
  $JVM -Drdmashuffle.test.requireDevice=true -Drdmashuffle.test.provider=ibverbs -Drdmashuffle.test.timeoutSeconds=120 \
    -Drdmashuffle.test.bindAddress="$SOFTROCE_ADDR" -Drdmashuffle.test.peer="$SOFTROCE_PEER_ADDR:$PEER_PORT" \
    -Drdmashuffle.test.remoteVerbsPeer="$SOFTROCE_PEER_ADDR:$AGENT_PORT" \
    -Drdmashuffle.test.sparkKit="$KIT" -Drdmashuffle.test.sparkMaster="$MASTER_URL" -Drdmashuffle.test.logDir="$REPORTS" \
    -cp "$CP" org.junit.platform.console.ConsoleLauncher execute --select-class org.rdmashuffle.core.CrossHostFetchTest \
    --select-class org.rdmashuffle.verbs.crosshost.CrossHostVerbsTest \
    --select-class org.rdmashuffle.benchmarks.cluster.MainJobOnLibibverbsAcrossTwoHostsTest \
    --reports-dir "$REPORTS" --details=tree --disable-banner --fail-if-no-tests
fi
