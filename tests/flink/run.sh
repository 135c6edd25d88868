#!/usr/bin/env bash
# Runs the Flink SQL checks (FlinkCheck.java) against a server.
#   tests/flink/run.sh STROM_BINARY [CHECK...]      starts Strom on free loopback ports, stops it after
#   FLINK_BOOTSTRAP=host:port tests/flink/run.sh - [CHECK...]   uses a server that is already running
#   FLINK_CLUSTER=1 tests/flink/run.sh STROM_BINARY [CHECK...]  starts a 3-node cluster instead
#     (replication factor 3, one shared remote.data.dir, embedded etcd on free loopback ports)
# Released jars only: Maven resolves Flink 1.20 and fluss-flink-1.20 from Maven Central (once, into
# ~/.m2); the harness is compiled with javac, so no Maven plugin beyond dependency:build-classpath.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:?usage: run.sh STROM_BINARY|- [CHECK...]}"
shift

cp_file="$here/target/classpath.txt"
lake_jar="$here/target/lib/fluss-lake-iceberg-0.9.1-incubating.jar"
if [ ! -s "$cp_file" ] || [ "$here/pom.xml" -nt "$cp_file" ]; then
  mvn -B -q -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$cp_file"
fi
if [ ! -s "$lake_jar" ]; then
  # Not a pom dependency: its published POM's parent is not on Maven Central (see pom.xml).
  mvn -B -q -f "$here/pom.xml" dependency:copy \
    -Dartifact=org.apache.fluss:fluss-lake-iceberg:0.9.1-incubating:jar -DoutputDirectory="$here/target/lib"
fi
classes="$here/target/classes"
if [ ! -d "$classes" ] || [ -n "$(find "$here/src" -newer "$classes" -name '*.java' 2>/dev/null)" ]; then
  rm -rf "$classes" && mkdir -p "$classes"
  javac -d "$classes" -cp "$(cat "$cp_file")" $(find "$here/src" -name '*.java')
  touch "$classes"
fi

work="$(mktemp -d)"
pid=""
pids=()
run_opts=()
cleanup() {
  for p in $pid "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p" 2>/dev/null || true
    fi
  done
  for p in $pid "${pids[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# free_ports N prints N loopback ports that were free a moment ago.
free_ports() {
  python3 -c 'import socket,sys
ss=[socket.socket() for _ in range(int(sys.argv[1]))]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

if [ "$bin" = "-" ]; then
  bootstrap="${FLINK_BOOTSTRAP:?FLINK_BOOTSTRAP=host:port is needed with -}"
elif [ -n "${FLINK_CLUSTER:-}" ]; then
  # Three nodes, each a coordinator, a tablet server and an etcd member (docs/cluster.md), with
  # the single node's snapshot and retention settings and one remote.data.dir they all share.
  read -r -a ports <<<"$(free_ports 12)"
  initial="n1=https://127.0.0.1:${ports[2]},n2=https://127.0.0.1:${ports[6]},n3=https://127.0.0.1:${ports[10]}"
  mkdir -p "$work/remote"
  # A cluster is authenticated by default: the three share one secret (docs/security.md).
  (umask 077 && head -c 32 /dev/urandom | base64 >"$work/cluster-secret")
  addrs=()
  for i in 1 2 3; do
    p=("${ports[@]:$(( (i - 1) * 4 )):4}")
    "$bin" serve --data-dir "$work/node$i" --coordinator-listen "127.0.0.1:${p[0]}" --tablet-listen "127.0.0.1:${p[1]}" \
      --set tablet-server.id=$i --set etcd.name=n$i --set etcd.initial-cluster="$initial" \
      --set etcd.listen-peer-urls="https://127.0.0.1:${p[2]}" --set etcd.listen-client-urls="https://127.0.0.1:${p[3]}" \
      --set cluster.secret-file="$work/cluster-secret" \
      --set default.replication.factor=3 --set remote.data.dir="$work/remote" \
      --set log.segment.file-size=4kb --set log.retention.check-interval=1s --set kv.snapshot.interval=1s \
      >"$work/strom$i.log" 2>&1 &
    pids+=($!)
    addrs+=("127.0.0.1:${p[0]}")
  done
  for i in 1 2 3; do
    for _ in $(seq 1 600); do
      grep -q "strom is ready" "$work/strom$i.log" && break
      kill -0 "${pids[$((i - 1))]}" 2>/dev/null || { cat "$work/strom$i.log"; echo "strom node $i exited" >&2; exit 1; }
      sleep 0.1
    done
    grep -q "strom is ready" "$work/strom$i.log" || { cat "$work/strom$i.log"; echo "strom node $i not ready" >&2; exit 1; }
  done
  bootstrap="$(IFS=,; echo "${addrs[*]}")"
  echo "3-node strom cluster serving at $bootstrap (logs: $work/strom{1,2,3}.log, kept on failure under $here/target/)"
else
  # Small segments and a 1 s retention run, so the trimmed-changelog check can trim within seconds;
  # log tiering into remote.data.dir every second (log_remote_earliest); a Kafka listener
  # (kafka_produced). --tablet-listen would replace the listeners of the config file.
  read -r kafka_port <<<"$(free_ports 1)"
  printf 'tablet-server.bind.listeners: FLUSS://127.0.0.1:0, KAFKA://127.0.0.1:%s\nkafka.enabled: true\n' "$kafka_port" >"$work/server.yaml"
  mkdir -p "$work/remote"
  "$bin" serve --data-dir "$work/data" --config "$work/server.yaml" --coordinator-listen 127.0.0.1:0 \
    --set log.segment.file-size=4kb --set log.retention.check-interval=1s --set kv.snapshot.interval=1s --set datalake.format=iceberg \
    --set remote.data.dir="$work/remote" --set remote.log.task-interval-duration=1s >"$work/strom.log" 2>&1 &
  pid=$!
  bootstrap=""
  for _ in $(seq 1 300); do
    bootstrap="$(sed -n 's/.*strom is ready.* coordinator=\([^ ]*\) .*/\1/p' "$work/strom.log" | tail -1)"
    [ -n "$bootstrap" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/strom.log"; echo "strom serve exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$bootstrap" ] || { cat "$work/strom.log"; echo "strom serve not ready" >&2; exit 1; }
  echo "strom serving at $bootstrap, Kafka at 127.0.0.1:$kafka_port (log: $work/strom.log, kept on failure as $here/target/strom.log)"
  run_opts=(-Dflinkcheck.kafka="127.0.0.1:$kafka_port" -Dflinkcheck.data-dir="$work/data" -Dflinkcheck.remote-dir="$work/remote")
fi

status=0
java "${run_opts[@]}" --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
  --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${FLINK_LOG_LEVEL:-error}" \
  -Dflinkcheck.timeout="${FLINK_CHECK_TIMEOUT:-60}" \
  -cp "$classes:$(cat "$cp_file"):$lake_jar" dev.strom.flinkcheck.FlinkCheck "$bootstrap" "$@" || status=$?
if [ "$status" -ne 0 ]; then
  for f in "$work"/strom*.log; do
    [ -f "$f" ] && cp "$f" "$here/target/"
  done
fi
exit "$status"
