"""Asks Apache Kafka and Strom's Kafka listener the same questions, one behaviour each, and
prints a Markdown table of the answers side by side (`make test-kafka-broker`; docs/kafka.md,
"Compared with Apache Kafka"). Usage:

    KAFKA_BOOTSTRAP=host:port python differences.py STROM_BINARY

starts a `strom serve` with a KAFKA listener (tests/compat/strom_server.py), runs every probe
against both, and exits 0 unless a probe itself could not run. The answers are observations,
not assertions: the table is what the documentation's comparison is written from.
"""

import os
import socket
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "compat"))
from strom_server import StromServer, free_port  # noqa: E402


def api_versions(bootstrap):
    """The APIs the broker advertises: ApiVersions v0 over a raw socket, keys with version ranges."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        client = b"differences"
        body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(s, 4))[0]
        data = _read(s, size)
    _, err, n = struct.unpack(">ihi", data[:10])
    apis = {}
    for i in range(n):
        key, lo, hi = struct.unpack(">hhh", data[10 + 6 * i:16 + 6 * i])
        apis[key] = (lo, hi)
    return err, apis


def _read(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def create(bootstrap, topic, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=10)[topic].result(timeout=20)
    return admin


def produce(bootstrap, topic, records, **conf):
    """Sends (key, value, timestamp_ms) records; returns the delivery errors and offsets."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 10000, **conf})
    out = []
    for key, value, ts in records:
        kw = {"timestamp": ts} if ts else {}
        p.produce(topic, key=key, value=value, on_delivery=lambda err, msg: out.append(err.name() if err else msg.offset()), **kw)
    p.flush(20)
    return out


def short(err):
    if isinstance(err, KafkaException):
        err = err.args[0]
    name = getattr(err, "name", None)
    return (name() if callable(name) else str(err)).split("\n")[0][:90]


def probe_auto_create(bootstrap, run):
    topic = f"auto_{run}"
    return f"produce: {produce(bootstrap, topic, [(b'k', b'v', 0)])}"


def probe_dotted_name(bootstrap, run):
    try:
        create(bootstrap, f"dotted.{run}")
        return "created"
    except Exception as e:  # noqa: BLE001 - the answer is the observation
        return short(e)


def probe_transactions(bootstrap, run):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx_{run}"})
    try:
        p.init_transactions(15)
        return "init_transactions ok"
    except Exception as e:  # noqa: BLE001
        return short(e)


def probe_describe_configs(bootstrap, run):
    admin = create(bootstrap, f"cfg_{run}")
    try:
        res = admin.describe_configs([ConfigResource("topic", f"cfg_{run}")], request_timeout=10)
        configs = list(res.values())[0].result(timeout=15)
        return f"{len(configs)} configs, retention.ms={configs['retention.ms'].value}"
    except Exception as e:  # noqa: BLE001
        return short(e)


def probe_create_partitions(bootstrap, run):
    admin = create(bootstrap, f"grow_{run}")
    try:
        admin.create_partitions([NewPartitions(f"grow_{run}", 3)], request_timeout=10)[f"grow_{run}"].result(timeout=15)
        return "1 -> 3 partitions"
    except Exception as e:  # noqa: BLE001
        return short(e)


def probe_delete_records(bootstrap, run):
    topic = f"trim_{run}"
    admin = create(bootstrap, topic)
    produce(bootstrap, topic, [(b"k", b"v%d" % i, 0) for i in range(5)])
    try:
        res = admin.delete_records([TopicPartition(topic, 0, 3)], request_timeout=10)
        low = list(res.values())[0].result(timeout=15)
        return f"low watermark {low.low_watermark}"
    except Exception as e:  # noqa: BLE001
        return short(e)


def probe_large_message(bootstrap, run):
    topic = f"big_{run}"
    create(bootstrap, topic)
    return f"2 MiB value: {produce(bootstrap, topic, [(b'k', b'x' * (2 << 20), 0)], **{'message.max.bytes': 4 << 20})}"


def probe_offsets_for_old_timestamps(bootstrap, run):
    """Records stamped an hour ago (CreateTime): which offset does '30 minutes ago' resolve to?"""
    topic = f"ts_{run}"
    create(bootstrap, topic)
    hour_ago = int(time.time() * 1000) - 3_600_000
    produce(bootstrap, topic, [(b"k", b"v%d" % i, hour_ago + i) for i in range(3)])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ts_{run}"})
    try:
        found = c.offsets_for_times([TopicPartition(topic, 0, hour_ago + 1_800_000)], timeout=10)
        return f"offset {found[0].offset} (3 records)"
    finally:
        c.close()


def probe_fetched_timestamp_type(bootstrap, run):
    topic = f"tstype_{run}"
    create(bootstrap, topic)
    produce(bootstrap, topic, [(b"k", b"v", 1_000_000_000_000)], **{"compression.type": "gzip"})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"tstype_{run}", "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                kind = {0: "none", 1: "CreateTime", 2: "LogAppendTime"}[m.timestamp()[0]]
                return f"{kind} {m.timestamp()[1]}"
        return "no record"
    finally:
        c.close()


def probe_consumer_protocol(bootstrap, run):
    """KIP-848's group protocol (group.protocol=consumer): does a subscriber get assigned?"""
    topic = f"kip848_{run}"
    create(bootstrap, topic)
    produce(bootstrap, topic, [(b"k", b"v", 0)])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kip848_{run}", "group.protocol": "consumer",
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                return "read the record" if m.error() is None else short(m.error())
        return "no assignment within 15 s"
    finally:
        c.close()


PROBES = [
    ("produce to a topic that does not exist", probe_auto_create),
    ("CreateTopics of a name with a dot", probe_dotted_name),
    ("transactional producer", probe_transactions),
    ("DescribeConfigs of a topic", probe_describe_configs),
    ("CreatePartitions", probe_create_partitions),
    ("DeleteRecords below offset 3 of 5", probe_delete_records),
    ("a 2 MiB record (client allows 4 MiB)", probe_large_message),
    ("offsets_for_times, records stamped 1 h ago, asked for 30 min ago", probe_offsets_for_old_timestamps),
    ("timestamp of a fetched record produced with CreateTime 10^12, gzip", probe_fetched_timestamp_type),
    ("KIP-848 consumer group protocol", probe_consumer_protocol),
]


def answers(bootstrap):
    run = uuid.uuid4().hex[:8]
    out = {}
    err, apis = api_versions(bootstrap)
    out["ApiVersions v0"] = f"error {err}, {len(apis)} APIs"
    out["_apis"] = apis
    for name, probe in PROBES:
        try:
            out[name] = probe(bootstrap, run)
        except Exception as e:  # noqa: BLE001 - a probe that could not run is reported as such
            out[name] = f"probe failed: {short(e)}"
    return out


def main():
    kafka = os.environ.get("KAFKA_BOOTSTRAP")
    if not kafka or len(sys.argv) != 2:
        sys.exit("usage: KAFKA_BOOTSTRAP=host:port differences.py STROM_BINARY")
    d = Path(tempfile.mkdtemp(prefix="strom-kafka-differences-"))
    coord, tablet, kport = free_port(), free_port(), free_port()
    cfg = d / "server.yaml"
    cfg.write_text(f"bind.listeners: FLUSS://127.0.0.1:{coord}\n"
                   f"tablet-server.bind.listeners: FLUSS://127.0.0.1:{tablet}, KAFKA://127.0.0.1:{kport}\n"
                   "kafka.enabled: true\n")
    srv = StromServer(sys.argv[1], str(d / "data"), extra_args=["--config", str(cfg)])
    srv.listen_flags = False
    srv.start()
    try:
        got = {"Apache Kafka": answers(kafka), "Strom": answers(f"127.0.0.1:{kport}")}
    finally:
        srv.stop()
    names = ["ApiVersions v0"] + [n for n, _ in PROBES]
    print("| behaviour | Apache Kafka | Strom |\n|---|---|---|")
    for n in names:
        print(f"| {n} | {got['Apache Kafka'][n]} | {got['Strom'][n]} |")
    ka, sa = got["Apache Kafka"]["_apis"], got["Strom"]["_apis"]
    print("\nAPIs Apache Kafka advertises and Strom does not:", sorted(set(ka) - set(sa)))
    print("APIs both advertise with other version ranges:",
          {k: (ka[k], sa[k]) for k in sorted(set(ka) & set(sa)) if ka[k] != sa[k]})
    failed = [n for n in names for g in got.values() if str(g[n]).startswith("probe failed")]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
