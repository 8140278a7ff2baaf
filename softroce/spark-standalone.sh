#!/usr/bin/env bash
# Spark's standalone cluster, one process at a time, from a kit made on the host (ClusterKit: a Spark
# home with Spark's jars and conf/spark-defaults.conf as shipped, plus the main job's jar). The
# Soft-RoCE pair runs it in its guests; `train` runs it on the host first, so every JVM of the guests
# starts from an AOT cache.
#
#   spark-standalone.sh KIT master ADDR                   the Master on ADDR:7077 (foreground)
#   spark-standalone.sh KIT worker ADDR MASTER_URL        a Worker on ADDR (foreground)
#   spark-standalone.sh KIT submit ADDR MASTER_URL PROVIDER [ShuffleJob args...]
#                                                         the main job, client mode, driver on ADDR
#   spark-standalone.sh KIT train                         on the host: the three on 127.0.0.1 with
#                                                         the software provider, each JVM recording
#                                                         what it loads; then KIT/aot/<role>.aot
#
# Processes start the way bin/spark-class starts them: Spark's launcher builds each command. Two things
# differ from a stock installation, both for start-up under emulation (a JVM is 20-60x slower in the
# guests): every JVM runs C1 only with the serial collector (one vCPU), and uses KIT/aot/<role>.aot
# when present. An AOT cache refuses a class path with a non-empty directory, and Spark puts
# SPARK_CONF_DIR first on every class path: so SPARK_CONF_DIR is an empty directory and the shipped
# conf is given with --properties-file (log4j's file by its system property).
set -euo pipefail
kit=$(cd "$1" && pwd)
what=$2
shift 2
export SPARK_HOME=$kit/spark-home
export SPARK_CONF_DIR=$kit/empty-conf-dir
export SPARK_SCALA_VERSION=2.13
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
export SPARK_DAEMON_MEMORY=256m
mkdir -p "$SPARK_CONF_DIR" 2>/dev/null || true # read-only in the guests, where the kit made it
props=$SPARK_HOME/conf/spark-defaults.conf
MASTER_PORT=7077

# jvm_options ROLE: what every JVM of that role gets besides Spark's own options.
jvm_options() {
  # The JVM's own warnings to stderr: the driver's stdout is the job's output.
  local o="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr"
  o+=" -Dlog4j2.configurationFile=$SPARK_HOME/conf/log4j2.properties"
  if [[ ${SPARK_KIT_TRAINING:-0} == 1 ]]; then
    o+=" -XX:AOTMode=record -XX:AOTConfiguration=$kit/aot/$1.aotconf"
  elif [[ -f $kit/aot/$1.aot ]]; then
    o+=" -XX:AOTCache=$kit/aot/$1.aot"
  fi
  echo "$o"
}

# spark_class CLASS ARGS...: as bin/spark-class: the launcher prints a NUL line, then the command
# NUL-separated; run it in this process.
spark_class() {
  local cmd=() arg started=0
  while IFS= read -r -d '' arg; do
    if ((started)); then cmd+=("${arg#$'\n'}"); elif [[ -z $arg ]]; then started=1; fi
  done < <("$JAVA_HOME/bin/java" -Xmx128m -XX:TieredStopAtLevel=1 -cp "$SPARK_HOME/jars/*" org.apache.spark.launcher.Main "$@")
  ((${#cmd[@]})) || { echo "spark-standalone: Spark's launcher printed no command for $1" >&2; return 1; }
  exec "${cmd[@]}"
}

case $what in
  master)
    export SPARK_LOCAL_IP=$1 SPARK_MASTER_OPTS; SPARK_MASTER_OPTS=$(jvm_options master)
    spark_class org.apache.spark.deploy.master.Master --host "$1" --port "${SPARK_KIT_MASTER_PORT:-$MASTER_PORT}" \
      --webui-port 0 --properties-file "$props" ;;
  worker)
    work=${SPARK_KIT_WORK:-/tmp/spark-worker}
    mkdir -p "$work/work" "$work/local"
    export SPARK_LOCAL_IP=$1 SPARK_LOCAL_DIRS=$work/local SPARK_WORKER_OPTS; SPARK_WORKER_OPTS=$(jvm_options worker)
    spark_class org.apache.spark.deploy.worker.Worker --host "$1" --cores 2 --memory 1g --webui-port 0 \
      --work-dir "$work/work" --properties-file "$props" "$2" ;;
  submit)
    address=$1 master=$2 provider=$3
    shift 3
    export SPARK_LOCAL_IP=$address
    spark_class org.apache.spark.deploy.SparkSubmit --master "$master" --deploy-mode client --properties-file "$props" \
      --conf spark.driver.host="$address" --conf spark.driver.bindAddress="$address" \
      --conf spark.shuffle.rdma.provider="$provider" --conf spark.ui.enabled=false \
      --conf spark.driver.memory=512m --conf spark.executor.memory=512m \
      --conf "spark.driver.extraJavaOptions=$(jvm_options driver)" \
      --conf "spark.executor.extraJavaOptions=$(jvm_options executor)" \
      --class org.rdmashuffle.benchmarks.spark.ShuffleJob "$kit/rdma-shuffle-benchmarks-app.jar" "$@" ;;
  train)
    self=${BASH_SOURCE[0]}
    logs=$kit/aot/training-logs
    rm -rf "$kit/aot" && mkdir -p "$logs"
    export SPARK_KIT_TRAINING=1 SPARK_KIT_WORK=$kit/aot/worker
    # A port of its own: the host may run other Spark masters.
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    pids=()
    stop() { ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true; }
    trap stop EXIT
    command_of() { # PID FILE: the process's command line (NUL-separated) once it has become java
      local i
      for ((i = 0; i < 400; i++)); do
        if [[ $(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | head -1) == */bin/java ]] &&
          tr '\0' '\n' <"/proc/$1/cmdline" | grep -q -- '-XX:AOTMode=record'; then
          cp "/proc/$1/cmdline" "$2"
          return 0
        fi
        sleep 0.05
      done
      echo "spark-standalone train: process $1 never became the JVM" >&2; return 1
    }
    await() { # FILE TEXT SECONDS
      local i
      for ((i = 0; i < $3 * 4; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.25; done
      echo "spark-standalone train: no '$2' in $1 after $3 s:" >&2; tail -20 "$1" >&2; return 1
    }
    SPARK_KIT_MASTER_PORT=$port bash "$self" "$kit" master 127.0.0.1 >"$logs/master.log" 2>&1 &
    pids+=($!)
    command_of $! "$logs/master.cmd"
    await "$logs/master.log" "I have been elected leader" 120
    bash "$self" "$kit" worker 127.0.0.1 "spark://127.0.0.1:$port" >"$logs/worker.log" 2>&1 &
    pids+=($!)
    command_of $! "$logs/worker.cmd"
    await "$logs/worker.log" "Successfully registered with master" 120
    # Both shuffles: the executors of both load what the guests' will.
    bash "$self" "$kit" submit 127.0.0.1 "spark://127.0.0.1:$port" software \
      --rows 20000 --partitions 4 --executors 1 --shuffle both >"$logs/driver.out" 2>"$logs/driver.log" &
    driver=$!
    command_of $driver "$logs/driver.cmd"
    wait $driver || { tail -30 "$logs/driver.log" >&2; echo "spark-standalone train: the training job failed" >&2; exit 1; }
    stop
    pids=()
    # The executors' command, as the Worker logged it (quoted arguments).
    python3 -c 'import shlex, sys
line = [l for l in open(sys.argv[1]) if "Launch command: " in l][-1]
sys.stdout.write("\0".join(shlex.split(line.split("Launch command: ", 1)[1])))' "$logs/worker.log" >"$logs/executor.cmd"
    for role in master worker driver executor; do
      [[ -s $kit/aot/$role.aotconf ]] || { echo "spark-standalone train: the $role recorded nothing (logs: $logs)" >&2; exit 1; }
      # The cache is made with the options the role ran with (Spark's module options among them: a
      # cache made without them is refused where they are given), its main class and arguments left out.
      mapfile -d '' create < <(python3 -c 'import sys
args = open(sys.argv[1]).read().split("\0")
out, i = [], 1
while i < len(args) and args[i]:
    a = args[i]
    if a in ("-cp", "-classpath"):
        out += [a, args[i + 1]]; i += 2; continue
    if not a.startswith("-"):
        break  # the main class
    if not a.startswith(("-XX:AOTMode=", "-XX:AOTConfiguration=")):
        out.append(a)
    i += 1
sys.stdout.write("\0".join(out + ["-XX:AOTMode=create", "-XX:AOTConfiguration=" + sys.argv[2], "-XX:AOTCache=" + sys.argv[3]]) + "\0")
' "$logs/$role.cmd" "$kit/aot/$role.aotconf" "$kit/aot/$role.aot")
      "$JAVA_HOME/bin/java" "${create[@]}" >"$logs/create-$role.log" 2>&1 ||
        { tail -5 "$logs/create-$role.log" | cut -c1-400 >&2; echo "spark-standalone train: no AOT cache for the $role" >&2; exit 1; }
      rm -f "$kit/aot/$role.aotconf"
    done
    ls -s --block-size=M "$kit"/aot/*.aot ;;
  *)
    echo "usage: $0 KIT master ADDR | worker ADDR MASTER_URL | submit ADDR MASTER_URL PROVIDER [job args] | train" >&2
    exit 2 ;;
esac
