#!/usr/bin/env bash
# Starts a single-node Apache Kafka broker (KRaft: one process that is broker and controller,
# storage formatted first, as `kafka-storage.sh format` does) on free loopback ports with a fresh
# log directory, runs COMMAND with KAFKA_BOOTSTRAP=host:port in its environment, and stops the
# broker when COMMAND ends (also on failure or Ctrl-C).
#   tools/kafkabroker/run.sh COMMAND [ARG...]
# Released jars only: Maven resolves kafka_2.13 and its dependencies from Maven Central (once,
# into ~/.m2; pom.xml beside this script). Needs Java 17+ and Maven. KAFKA_BROKER_SET="k=v ..."
# adds or overrides server.properties lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { echo "usage: run.sh COMMAND [ARG...]" >&2; exit 2; }

cp_file="$here/target/classpath.txt"
if [ ! -s "$cp_file" ] || [ "$here/pom.xml" -nt "$cp_file" ]; then
  mkdir -p "$here/target"
  mvn -B -q -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$cp_file"
fi
cp="$(cat "$cp_file")"

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

read -r broker_port controller_port <<<"$(python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))')"

cat >"$work/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$broker_port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$broker_port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$work/logs
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
for kv in ${KAFKA_BROKER_SET:-}; do
  echo "$kv" >>"$work/server.properties"
done
cat >"$work/log4j2.properties" <<'LOG'
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
LOG

jvm=(java -Xms512m -Xmx1g -Dkafka.logs.dir="$work" -Dlog4j2.configurationFile="$work/log4j2.properties" -cp "$cp")
cluster_id="$(python3 -c 'import base64,uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')"
"${jvm[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$work/server.properties" >"$work/format.log" 2>&1 ||
  { cat "$work/format.log" >&2; echo "kafka storage format failed" >&2; exit 1; }

"${jvm[@]}" kafka.Kafka "$work/server.properties" >"$work/stdout.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "Kafka Server started" "$work/server.log" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/stdout.log" "$work/server.log" >&2 2>/dev/null; echo "kafka broker exited" >&2; exit 1; }
  sleep 0.1
done
grep -q "Kafka Server started" "$work/server.log" || { tail -50 "$work/server.log" >&2; echo "kafka broker not ready" >&2; exit 1; }
version="$(basename "$(tr ':' '\n' <"$cp_file" | grep '/kafka_2.13-')" .jar)"
echo "apache kafka ($version) serving at 127.0.0.1:$broker_port (log dir $work)"

status=0
KAFKA_BOOTSTRAP="127.0.0.1:$broker_port" KAFKA_BROKER_PID="$pid" "$@" || status=$?
if [ "$status" -ne 0 ]; then
  cp "$work/server.log" "$here/target/kafka-server.log" 2>/dev/null || true
fi
exit "$status"
