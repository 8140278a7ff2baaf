#!/usr/bin/env bash
# Runs inside each guest of a Soft-RoCE pair (guest-tests.sh --pair): host 1 serves (an engine with
# map outputs, the verbs agent, Spark's Master and a Worker, then YARN's ResourceManager and a
# NodeManager), host 0 reads and tests, in two JVMs: CrossHostFetchTest, CrossHostVerbsTest and
# MainJobOnLibibverbsAcrossTwoHostsTest (starts host 0's Worker, submits the main job) on the engine's
# and Spark's class path; then MapReduceOnLibibverbsAcrossTwoHostsTest (runs host 0's NodeManager,
# submits a sort) on Hadoop's.
# Environment: JVM (java and its flags), CP (test classpath), HADOOP_CP (shuffle-hadoop's test class
# path), REPORTS (the share both guests mount), KIT (the Spark kit, spark-standalone.sh), and the
# harness's SOFTROCE_* (device, GID index, own and peer address, host index); EXECUTOR_MEMLOCK_KIB, if
# set, the memlock limit host 1's Worker and its executors run under, without CAP_IPC_LOCK.
# The hosts meet through files in REPORTS; each leaves "<host>.exit" when it ends, so the other
# stops waiting at once instead of at its deadline. Host 0 leaves "phase1.done" when the first JVM's
# tests are over: host 1 then stops what served them (and Spark), keeping YARN for the second.
set -euo pipefail
ulimit -l unlimited
me=host$SOFTROCE_HOST_INDEX other=host$((1 - SOFTROCE_HOST_INDEX))
trap 'rc=$?; touch "$REPORTS/phase1.done"; echo $rc > "$REPORTS/$me.exit"' EXIT
PEER_PORT=17500  # the serving engine (CrossHostFetchTest)
AGENT_PORT=17600 # the verbs agent (CrossHostVerbsTest)
MASTER_URL=spark://$( ((SOFTROCE_HOST_INDEX == 1)) && echo "$SOFTROCE_ADDR" || echo "$SOFTROCE_PEER_ADDR"):7077
spark=$(dirname "$0")/spark-standalone.sh
logs=$REPORTS/spark-$SOFTROCE_ADDR
shared=$REPORTS/mapreduce # the MapReduce job's staging, input and output (TwoHostYarn)
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
    9 4 16 16384 "$REPORTS/phase1.done" >/tmp/serving.out 2>&1 &
  srv=$!
  # shellcheck disable=SC2086
  $JVM -Drdmashuffle.test.provider=ibverbs -Drdmashuffle.test.requireDevice=true -cp "$CP" \
    org.rdmashuffle.verbs.crosshost.RemotePeerAgent "$SOFTROCE_ADDR" $AGENT_PORT "$REPORTS/phase1.done" >/tmp/agent.out 2>&1 &
  agent=$!
  # Spark's Master and a Worker start meanwhile; the test on host 0 waits for the Master's port.
  mkdir -p "$logs"
  (
    bash "$spark" "$KIT" master "$SOFTROCE_ADDR" >"$logs/master.log" 2>&1 &
    master=$!
    trap 'kill $master $(jobs -p) 2>/dev/null; wait' EXIT
    trap 'exit 143' TERM
    for i in $(seq 2400); do grep -q "I have been elected leader" "$logs/master.log" && break; sleep 0.5; done
    if [[ -n ${EXECUTOR_MEMLOCK_KIB:-} ]]; then # as a container's non-root process: the limit binds
      ( ulimit -l "$EXECUTOR_MEMLOCK_KIB" && exec setpriv --bounding-set=-ipc_lock bash "$spark" "$KIT" worker "$SOFTROCE_ADDR" \
        "$MASTER_URL" ) >"$logs/worker.log" 2>&1 &
    else
      bash "$spark" "$KIT" worker "$SOFTROCE_ADDR" "$MASTER_URL" >"$logs/worker.log" 2>&1 &
    fi
    wait_for phase1.done 3600 >/dev/null || true
    # The executors' logs (their engine's start line says how it registers memory) onto the share.
    find "${SPARK_KIT_WORK:-/tmp/spark-worker}/work" -name stderr 2>/dev/null | while read -r f; do
      cp "$f" "$logs/executor-$(basename "$(dirname "$(dirname "$f")")")-$(basename "$(dirname "$f")").stderr" || true
    done
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
  # YARN starts once the engine and the agent serve (Spark's Master and Worker may still be starting):
  # the ResourceManager and this host's NodeManager in one JVM, stopped when host 0 ends.
  echo "--- $me: YARN's ResourceManager and NodeManager (RdmaShuffleService on $SOFTROCE_DEVICE)"
  mkdir -p "$shared"
  # shellcheck disable=SC2086
  $JVM -cp "$HADOOP_CP" org.rdmashuffle.hadoop.TwoHostYarn "$shared" "$REPORTS/host0.exit" >"$REPORTS/yarn-$me.log" 2>&1 &
  yarn=$!
  (
    for i in $(seq 3600); do
      grep -q READY "$REPORTS/yarn-$me.log" && { echo ready >"$REPORTS/yarn.ready"; exit 0; }
      kill -0 $yarn 2>/dev/null && sleep 0.5 && continue
      echo "failed: YARN on $me exited before its node registered" >"$REPORTS/yarn.ready"
      exit 1
    done
  ) &
  rc=0
  wait $srv || rc=$?
  wait $agent || rc=$?
  # Stops the Master and the Worker (and its executors). The subshell may have ended already (it stops at
  # phase1.done too): under set -e a failing kill would end this host, and with it YARN, while host 0
  # still has the MapReduce job to run against it.
  kill $cluster 2>/dev/null || true
  wait $cluster || true
  cat /tmp/agent.out | grep -v READY || true
  wait $yarn || { echo "$me: YARN exited with $? (log: $REPORTS/yarn-$me.log)"; rc=1; }
  cp -r /tmp/yarn-1/logs "$REPORTS/yarn-$me-containers" 2>/dev/null || true
  exit $rc
else
  wait_for bw.ready 600
  echo "--- $me: ib_read_bw across the wire (reads $other's memory)"
  "${bw[@]}" "$SOFTROCE_PEER_ADDR"
  echo "--- $me: doctor, for peers reaching this host at $SOFTROCE_ADDR"
  # shellcheck disable=SC2086
  $JVM -cp "$CP" org.rdmashuffle.verbs.tools.Doctor ibverbs "$SOFTROCE_ADDR" | grep -E "port 1|GID|would use"
  wait_for peer.ready 1200
  rc=0
  echo "--- $me: tests with a peer on another host"
  # shellcheck disable=SC2086
  $JVM -Drdmashuffle.test.requireDevice=true -Drdmashuffle.test.provider=ibverbs -Drdmashuffle.test.timeoutSeconds=120 \
    -Drdmashuffle.test.bindAddress="$SOFTROCE_ADDR" -Drdmashuffle.test.peer="$SOFTROCE_PEER_ADDR:$PEER_PORT" \
    -Drdmashuffle.test.remoteVerbsPeer="$SOFTROCE_PEER_ADDR:$AGENT_PORT" \
    -Drdmashuffle.test.sparkKit="$KIT" -Drdmashuffle.test.sparkMaster="$MASTER_URL" -Drdmashuffle.test.logDir="$REPORTS" \
    -cp "$CP" org.junit.platform.console.ConsoleLauncher execute --select-class org.rdmashuffle.core.CrossHostFetchTest \
    --select-class org.rdmashuffle.verbs.crosshost.CrossHostVerbsTest \
    --select-class org.rdmashuffle.benchmarks.cluster.MainJobOnLibibverbsAcrossTwoHostsTest \
    --reports-dir "$REPORTS/junit-engine-and-spark" --details=tree --disable-banner --fail-if-no-tests || rc=$?
  touch "$REPORTS/phase1.done"
  echo "--- $me: the MapReduce job, reduce here, maps on $other"
  wait_for yarn.ready 1800 || exit 1
  grep -q '^ready' "$REPORTS/yarn.ready" || { cat "$REPORTS/yarn.ready"; tail -n 30 "$REPORTS/yarn-$other.log"; exit 1; }
  # shellcheck disable=SC2086
  $JVM -Drdmashuffle.test.sharedDir="$shared" -Drdmashuffle.test.bindAddress="$SOFTROCE_ADDR" -cp "$HADOOP_CP" \
    org.junit.platform.console.ConsoleLauncher execute \
    --select-class org.rdmashuffle.hadoop.MapReduceOnLibibverbsAcrossTwoHostsTest \
    --reports-dir "$REPORTS/junit-mapreduce" --details=tree --disable-banner --fail-if-no-tests || rc=$?
  cp -r /tmp/yarn-0/logs "$REPORTS/yarn-$me-containers" 2>/dev/null || true
  exit $rc
fi
