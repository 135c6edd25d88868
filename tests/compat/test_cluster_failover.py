"""pyfluss against a 3-node cluster (docs/cluster.md) rides out the loss of a node that leads
buckets, with no retries in the application: appends and upserts with acks=all keep being
acknowledged, every acknowledged append is in the log exactly once, every acknowledged upsert
is in the changelog exactly once, and lookups return them.

Two faults: SIGTERM (a rolling restart: controlled shutdown moves the node's leaderships
first) and kill -9 (the node's lease expires, then the coordinator elects new leaders). Before
GET_METADATA listed a departed leader (docs/cluster.md, "Clients and a killed server"),
pyfluss's writer stalled for good after the kill."""

import asyncio
import time

import pyarrow as pa
import pytest

import fluss
from strom_server import start_cluster

from conftest import connect

OPTIONS = {
    "default.replication.factor": "3",
    "log.replica.min-in-sync-replicas-number": "2",
    "tablet-server.lease-ttl": "2s",
    "coordinator.lease-ttl": "2s",
}
BUCKETS = 3  # leaders are spread, so every node leads one
LOOKUPS = 60


@pytest.fixture
def cluster(strom_binary, tmp_path):
    servers = start_cluster(strom_binary, tmp_path, options=OPTIONS)
    yield servers
    for s in servers:
        s.kill()


async def wait_for_servers(servers, timeout=60):
    """Each node reports ready on its own and learns of the others through etcd a moment
    later; wait until every node lists all tablet servers."""
    deadline = time.monotonic() + timeout
    for s in servers:
        conn = await connect(s.coordinator)
        try:
            while True:
                nodes = await conn.get_admin().get_server_nodes()
                if sum(1 for x in nodes if x.server_type == "TabletServer") == len(servers):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"node {s.coordinator} does not list {len(servers)} tablet servers")
                await asyncio.sleep(0.1)
        finally:
            conn.close()


async def stream(writer_call, acked, stop):
    """Write rows 0, 1, 2, ... keeping up to 64 in flight; record acknowledgements."""
    pending = []
    i = 0
    while not stop.is_set():
        pending.append((i, writer_call(i)))
        i += 1
        if len(pending) >= 64:
            j, h = pending.pop(0)
            await h.wait()
            acked.append(j)
    for j, h in pending:
        await h.wait()
        acked.append(j)


async def wait_acked(acked, n, timeout=60):
    deadline = time.monotonic() + timeout
    while len(acked) < n:
        assert time.monotonic() < deadline, f"only {len(acked)} of {n} writes acknowledged after {timeout}s"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("fault", ["sigterm", "kill9"])
async def test_appends_and_upserts_survive_the_loss_of_a_leader(cluster, fault):
    bootstrap = ",".join(s.coordinator for s in cluster)
    await wait_for_servers(cluster)
    conn = await connect(bootstrap)
    admin = conn.get_admin()
    log_path = fluss.TablePath("fluss", f"cluster_{fault}_log")
    pk_path = fluss.TablePath("fluss", f"cluster_{fault}_pk")
    log_schema = pa.schema([pa.field("id", pa.int64()), pa.field("payload", pa.string())])
    pk_schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.int64())])
    await admin.create_table(log_path, fluss.TableDescriptor(fluss.Schema(log_schema), bucket_count=BUCKETS, bucket_keys=["id"]))
    await admin.create_table(pk_path, fluss.TableDescriptor(fluss.Schema(pk_schema, primary_keys=["id"]), bucket_count=BUCKETS))
    appender = (await conn.get_table(log_path)).new_append().create_writer()
    pk_table = await conn.get_table(pk_path)
    upserter = pk_table.new_upsert().create_writer()

    # Every row has its own key, so each acknowledged upsert is one insert in the changelog.
    appended, upserted = [], []
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(stream(lambda i: appender.append({"id": i, "payload": "x"}), appended, stop)),
        asyncio.create_task(stream(lambda i: upserter.upsert({"id": i, "v": i}), upserted, stop)),
    ]
    await wait_acked(appended, 500)
    await wait_acked(upserted, 500)
    # Node 1 leads a bucket of each table: assignment starts bucket b at server
    # (b + table id) mod 3, so with 3 buckets every node leads one of each table.
    if fault == "sigterm":
        cluster[0].stop()
    else:
        cluster[0].kill()
    await wait_acked(appended, len(appended) + 500)
    await wait_acked(upserted, len(upserted) + 500)
    stop.set()
    await asyncio.gather(*tasks)  # raises if any write failed
    conn.close()

    # Check through a connection bootstrapped from the live nodes. The writers' connection
    # may still list the stopped node among its servers (it was registered when the writers
    # last refreshed their metadata), and pyfluss's admin asks one server of that cached list,
    # chosen at random, and gives up if it refuses the connection (fluss-rust
    # client/metadata.rs, update_tables_metadata). That is the client's behaviour against
    # Apache Fluss too, not part of what this test checks.
    conn = await connect(",".join(s.coordinator for s in cluster[1:]))
    admin = conn.get_admin()
    pk_table = await conn.get_table(pk_path)

    # Every acknowledged append is in the log exactly once.
    ids = await read_log(admin, conn, log_path)
    assert len(ids) == len(set(ids)), "an append is in the log twice"
    missing = set(appended) - set(ids)
    assert not missing, f"acknowledged appends lost: {sorted(missing)[:10]}"

    # Every acknowledged upsert is in the changelog exactly once, as an insert (a write
    # applied twice would show as an update), and a lookup returns it.
    changes = await read_changelog(admin, pk_table, pk_path)
    kinds = {r[1] for r in changes}
    assert kinds == {"+I"}, f"changelog holds {kinds}, want inserts only"
    keys = [r[0] for r in changes]
    assert len(keys) == len(set(keys)), "an upsert is in the changelog twice"
    missing = set(upserted) - set(keys)
    assert not missing, f"acknowledged upserts lost from the changelog: {sorted(missing)[:10]}"
    # pyfluss sends one lookup at a time (~100 ms each: its batch timeout), so look up a
    # sample spread over the stream, before, around and after the fault.
    sample = upserted[:: max(1, len(upserted) // LOOKUPS)]
    lookuper = pk_table.new_lookup().create_lookuper()
    rows = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in sample))
    for k, row in zip(sample, rows):
        assert row is not None and row["v"] == k, f"key {k}: lookup {row}"
    conn.close()


async def read_log(admin, conn, path):
    """The ids of every record of a log table, up to its latest offsets."""
    latest = await admin.list_offsets(path, bucket_ids=list(range(BUCKETS)), offset_spec=fluss.OffsetSpec.latest())
    scanner = await (await conn.get_table(path)).new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    ids = []
    deadline = time.monotonic() + 60
    while len(ids) < sum(latest.values()) and time.monotonic() < deadline:
        ids.extend((await scanner.poll_arrow(500)).column("id").to_pylist())
    return ids


async def read_changelog(admin, table, path):
    """(id, change type as +I, -U, ...) of every changelog record of a primary-key table."""
    latest = await admin.list_offsets(path, bucket_ids=list(range(BUCKETS)), offset_spec=fluss.OffsetSpec.latest())
    scanner = await table.new_scan().create_log_scanner()
    for b in range(BUCKETS):
        scanner.subscribe(bucket_id=b, start_offset=fluss.EARLIEST_OFFSET)
    out = []
    deadline = time.monotonic() + 60
    while len(out) < sum(latest.values()) and time.monotonic() < deadline:
        for rec in await scanner.poll(500):
            out.append((rec.row["id"], rec.change_type.short_string()))
    return out
