#!/usr/bin/env bash
# The released Java client (fluss-client 0.9.1, from Maven Central through tools/javabench's
# pom) reads a table whose old segments Strom tiered to remote storage (docs/tiered-storage.md).
#   tests/javaremote/run.sh STROM_BINARY [ROWS]
# Starts `strom serve` on free loopback ports with remote.data.dir, 1 MB segments and a 1 s
# tiering interval, runs TieredRead.java against it, and stops it. Needs Java 17+ and Maven.
set -euo pipefail
bin="$1"
rows="${2:-40000}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mkdir -p "$here/target"
cp_file="$here/target/classpath.txt"
if [ ! -f "$cp_file" ] || [ "$root/tools/javabench/pom.xml" -nt "$cp_file" ]; then
  mvn -B -q -f "$root/tools/javabench/pom.xml" dependency:build-classpath -Dmdep.outputFile="$cp_file"
fi
classes="$here/target/classes"
if [ ! -d "$classes" ] || [ -n "$(find "$here/src" -newer "$classes" -name '*.java' 2>/dev/null)" ]; then
  rm -rf "$classes" && mkdir -p "$classes"
  javac -d "$classes" -cp "$(cat "$cp_file")" $(find "$here/src" -name '*.java')
  touch "$classes"
fi

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

"$bin" serve --data-dir "$work/data" --coordinator-listen 127.0.0.1:0 --tablet-listen 127.0.0.1:0 \
  --set remote.data.dir="$work/remote" --set log.segment.file-size=1mb \
  --set remote.log.task-interval-duration=1s >"$work/strom.log" 2>&1 &
pid=$!
bootstrap=""
for _ in $(seq 1 300); do
  bootstrap="$(sed -n 's/.*strom is ready.* coordinator=\([^ ]*\) .*/\1/p' "$work/strom.log" | tail -1)"
  [ -n "$bootstrap" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/strom.log"; echo "strom serve exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$bootstrap" ] || { cat "$work/strom.log"; echo "strom serve not ready" >&2; exit 1; }

status=0
java --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$classes:$(cat "$cp_file")" dev.strom.javaremote.TieredRead "$bootstrap" "$work/data" "$rows" "$work/remote" || status=$?
if [ "$status" -ne 0 ]; then
  cp "$work/strom.log" "$here/target/strom.log"
  echo "server log kept as $here/target/strom.log" >&2
fi
exit "$status"
