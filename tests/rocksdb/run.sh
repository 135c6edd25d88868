#!/usr/bin/env bash
# Compiles RocksDBCheck.java against frocksdbjni (resolved by Maven from Maven Central into ~/.m2)
# and runs it on the given directories: tests/rocksdb/run.sh DIR...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cp_file="$here/target/classpath.txt"
if [ ! -s "$cp_file" ] || [ "$here/pom.xml" -nt "$cp_file" ]; then
  mvn -B -q -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$cp_file" >&2
fi
classes="$here/target/classes"
if [ ! -d "$classes" ] || [ -n "$(find "$here/src" -newer "$classes" -name '*.java' 2>/dev/null)" ]; then
  rm -rf "$classes" && mkdir -p "$classes"
  javac -d "$classes" -cp "$(cat "$cp_file")" $(find "$here/src" -name '*.java') >&2
  touch "$classes"
fi
exec java -cp "$classes:$(cat "$cp_file")" dev.strom.rocksdbcheck.RocksDBCheck "$@"
