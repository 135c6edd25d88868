"""Lakehouse tiering: tables with table.datalake.enabled stream into Iceberg inside the server;
pyiceberg reads exactly the rows written through pyfluss, get_latest_lake_snapshot agrees with
Iceberg, and a SIGKILL during tiering neither loses nor duplicates a row."""

import asyncio
import os
import time

import pyarrow as pa
import pytest
import pytest_asyncio

import fluss
from pyiceberg.catalog.sql import SqlCatalog

from conftest import connect
from strom_server import StromServer

LAKE_ARGS = ["--set", "datalake.format=iceberg"]
FRESH = {"table.datalake.enabled": "true", "table.datalake.freshness": "500ms"}
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("score", pa.int16())])


@pytest.fixture
def lake_server(strom_binary, tmp_path):
    srv = StromServer(strom_binary, str(tmp_path / "data"), extra_args=LAKE_ARGS).start()
    yield srv
    srv.kill()


def iceberg_catalog(srv) -> SqlCatalog:
    lake = os.path.join(os.path.abspath(srv.data_dir), "lake")
    return SqlCatalog("fluss-iceberg-catalog", uri=f"sqlite:///{lake}/catalog.db", warehouse=f"file://{lake}/warehouse")


def iceberg_rows(srv, db, name):
    for _ in range(50):
        try:
            tbl = iceberg_catalog(srv).load_table((db, name))
        except Exception:
            return None, None
        try:
            return tbl, tbl.scan().to_arrow()
        except FileNotFoundError:
            # The snapshot this reader loaded expired, and its replaced files were deleted,
            # before it read them: only a retention of 0 ms (the expiry test's) allows that.
            # Read the newer metadata, as an Iceberg reader retries a plan that failed.
            time.sleep(0.1)
    raise AssertionError(f"{db}.{name}: every read found a file of its snapshot deleted")


async def wait_tiered(srv, db, name, count, timeout=30.0):
    """Waits until the Iceberg table holds at least count rows and returns them."""
    deadline = time.monotonic() + timeout
    while True:
        tbl, rows = iceberg_rows(srv, db, name)
        if rows is not None and rows.num_rows >= count:
            return tbl, rows
        if time.monotonic() > deadline:
            got = None if rows is None else rows.num_rows
            raise AssertionError(f"Iceberg has {got} rows of {db}.{name} after {timeout}s, want {count}:\n{srv.log_text()[-3000:]}")
        await asyncio.sleep(0.2)


async def create_log_table(conn, path, buckets=3, props=FRESH, custom=None):
    admin = conn.get_admin()
    await admin.create_database(path.database_name, ignore_if_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=buckets, properties=dict(props),
                                                         custom_properties=dict(custom or {})))
    return await conn.get_table(path)


async def append(table, ids):
    writer = table.new_append().create_writer()
    for i in ids:
        writer.append({"id": i, "name": f"n{i}", "score": i % 100})
    await writer.flush()


def check_rows(rows, ids):
    got = sorted(zip(rows.column("id").to_pylist(), rows.column("name").to_pylist(), rows.column("score").to_pylist()))
    assert got == [(i, f"n{i}", i % 100) for i in sorted(ids)]


async def test_log_table_tiered_to_iceberg(lake_server):
    conn = await connect(lake_server.bootstrap)
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "events")
    table = await create_log_table(conn, path)
    await append(table, range(200))

    tbl, rows = await wait_tiered(lake_server, "lake_db", "events", 200)
    await asyncio.sleep(1.5)  # a few more rounds: nothing is tiered twice
    tbl, rows = iceberg_rows(lake_server, "lake_db", "events")
    check_rows(rows, range(200))

    # Fluss's layout: system columns, identity(__bucket) partitioning, summary properties.
    names = [f.name for f in tbl.schema().fields]
    assert names == ["id", "name", "score", "__bucket", "__offset", "__timestamp"]
    assert [f.name for f in tbl.spec().fields] == ["__bucket"]
    assert tbl.properties.get("fluss.table.datalake.enabled") == "true"
    snap = tbl.current_snapshot()
    assert snap.summary["commit-user"] == "__fluss_lake_tiering"

    # get_latest_lake_snapshot agrees with Iceberg: same snapshot, and per bucket the offset
    # after the last tiered row.
    lake = await admin.get_latest_lake_snapshot(path)
    assert lake.snapshot_id == snap.snapshot_id
    per_bucket = {}
    for b, off in zip(rows.column("__bucket").to_pylist(), rows.column("__offset").to_pylist()):
        per_bucket[b] = max(per_bucket.get(b, -1), off + 1)
    got = {tb.bucket_id: off for tb, off in lake.table_buckets_offset.items()}
    assert {b: o for b, o in got.items() if o > 0} == per_bucket
    assert set(got) == {0, 1, 2}  # empty buckets are tiered up to offset 0
    latest = await admin.list_offsets(path, bucket_ids=[0, 1, 2], offset_spec=fluss.OffsetSpec.latest())
    assert latest == got

    # More appends show up within the freshness target.
    await append(table, range(200, 260))
    _, rows = await wait_tiered(lake_server, "lake_db", "events", 260)
    check_rows(rows, range(260))
    conn.close()


async def test_table_without_lake_is_not_tiered(lake_server):
    conn = await connect(lake_server.bootstrap)
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "plain")
    table = await create_log_table(conn, path, props={})
    await append(table, range(10))
    await asyncio.sleep(1.0)
    with pytest.raises(fluss.FlussError) as e:
        await admin.get_latest_lake_snapshot(path)
    assert e.value.error_code == fluss.ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    assert iceberg_rows(lake_server, "lake_db", "plain")[1] is None
    conn.close()


async def test_sigkill_during_tiering_neither_loses_nor_duplicates(lake_server):
    conn = await connect(lake_server.bootstrap)
    path = fluss.TablePath("lake_db", "crashy")
    props = dict(FRESH, **{"table.datalake.freshness": "100ms"})
    table = await create_log_table(conn, path, buckets=2, props=props)
    written = 0
    for round_ in range(3):
        # Kill while rounds are running on fresh appends.
        await append(table, range(written, written + 300))
        written += 300
        await asyncio.sleep(0.15 * (round_ + 1))
        lake_server.kill()
        conn.close()
        lake_server.start()
        conn = await connect(lake_server.bootstrap)
        table = await conn.get_table(path)
    _, rows = await wait_tiered(lake_server, "lake_db", "crashy", written)
    await asyncio.sleep(1.0)
    _, rows = iceberg_rows(lake_server, "lake_db", "crashy")
    check_rows(rows, range(written))
    lake = await conn.get_admin().get_latest_lake_snapshot(path)
    assert sum(lake.table_buckets_offset.values()) == written
    conn.close()


async def test_partitioned_table_tiered_per_partition(lake_server):
    conn = await connect(lake_server.bootstrap)
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "by_region")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("region", pa.string()), pa.field("name", pa.string())])
    await admin.create_database("lake_db", ignore_if_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(schema), partition_keys=["region"], bucket_count=2, bucket_keys=["id"], properties=FRESH))
    for r in ("EU", "US"):
        await admin.create_partition(path, {"region": r})
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()
    want = []
    for i in range(120):
        region = "EU" if i % 3 else "US"
        writer.append({"id": i, "region": region, "name": f"n{i}"})
        want.append((i, region, f"n{i}"))
    await writer.flush()

    tbl, rows = await wait_tiered(lake_server, "lake_db", "by_region", 120)
    await asyncio.sleep(1.0)
    tbl, rows = iceberg_rows(lake_server, "lake_db", "by_region")
    got = sorted(zip(rows.column("id").to_pylist(), rows.column("region").to_pylist(), rows.column("name").to_pylist()))
    assert got == want
    # Fluss's spec: identity on each partition key, then bucket(key, n) for the bucket key.
    spec = [(f.name, str(f.transform)) for f in tbl.spec().fields]
    assert spec == [("region", "identity"), ("id_bucket", "bucket[2]")]
    # A partition filter reads only that partition's rows.
    eu = tbl.scan(row_filter="region == 'EU'").to_arrow()
    assert sorted(eu.column("id").to_pylist()) == [i for i in range(120) if i % 3]

    lake = await admin.get_latest_lake_snapshot(path)
    parts = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    offsets = {}
    for tb, off in lake.table_buckets_offset.items():
        offsets[tb.partition_id] = offsets.get(tb.partition_id, 0) + off
    assert offsets == {parts["EU"]: 80, parts["US"]: 40}
    conn.close()


def merge_on_read(tbl, key):
    """Reads a merge-on-read Iceberg table by hand: pyiceberg 0.12 refuses to scan tables with
    equality deletes, so apply them as the spec says — an equality delete removes the rows with
    its key from data files of a lower data sequence number."""
    import pyarrow.parquet as pq

    entries = tbl.inspect.entries().to_pylist()
    live = [e for e in entries if e["status"] != 2]
    data = [(e["sequence_number"], e["data_file"]["file_path"]) for e in live if e["data_file"]["content"] == 0]
    deletes = [(e["sequence_number"], e["data_file"]["file_path"]) for e in live if e["data_file"]["content"] == 2]
    assert all(e["data_file"]["content"] != 1 for e in live), "unexpected position deletes"

    def read(path):
        return pq.read_table(path.removeprefix("file://"))

    deleted_at = {}  # key -> highest sequence number of an equality delete on it
    for seq, path in deletes:
        for k in read(path).column(key).to_pylist():
            deleted_at[k] = max(deleted_at.get(k, -1), seq)
    rows = []
    for seq, path in data:
        for r in read(path).to_pylist():
            if deleted_at.get(r[key], -1) <= seq:
                rows.append(r)
    return rows


async def wait_pk_rows(srv, db, name, want, timeout=30.0):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        tbl, _ = iceberg_rows_pk(srv, db, name)
        if tbl is not None:
            got = sorted((r["id"], r["name"]) for r in merge_on_read(tbl, "id"))
            if got == want:
                return tbl
        await asyncio.sleep(0.3)
    extra = sorted(set(got or []) - set(want))
    missing = sorted(set(want) - set(got or []))
    raise AssertionError(f"Iceberg rows differ: extra {extra}, missing {missing}:\n{srv.log_text()[-3000:]}")


def iceberg_rows_pk(srv, db, name):
    try:
        tbl = iceberg_catalog(srv).load_table((db, name))
    except Exception:
        return None, None
    return (tbl, None) if tbl.current_snapshot() else (None, None)


async def test_primary_key_table_after_updates_and_deletes(lake_server):
    conn = await connect(lake_server.bootstrap)
    admin = conn.get_admin()
    path = fluss.TablePath("lake_db", "users")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    await admin.create_database("lake_db", ignore_if_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=2, properties=FRESH))
    table = await conn.get_table(path)
    writer = table.new_upsert().create_writer()
    for i in range(50):
        writer.upsert({"id": i, "name": f"v1-{i}"})
    await writer.flush()
    want = {i: f"v1-{i}" for i in range(50)}
    await wait_pk_rows(lake_server, "lake_db", "users", sorted(want.items()))

    # Updates and deletes, some in the same round as their insert.
    for i in range(0, 50, 3):
        writer.upsert({"id": i, "name": f"v2-{i}"})
        want[i] = f"v2-{i}"
    for i in range(1, 50, 5):
        writer.delete({"id": i})
        want.pop(i)
    for i in range(100, 110):
        writer.upsert({"id": i, "name": "new"})
        writer.upsert({"id": i, "name": f"newer-{i}"})
        want[i] = f"newer-{i}"
    await writer.flush()
    tbl = await wait_pk_rows(lake_server, "lake_db", "users", sorted(want.items()))

    assert tbl.properties.get("write.delete.mode") == "merge-on-read"
    assert [tbl.schema().find_field(i).name for i in tbl.schema().identifier_field_ids] == ["id"]
    assert [(f.name, str(f.transform)) for f in tbl.spec().fields] == [("id_bucket", "bucket[2]")]
    # The lake snapshot covers the whole changelog of both buckets.
    await asyncio.sleep(1.0)
    lake = await admin.get_latest_lake_snapshot(path)
    latest = await admin.list_offsets(path, bucket_ids=[0, 1], offset_spec=fluss.OffsetSpec.latest())
    assert {tb.bucket_id: off for tb, off in lake.table_buckets_offset.items()} == latest
    conn.close()


async def test_sigkill_during_primary_key_tiering(lake_server):
    conn = await connect(lake_server.bootstrap)
    path = fluss.TablePath("lake_db", "crashy_users")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    await conn.get_admin().create_database("lake_db", ignore_if_exists=True)
    props = dict(FRESH, **{"table.datalake.freshness": "100ms"})
    await conn.get_admin().create_table(path, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=2, properties=props))
    want = {}
    for round_ in range(3):
        writer = (await conn.get_table(path)).new_upsert().create_writer()
        for i in range(round_ * 20, round_ * 20 + 60):
            writer.upsert({"id": i, "name": f"r{round_}-{i}"})
            want[i] = f"r{round_}-{i}"
        for i in range(round_, 200, 7):
            if i in want:
                writer.delete({"id": i})
                want.pop(i)
        await writer.flush()
        await asyncio.sleep(0.15 * (round_ + 1))
        lake_server.kill()
        conn.close()
        lake_server.start()
        conn = await connect(lake_server.bootstrap)
    await wait_pk_rows(lake_server, "lake_db", "crashy_users", sorted(want.items()))
    conn.close()


async def test_auto_compaction_keeps_rows(lake_server):
    conn = await connect(lake_server.bootstrap)
    path = fluss.TablePath("lake_db", "compacted")
    props = dict(FRESH, **{"table.datalake.auto-compaction": "true"})
    table = await create_log_table(conn, path, buckets=1, props=props)
    written = 0
    for _ in range(7):  # one small file per round
        await append(table, range(written, written + 20))
        written += 20
        await wait_tiered(lake_server, "lake_db", "compacted", written)
    await asyncio.sleep(1.0)
    tbl, rows = iceberg_rows(lake_server, "lake_db", "compacted")
    check_rows(rows, range(written))
    files = tbl.inspect.files().num_rows
    assert files < 7, f"{files} data files after 7 rounds: nothing compacted"
    lake = await conn.get_admin().get_latest_lake_snapshot(path)
    assert lake.snapshot_id == tbl.current_snapshot().snapshot_id
    assert sum(lake.table_buckets_offset.values()) == written
    conn.close()


async def test_snapshot_expiry_removes_replaced_files(lake_server):
    """table.datalake.auto-expire-snapshot (on by default in Strom) with a 0 ms / 1 snapshot
    retention: after compactions the old snapshots expire and the data files only they read
    are deleted, while pyiceberg reads exactly the rows written and the lake snapshot still
    names the tiered offsets."""
    conn = await connect(lake_server.bootstrap)
    path = fluss.TablePath("lake_db", "expiring")
    props = dict(FRESH, **{"table.datalake.auto-compaction": "true"})
    # Iceberg properties are custom properties (iceberg.<property>), as in Fluss.
    retention = {"iceberg.history.expire.max-snapshot-age-ms": "0", "iceberg.history.expire.min-snapshots-to-keep": "1"}
    table = await create_log_table(conn, path, buckets=1, props=props, custom=retention)
    written = 0
    for _ in range(7):  # one small file per round, compacted from the fifth on
        await append(table, range(written, written + 20))
        written += 20
        await wait_tiered(lake_server, "lake_db", "expiring", written)
    await asyncio.sleep(1.0)
    tbl, rows = iceberg_rows(lake_server, "lake_db", "expiring")
    check_rows(rows, range(written))
    assert len(tbl.metadata.snapshots) <= 2, [s.snapshot_id for s in tbl.metadata.snapshots]
    live = {p.removeprefix("file://") for p in tbl.inspect.files().column("file_path").to_pylist()}
    data_dir = tbl.location().removeprefix("file://") + "/data"
    on_disk = {os.path.join(d, f) for d, _, fs in os.walk(data_dir) for f in fs if f.endswith(".parquet")}
    assert len(live) < 7, f"{len(live)} data files after 7 rounds: nothing compacted"
    assert on_disk == live, f"files no snapshot reads are left: {sorted(on_disk - live)}"
    lake = await conn.get_admin().get_latest_lake_snapshot(path)
    assert lake.snapshot_id == tbl.current_snapshot().snapshot_id
    assert sum(lake.table_buckets_offset.values()) == written
    conn.close()
