# Strom: the two commands a newcomer needs are `make serve` and `make test`.

GO      ?= go
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
BIN     := bin/strom

.PHONY: diagrams test-console test-console-cluster serve build test test-go test-compat test-flink test-flink-quick test-flink-cluster test-java-remote test-rocksdb vet fuzz bench clean bench-fluss bench-fsync fetch-fluss test-cluster test-kafka bench-cluster bench-scale bench-clients

## serve: build and start a single-node server (coordinator :9123, tablet server :9124, data in ./strom-data)
serve: build
	./$(BIN) serve

## build: bin/strom and bin/strom-lake, the data lake tiering process strom serve starts next to
## it when datalake.format is set (docs/lake.md)
build:
	$(GO) build -trimpath -ldflags "-s -w" -o bin/ ./cmd/strom ./cmd/strom-lake

## test: every test — go vet, Go unit and integration tests, then the pyfluss compatibility suite
test: vet test-go test-compat

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

test-go:
	$(GO) test -count=1 ./...

$(VENV)/.installed: tests/compat/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/compat/requirements.txt
	touch $@

test-compat: build $(VENV)/.installed
	STROM_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q tests/compat

## test-flink: Flink SQL (Flink 1.20 + fluss-flink-1.20 0.9.1 from Maven Central) against a fresh
## server on free loopback ports, one PASS/FAIL line per check (~4 min; not part of `make test`).
## FLINK_CHECKS="name ..." runs only those checks; see docs/flink.md.
FLINK_CHECKS ?=
test-flink: build
	tests/flink/run.sh $(CURDIR)/$(BIN) $(FLINK_CHECKS)

## test-flink-quick: the Flink checks CI runs (~2-3 min with the jars cached): every item that
## passes today and needs no timeout to fail, and the KV snapshot reads (docs/flink.md).
FLINK_QUICK_CHECKS := catalog log_insert pk_insert log_earliest pk_earliest pk_batch_count \
	pk_point_query lookup_join alter_set_option alter_add_column alter_add_column_pk pk_update_delete \
	pk_full partitioned_pk pk_trimmed_full kafka_produced log_remote_earliest
test-flink-quick: build
	tests/flink/run.sh $(CURDIR)/$(BIN) $(FLINK_QUICK_CHECKS)

## test-flink-cluster: the primary-key `full`-mode Flink checks (KV snapshots) against a 3-node,
## replication-factor-3 cluster sharing one remote.data.dir (~2-3 min; not part of `make test`).
FLINK_CLUSTER_CHECKS := catalog pk_insert pk_full partitioned_pk pk_trimmed_full
test-flink-cluster: build
	FLINK_CLUSTER=1 tests/flink/run.sh $(CURDIR)/$(BIN) $(FLINK_CLUSTER_CHECKS)

## test-java-remote: the released Java client (fluss-client 0.9.1 from Maven Central) reads a
## table whose old segments were tiered to remote storage, every row once: on a file store, then
## on S3 (the tests/javaremote/s3emu emulator on loopback, fluss-fs-s3 0.9.1 on the client's
## classpath) (~1 min with the jars cached; Java 17+, Maven and Go; not part of `make test`;
## docs/tiered-storage.md).
test-java-remote: build
	tests/javaremote/run.sh $(CURDIR)/$(BIN) 40000 file
	tests/javaremote/run.sh $(CURDIR)/$(BIN) 40000 s3

## test-cluster: the long versions of the multi-process fault scenarios of tests/cluster (more
## rows, more faults; the short versions run in test-go). See docs/cluster.md.
test-cluster:
	CLUSTER_LONG=1 $(GO) test -count=1 -v -timeout 30m ./tests/cluster

## test-kafka: the Kafka listener's checks at full size (docs/kafka.md, "Tests"): the Go tests of
## server/kafka, the Kafka cluster scenarios with 20,000 messages per side of the kill, and the
## Kafka compatibility tests with the 3-node confluent-kafka scenario at 20,000 messages.
test-kafka: build $(VENV)/.installed
	$(GO) test -count=1 -timeout 10m ./server/kafka
	CLUSTER_LONG=1 $(GO) test -count=1 -v -timeout 20m -run 'Kafka' ./tests/cluster
	STROM_KAFKA_CLUSTER_MESSAGES=20000 STROM_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q tests/compat/test_kafka.py

## bench-cluster: failover time of a bucket of a 3-node RF=3 cluster over 20 leader kills
## (FAILOVER_PK_ROWS=1000000: a primary-key bucket holding that many rows; FAILOVER_FAULT=stop:
## SIGSTOP instead of kill -9; FAILOVER_HEARTBEATS=off: without heartbeat fencing)
bench-cluster:
	$(GO) test -run '^$$' -bench BenchmarkLeaderFailover -benchtime 20x -timeout 30m ./tests/cluster

## bench-scale: the cost of SCALE_BUCKETS buckets (default 3000; 100 per table, RF=3) on a 3-node
## cluster: etcd size and write rate, GET_METADATA latency, RSS and fds per idle replica, the
## failover of a node leading a third of them, a coordinator failover and a full restart
## (docs/cluster.md, "Scale"; SCALE_BUCKETS_PER_TABLE, SCALE_RF, SCALE_SAMPLE). 100,000 buckets:
## make bench-scale SCALE_BUCKETS=100000 SCALE_BUCKETS_PER_TABLE=1000 SCALE_RF=2
SCALE_BUCKETS ?= 3000
bench-scale:
	SCALE_BUCKETS=$(SCALE_BUCKETS) $(GO) test -run '^$$' -bench BenchmarkScale -benchtime 1x -timeout 120m -v ./tests/cluster

## test-rocksdb: RocksDB itself (frocksdbjni 6.20.3, the build Fluss's client uses, from Maven
## Central) opens the KV snapshot directories Strom writes (~10 s with the jar cached; needs Java 17
## and Maven; not part of `make test`). See docs/kv-snapshots.md.
test-rocksdb:
	ROCKSDB_CHECK=$(CURDIR)/tests/rocksdb/run.sh $(GO) test -count=1 -run 'RocksDB' ./internal/rocksdbdir/ ./server/kvsnap/

## fuzz: run every Go fuzz target briefly (FUZZTIME per target, default 15s)
FUZZTIME ?= 15s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## bench-fluss: side-by-side benchmark against Apache Fluss 0.9.1 (needs Java 17+ and Maven;
## fetches the released jars once into .cache/; see docs/benchmarks.md). Extra flags of
## tools/benchcompare go in BENCH_FLUSS_ARGS, e.g. BENCH_FLUSS_ARGS="-rounds 1 -rows 200000".
FLUSS_VERSION   := 0.9.1-incubating
FLUSS_CACHE     := .cache/fluss-0.9.1
LOG4J_VERSION   := 2.24.3
MVN             ?= mvn
BENCH_FLUSS_ARGS ?=

$(FLUSS_CACHE)/.fetched:
	@mkdir -p $(FLUSS_CACHE)
	@# fluss-server is a shaded jar (ZooKeeper included); it carries the SLF4J API but no logging backend.
	@for a in org.apache.fluss:fluss-server:$(FLUSS_VERSION) \
	          org.apache.logging.log4j:log4j-slf4j-impl:$(LOG4J_VERSION) \
	          org.apache.logging.log4j:log4j-api:$(LOG4J_VERSION) \
	          org.apache.logging.log4j:log4j-core:$(LOG4J_VERSION); do \
	  echo "fetching $$a"; \
	  $(MVN) -q -B -C dependency:copy -Dartifact=$$a -DoutputDirectory=$(FLUSS_CACHE) || exit 1; \
	done
	touch $@

fetch-fluss: $(FLUSS_CACHE)/.fetched

bench-fluss: build $(VENV)/.installed fetch-fluss
	$(GO) build -o bin/benchcompare ./tools/benchcompare
	bin/benchcompare -fluss-jars $(FLUSS_CACHE) -strom $(BIN) -python $(PY) -json .cache/bench-fluss.json -md .cache/bench-fluss.md $(BENCH_FLUSS_ARGS)

## bench-fsync: on the disk under .cache, N writers each appending to and fdatasyncing its own
## file (Strom's per-bucket segments) against one group-commit journal fed by the same writers,
## N = 1, 4, 16, 64 (~1-2 min; see docs/benchmarks.md). Flags of tools/fsyncbench go in
## BENCH_FSYNC_ARGS, e.g. "-rounds 3 -duration 2s".
BENCH_FSYNC_ARGS ?=
bench-fsync:
	@mkdir -p .cache
	$(GO) build -o bin/fsyncbench ./tools/fsyncbench
	bin/fsyncbench -dir .cache -json .cache/bench-fsync.json -md .cache/bench-fsync.md $(BENCH_FSYNC_ARGS)

## bench-clients: the Go client (package fluss) against the Java client (fluss-client 0.9.1 from
## Maven Central, tools/javabench) on the same Strom server and workload: append, scan, upsert,
## lookups; interleaved rounds, a fresh server per client run, rows/s, lookup latency and each
## client process's CPU time (needs Java 17+ and Maven; see docs/benchmarks.md). Flags of
## tools/benchclients go in BENCH_CLIENTS_ARGS, e.g. "-rounds 1 -rows 200000" or
## "-fluss-jars .cache/fluss-0.9.1" (after `make fetch-fluss`) to add Apache Fluss as a server.
JAVABENCH        := tools/javabench
BENCH_CLIENTS_ARGS ?=

$(JAVABENCH)/target/classpath.txt: $(JAVABENCH)/pom.xml
	@mkdir -p $(JAVABENCH)/target
	$(MVN) -B -q -f $(JAVABENCH)/pom.xml dependency:build-classpath -Dmdep.outputFile=$(CURDIR)/$@

$(JAVABENCH)/target/classes/.built: $(JAVABENCH)/target/classpath.txt $(shell find $(JAVABENCH)/src -name '*.java' 2>/dev/null)
	rm -rf $(JAVABENCH)/target/classes && mkdir -p $(JAVABENCH)/target/classes
	javac -d $(JAVABENCH)/target/classes -cp "$$(cat $(JAVABENCH)/target/classpath.txt)" $$(find $(JAVABENCH)/src -name '*.java')
	touch $@

bench-clients: build $(JAVABENCH)/target/classes/.built
	$(GO) build -o bin/benchclients ./tools/benchclients
	bin/benchclients -strom $(BIN) -javabench $(JAVABENCH)/target -json .cache/bench-clients.json -md .cache/bench-clients.md $(BENCH_CLIENTS_ARGS)

## test-kafka-broker: tests/compat/test_kafka.py's Kafka clients (confluent-kafka, kafka-python)
## against a real Apache Kafka broker (kafka_2.13 from Maven Central, KRaft, single node, started by
## tools/kafkabroker/run.sh), then against Strom; the pyfluss halves only run against Strom. Then
## tools/kafkabroker/differences.py asks both the same questions and prints the answers side by
## side (~2 min with the jars cached; Java 17+ and Maven; not part of `make test`; docs/kafka.md,
## "Compared with Apache Kafka").
.PHONY: test-kafka-broker bench-kafka
test-kafka-broker: build $(VENV)/.installed
	tools/kafkabroker/run.sh sh -c 'KAFKA_COMPAT_BOOTSTRAP=$$KAFKA_BOOTSTRAP $(PY) -m pytest -q -rs tests/compat/test_kafka.py && \
	  $(PY) tools/kafkabroker/differences.py $(CURDIR)/$(BIN)'
	STROM_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q -rs tests/compat/test_kafka.py

## bench-kafka: Kafka produce and consume throughput with franz-go (1 KiB values, acks=all,
## idempotent, no compression) against Strom's Kafka listener — with its defaults (fsync before
## every ack) and with log.flush.interval=1s (ack after write, as Kafka) — and against a real
## Apache Kafka broker on this machine (tools/kafkabroker), plus Fluss append of the same rows
## on the same Strom; interleaved rounds, ratios (Java 17+ and Maven; docs/benchmarks.md).
## Flags of tools/kafkabench go in BENCH_KAFKA_ARGS, e.g. "-rounds 1 -records 50000".
BENCH_KAFKA_ARGS ?=
bench-kafka: build
	@mkdir -p .cache
	$(GO) build -o bin/kafkabench ./tools/kafkabench
	tools/kafkabroker/run.sh bin/kafkabench -strom $(BIN) -json .cache/bench-kafka.json -md .cache/bench-kafka.md $(BENCH_KAFKA_ARGS)

clean:
	rm -rf bin $(VENV)

## diagrams: regenerate the SVG diagrams of docs/diagrams from their Graphviz sources
## (apt-get install -y graphviz); commit both
diagrams:
	for f in docs/diagrams/*.dot; do dot -Tsvg "$$f" -o "$${f%.dot}.svg"; done

## test-console: the web console in headless Chromium (apt-get install -y chromium): pages
## load without console errors, the data browser shows a client's rows, the tail updates
## live; writes screenshots to docs/console/ (docs/console.md)
test-console:
	STROM_TEST_CONSOLE=1 STROM_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsole$$' -v ./server/rest/console

## test-console-cluster: a leader failover watched in the console: a 3-node cluster of
## strom serve processes, the bucket view open in headless Chromium, a kill -9 of a bucket
## leader; the view must show the new leader and the shrunk ISR. Builds strom (or uses
## STROM_BIN); writes docs/console/failover-*.png
test-console-cluster:
	STROM_TEST_CONSOLE=1 STROM_TEST_CONSOLE_CLUSTER=1 STROM_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsoleClusterFailover$$' -v -timeout 10m ./server/rest/console
