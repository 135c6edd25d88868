#!/usr/bin/env bash
# The released Java client (fluss-client 0.9.1, from Maven Central through tools/javabench's
# pom) reads a table whose old segments Strom tiered to remote storage (docs/tiered-storage.md).
#   tests/javaremote/run.sh STROM_BINARY [ROWS [file|s3]]
# Starts `strom serve` on free loopback ports with remote.data.dir, 1 MB segments and a 1 s
# tiering interval, runs TieredRead.java against it, and stops it. Needs Java 17+ and Maven.
# s3: remote.data.dir is s3://strom/tiered on tests/javaremote/s3emu (gofakes3 on loopback,
# built here with go), and the Java client gets fluss-fs-s3 (Maven Central) on its classpath:
# Fluss's FileSystem finds FileSystemPlugins and SecurityTokenReceivers there by ServiceLoader,
# and takes the endpoint and keys from the server's GET_FILESYSTEM_SECURITY_TOKEN answer.
set -euo pipefail
bin="$1"
rows="${2:-40000}"
store="${3:-file}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mkdir -p "$here/target"
cp_file="$here/target/classpath.txt"
if [ ! -f "$cp_file" ] || [ "$root/tools/javabench/pom.xml" -nt "$cp_file" ]; then
  mvn -B -q -f "$root/tools/javabench/pom.xml" dependency:build-classpath -Dmdep.outputFile="$cp_file"
fi
extra_cp=""
if [ "$store" = s3 ]; then
  s3_jar="$here/target/s3/fluss-fs-s3-0.9.1-incubating.jar"
  if [ ! -f "$s3_jar" ]; then
    mvn -B -q dependency:copy -Dartifact=org.apache.fluss:fluss-fs-s3:0.9.1-incubating -DoutputDirectory="$here/target/s3"
  fi
  extra_cp=":$s3_jar"
  (cd "$root" && go build -o "$here/target/s3emu" ./tests/javaremote/s3emu)
fi
classes="$here/target/classes"
if [ ! -d "$classes" ] || [ -n "$(find "$here/src" -newer "$classes" -name '*.java' 2>/dev/null)" ]; then
  rm -rf "$classes" && mkdir -p "$classes"
  javac -d "$classes" -cp "$(cat "$cp_file")" $(find "$here/src" -name '*.java')
  touch "$classes"
fi

work="$(mktemp -d)"
pid=""
emu_pid=""
cleanup() {
  for p in $pid $emu_pid; do
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

remote_opts=(--set remote.data.dir="$work/remote")
remote_where="$work/remote"
if [ "$store" = s3 ]; then
  "$here/target/s3emu" </dev/null >"$work/s3emu.out" 2>"$work/s3emu.log" &
  emu_pid=$!
  tries=0
  until grep -q '^s3emu ready' "$work/s3emu.out" 2>/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ] || ! kill -0 "$emu_pid" 2>/dev/null; then
      cat "$work/s3emu.out" "$work/s3emu.log" >&2; echo "s3emu not ready" >&2; exit 1
    fi
    sleep 0.1
  done
  endpoint="$(sed -n 's/^s3emu ready endpoint=//p' "$work/s3emu.out")"
  remote_opts=(--set remote.data.dir=s3://strom/tiered --set s3.endpoint="$endpoint"
    --set s3.access-key=strom-test-access --set s3.secret-key=strom-test-secret
    --set s3.region=us-east-1 --set s3.path-style-access=true)
  remote_where="$endpoint/strom?prefix=tiered/"
fi

"$bin" serve --data-dir "$work/data" --coordinator-listen 127.0.0.1:0 --tablet-listen 127.0.0.1:0 \
  "${remote_opts[@]}" --set log.segment.file-size=1mb \
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
  -cp "$classes:$(cat "$cp_file")$extra_cp" dev.strom.javaremote.TieredRead "$bootstrap" "$work/data" "$rows" "$remote_where" || status=$?
if [ "$status" -eq 0 ] && [ "$store" = s3 ]; then
  # The tablet directories held only active segments, so the rest came from S3; say by whom.
  java_gets="$(grep -c '^GET .*\.log .*[Jj]ava' "$work/s3emu.log" || true)"
  echo "s3: $java_gets GETs of tiered .log objects by the Java client ($(grep -c '^GET ' "$work/s3emu.log" || true) in all)"
  [ "$java_gets" -gt 0 ] || { echo "the Java client read no tiered segment from S3" >&2; status=1; }
fi
if [ "$status" -ne 0 ]; then
  cp "$work/strom.log" "$here/target/strom.log"
  [ -f "$work/s3emu.log" ] && cp "$work/s3emu.log" "$here/target/s3emu.log"
  echo "server log kept as $here/target/strom.log" >&2
fi
exit "$status"
