"""The Kafka listener (docs/kafka.md) through real Kafka clients: confluent-kafka (librdkafka) and
kafka-python, against a `strom serve` process started the way the rest of the suite starts it,
and the same topics read and written through pyfluss as the log tables `kafka.<topic>`."""

import os
import time

import pyarrow as pa
import pytest

import fluss
import kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from strom_server import StromServer, free_port, start_cluster

PARTITIONS = 3
CODECS = ["gzip", "snappy", "lz4", "zstd"]
# The size: 20,000 keyed messages with headers, acks=all, idempotent.
MESSAGES = 20000
# The 3-node variant runs a tenth of that in the suite; `make test-kafka` runs it at full size.
CLUSTER_MESSAGES = int(os.environ.get("STROM_KAFKA_CLUSTER_MESSAGES", "2000"))
CLUSTER_OPTIONS = {
    "default.replication.factor": "3",
    "log.replica.min-in-sync-replicas-number": "2",
    "tablet-server.lease-ttl": "2s",
    "coordinator.lease-ttl": "2s",
}


class _ExternalKafka:
    """A Kafka broker that is not Strom ($KAFKA_COMPAT_BOOTSTRAP: `make test-kafka-broker` runs
    these tests against Apache Kafka, docs/kafka.md "Compared with Apache Kafka"). It has no
    Fluss listener, so the pyfluss halves of the tests are skipped."""

    def __init__(self, bootstrap):
        self.kafka = bootstrap
        self.bootstrap = None


def needs_fluss(srv):
    if srv.bootstrap is None:
        pytest.skip("the broker under test has no Fluss listener")


@pytest.fixture(scope="module")
def kafka_server(tmp_path_factory, request):
    if os.environ.get("KAFKA_COMPAT_BOOTSTRAP"):
        yield _ExternalKafka(os.environ["KAFKA_COMPAT_BOOTSTRAP"])
        return
    strom_binary = request.getfixturevalue("strom_binary")
    d = tmp_path_factory.mktemp("kafka")
    coord, tablet, kafka = free_port(), free_port(), free_port()
    cfg = d / "server.yaml"
    cfg.write_text(
        f"bind.listeners: FLUSS://127.0.0.1:{coord}\n"
        f"tablet-server.bind.listeners: FLUSS://127.0.0.1:{tablet}, KAFKA://127.0.0.1:{kafka}\n"
        "kafka.enabled: true\n"
    )
    srv = StromServer(strom_binary, str(d / "data"), extra_args=["--config", str(cfg)])
    # --coordinator-listen/--tablet-listen would replace the listeners of the config file.
    srv.listen_flags = False
    srv.start()
    srv.kafka = f"127.0.0.1:{kafka}"
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def kafka_cluster(strom_binary, tmp_path_factory):
    """Three nodes, each tablet server with a Kafka listener (docs/cluster.md, docs/kafka.md)."""
    if os.environ.get("KAFKA_COMPAT_BOOTSTRAP"):
        pytest.skip("a Strom cluster scenario: not run against an external Kafka broker")
    servers = start_cluster(strom_binary, tmp_path_factory.mktemp("kafka_cluster"), options=CLUSTER_OPTIONS, kafka=True)
    wait_kafka_cluster(servers)
    yield servers
    for s in servers:
        s.kill()


def wait_kafka_cluster(servers, timeout=60.0):
    """Wait until every node's Kafka listener answers Metadata naming all the brokers and a
    controller: a node is ready (its Fluss listener serves) a moment before the cluster has
    elected its coordinator, and an admin client asked in that moment times out waiting for
    the controller."""
    deadline = time.monotonic() + timeout
    pending = list(servers)
    while pending:
        srv = pending[0]
        try:
            md = AdminClient({"bootstrap.servers": srv.kafka}).list_topics(timeout=5)
            if md.controller_id >= 0 and len(md.brokers) == len(servers):
                pending.pop(0)
                continue
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"Kafka listener {srv.kafka} did not name {len(servers)} brokers and a controller")
        time.sleep(0.2)


def create_topic(bootstrap, name, partitions=PARTITIONS, replication=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=replication)],
                                  operation_timeout=10, request_timeout=15)
    futures[name].result(timeout=20)
    md = admin.list_topics(topic=name, timeout=10)
    assert sorted(md.topics[name].partitions) == list(range(partitions))


def produce(bootstrap, topic, messages, codec="none"):
    """Idempotent producer, acks=all; returns the delivery reports (message objects)."""
    p = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "compression.type": codec,
        "linger.ms": 5,
    })
    delivered, errors = [], []

    def on_delivery(err, msg):
        (errors if err else delivered).append(err or msg)

    for key, value, headers in messages:
        p.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0, "producer did not deliver within 60 s"
    assert errors == []
    return delivered


def message(i, codec):
    return (f"k{i}".encode(), f"v{i}".encode(), [("i", str(i).encode()), ("codec", codec.encode())])


def consumer(bootstrap, group, **extra):
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        **extra,
    })


def poll_until(consumers, done, timeout=60.0):
    """Poll every consumer in turn until done(got) or the timeout; returns the messages."""
    got = []
    deadline = time.monotonic() + timeout
    while not done(got) and time.monotonic() < deadline:
        for c in consumers:
            # A batch per call: one message per poll would let an idle member's timeout
            # throttle a busy one.
            for m in c.consume(num_messages=500, timeout=0.05):
                if m.error():
                    raise KafkaException(m.error())
                got.append((c, m))
    return got


def wait_assigned(consumers, partitions, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.1)
            assert m is None or m.error() is None, m.error()
            assert m is None, "topic expected empty while the group forms"
        owned = [{tp.partition for tp in c.assignment()} for c in consumers]
        if all(owned) and sorted(p for o in owned for p in o) == list(range(partitions)):
            return owned
    raise TimeoutError(f"group did not assign {partitions} partitions to {len(consumers)} members")


async def poll_fluss_rows(scanner, want, timeout=15.0):
    rows = []
    deadline = time.monotonic() + timeout
    while len(rows) < want and time.monotonic() < deadline:
        t = await scanner.poll_arrow(500)
        rows.extend(t.to_pylist())
    return rows


async def test_confluent_kafka_end_to_end_and_pyfluss_reads_it(kafka_server):
    await confluent_scenario(kafka_server.kafka, kafka_server.bootstrap, "compat_orders", MESSAGES, replication=1)


async def test_confluent_kafka_on_a_three_node_cluster(kafka_cluster):
    """The same scenario against three nodes, the topic at replication factor 3: every node's
    listener answers Metadata for the cluster, the clients reach each partition's leader."""
    await confluent_scenario(",".join(s.kafka for s in kafka_cluster), ",".join(s.bootstrap for s in kafka_cluster),
                             "compat_cluster_orders", CLUSTER_MESSAGES, replication=3)


async def confluent_scenario(bootstrap, fluss_bootstrap, topic, messages, replication):
    """confluent-kafka end to end: an admin-created topic; idempotent acks=all producers send
    `messages` keyed messages with headers, a quarter per codec; a two-member group reads each
    exactly once and commits; offsets by time; a restarted member resumes at the commit; and
    pyfluss reads the same records as rows of kafka.<topic>."""
    MESSAGES = messages
    group = topic + "_group"
    create_topic(bootstrap, topic, replication=replication)

    # A two-member group forms on the empty topic first, so no rebalance happens while it reads.
    members = [consumer(bootstrap, group), consumer(bootstrap, group)]
    try:
        for c in members:
            c.subscribe([topic])
        owned = wait_assigned(members, PARTITIONS)
        assert sorted(len(o) for o in owned) == [1, 2]

        share = MESSAGES // len(CODECS)
        delivered = []
        for n, codec in enumerate(CODECS):
            delivered += produce(bootstrap, topic, [message(i, codec) for i in range(n * share, (n + 1) * share)], codec)
        assert len(delivered) == MESSAGES
        assert len({(m.partition(), m.offset()) for m in delivered}) == MESSAGES
        before_ts = {p: 1 + max(m.offset() for m in delivered if m.partition() == p) for p in range(PARTITIONS)}

        got = poll_until(members, lambda g: len(g) >= MESSAGES)
        # Exactly once: every key once, each from the member that owns its partition.
        keys = [m.key() for _, m in got]
        per_partition = {p: (sum(1 for _, m in got if m.partition() == p), sum(1 for d in delivered if d.partition() == p))
                         for p in range(PARTITIONS)}
        assert len(keys) == MESSAGES, f"(read, produced) by partition: {per_partition}, positions {[c.position(c.assignment()) for c in members]}"
        assert len(keys) == MESSAGES and set(keys) == {f"k{i}".encode() for i in range(MESSAGES)}
        for c, m in got:
            assert m.partition() in {tp.partition for tp in c.assignment()}
            i = int(m.key()[1:])
            assert m.value() == f"v{i}".encode()
            assert m.headers() == [("i", str(i).encode()), ("codec", CODECS[i // share].encode())]
        assert {c for c, _ in got} == set(members)
        # Within a partition, offsets arrive in order and match the producer's delivery reports.
        for p in range(PARTITIONS):
            offs = [m.offset() for _, m in got if m.partition() == p]
            assert offs == sorted(offs) == sorted(d.offset() for d in delivered if d.partition() == p)
        for c in members:
            c.commit(asynchronous=False)
        committed = members[0].committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == before_ts
    finally:
        for c in members:
            c.close()

    # Offsets by timestamp: a time after the first appends and before the next ones
    # resolves to the first new offset of each partition (append times, docs/kafka.md).
    time.sleep(0.02)
    cut = int(time.time() * 1000)
    time.sleep(0.02)
    extra = produce(bootstrap, topic, [message(i, "none") for i in range(MESSAGES, MESSAGES + 30)])
    probe = consumer(bootstrap, group + "_probe")
    try:
        found = probe.offsets_for_times([TopicPartition(topic, p, cut) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in found} == before_ts
        early = probe.offsets_for_times([TopicPartition(topic, p, 0) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in early} == {p: 0 for p in range(PARTITIONS)}
    finally:
        probe.close()

    # A restarted member of the group resumes at the committed offsets: only the new messages.
    again = consumer(bootstrap, group)
    try:
        again.subscribe([topic])
        got = poll_until([again], lambda g: len(g) >= len(extra))
        assert sorted(m.key() for _, m in got) == sorted(f"k{i}".encode() for i in range(MESSAGES, MESSAGES + 30))
        assert all(m.offset() >= before_ts[m.partition()] for _, m in got)
    finally:
        again.close()

    # The same records are rows of the log table kafka.<topic>.
    if fluss_bootstrap is None:
        return  # Apache Kafka (make test-kafka-broker): the Kafka half above is the test
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": fluss_bootstrap}))
    try:
        table = await conn.get_table(fluss.TablePath("kafka", topic))
        scanner = await table.new_scan().create_record_batch_log_scanner()
        for b in range(PARTITIONS):
            scanner.subscribe(bucket_id=b, start_offset=fluss.EARLIEST_OFFSET)
        rows = await poll_fluss_rows(scanner, MESSAGES + 30, timeout=60.0)
        assert len(rows) == MESSAGES + 30
        by_key = {r["key"]: r for r in rows}
        assert len(by_key) == MESSAGES + 30
        for i in (0, share, 2 * share, MESSAGES - 1, MESSAGES + 29):
            r = by_key[f"k{i}".encode()]
            codec = CODECS[i // share] if i < MESSAGES else "none"
            assert r["value"] == f"v{i}".encode()
            assert r["headers"] == [{"key": "i", "value": str(i).encode()}, {"key": "codec", "value": codec.encode()}]
            assert r["timestamp"] is not None
    finally:
        conn.close()


TOPIC_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))),
    pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
])


async def test_rows_appended_by_pyfluss_are_kafka_records(kafka_server):
    topic = "compat_from_fluss"
    needs_fluss(kafka_server)
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": kafka_server.bootstrap}))
    try:
        admin = conn.get_admin()
        await admin.create_database("kafka", ignore_if_exists=True)
        path = fluss.TablePath("kafka", topic)
        await admin.drop_table(path, ignore_if_not_exists=True)
        await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(TOPIC_SCHEMA), bucket_count=2))
        table = await conn.get_table(path)
        w = table.new_append().create_writer()
        now = int(time.time() * 1000)
        w.write_arrow(pa.Table.from_pydict({
            "key": [f"f{i}".encode() for i in range(10)],
            "value": [f"row{i}".encode() if i != 9 else None for i in range(10)],
            "headers": [[{"key": "src", "value": b"fluss"}] for _ in range(10)],
            "timestamp": [now + i for i in range(10)],
        }, schema=TOPIC_SCHEMA))
        await w.flush()
    finally:
        conn.close()

    c = Consumer({"bootstrap.servers": kafka_server.kafka, "group.id": "compat_from_fluss_reader",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(2)])  # OFFSET 0: from the start
        got = [m for _, m in poll_until([c], lambda g: len(g) >= 10)]
    finally:
        c.close()
    assert sorted(m.key() for m in got) == sorted(f"f{i}".encode() for i in range(10))
    for m in got:
        i = int(m.key()[1:])
        assert m.value() == (f"row{i}".encode() if i != 9 else None)
        assert m.headers() == [("src", b"fluss")]
        assert m.timestamp()[1] == now + i


def test_kafka_python_produces_and_consumes(kafka_server):
    kafka_python_scenario(kafka_server.kafka, "compat_kafka_python", replication=1)


def test_kafka_python_on_a_three_node_cluster(kafka_cluster):
    """kafka-python against three nodes, the topic at replication factor 3: the client finds the
    partition's leader through Metadata."""
    kafka_python_scenario(",".join(s.kafka for s in kafka_cluster), "compat_cluster_kafka_python", replication=3)


def kafka_python_scenario(bootstrap, topic, replication):
    """kafka-python end to end: acks=all produce of keyed messages with headers, a group
    consumer reading them in order from the earliest offset, and a commit."""
    create_topic(bootstrap, topic, partitions=1, replication=replication)
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=10000)
    try:
        futures = [p.send(topic, key=f"p{i}".encode(), value=f"kp{i}".encode(), headers=[("n", str(i).encode())])
                   for i in range(5)]
        offsets = [f.get(timeout=10).offset for f in futures]
    finally:
        p.close(timeout=10)
    assert offsets == list(range(5))

    c = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=topic + "_group",
                            auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=1000)
    got = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                got.extend(records)
        c.commit()
    finally:
        c.close()
    assert [(r.key, r.value, r.offset) for r in got] == [(f"p{i}".encode(), f"kp{i}".encode(), i) for i in range(5)]
    assert [list(r.headers) for r in got] == [[("n", str(i).encode())] for i in range(5)]
