"""Auto-increment columns (docs/primary-keys.md §2.9): pyfluss writes every column but the
id (partial_update_by_name), the server assigns ids on insert from ranges of
table.auto-increment.cache-size per bucket, keeps them on update, and shows them in
lookups, limit scans and the changelog; after a SIGKILL and restart the stored ids stay and
new ids come from new ranges, so none is handed out twice."""

import asyncio
import time

import pyarrow as pa
import pytest

import fluss

from conftest import connect

BUCKETS = 3
CACHE = 4  # small ranges: each bucket fetches several


def schema():
    return fluss.Schema(
        pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("uid", pa.int64())]),
        primary_keys=["id"], auto_increment_column="uid")


async def create(admin, name):
    path = fluss.TablePath("fluss", name)
    await admin.create_table(path, fluss.TableDescriptor(
        schema(), bucket_count=BUCKETS, properties={"table.auto-increment.cache-size": str(CACHE)}))
    return path


def writer_of(table):
    return table.new_upsert().partial_update_by_name(["id", "name"]).create_writer()


async def lookup_all(table, keys):
    lookuper = table.new_lookup().create_lookuper()
    rows = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in keys))
    return {k: r for k, r in zip(keys, rows)}


async def changelog(table, expected, timeout_s=20):
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    records = []
    deadline = time.monotonic() + timeout_s
    while len(records) < expected and time.monotonic() < deadline:
        records.extend(await scanner.poll(500))
    return records


async def test_ids_unique_and_kept_through_updates(connection, admin):
    path = await create(admin, "compat_autoinc")
    table = await connection.get_table(path)
    info = table.get_table_info()
    assert info.get_schema().get_auto_increment_columns() == ["uid"]

    writer = writer_of(table)
    for k in range(30):
        writer.upsert({"id": k, "name": f"n{k}"})
    await writer.flush()
    first = await lookup_all(table, range(30))
    uids = [first[k]["uid"] for k in range(30)]
    assert None not in uids
    assert len(set(uids)) == 30, uids
    assert min(uids) >= 1

    # updates (partial, as every write of this table is) keep the id
    for k in range(0, 30, 2):
        writer.upsert({"id": k, "name": f"m{k}"})
    await writer.flush()
    second = await lookup_all(table, range(30))
    for k in range(30):
        assert second[k]["uid"] == first[k]["uid"], k
        assert second[k]["name"] == (f"m{k}" if k % 2 == 0 else f"n{k}")

    # a writer that would set the id is refused by the client, as against Fluss
    with pytest.raises(Exception, match="auto increment"):
        table.new_upsert().create_writer()

    # limit scans show the stored ids
    seen = {}
    for b in range(BUCKETS):
        scanner = table.new_scan().limit(100).create_bucket_batch_scanner(fluss.TableBucket(info.table_id, b))
        for row in (await scanner.to_arrow()).to_pylist():
            seen[row["id"]] = row["uid"]
    assert seen == {k: first[k]["uid"] for k in range(30)}

    # the changelog: +I with the new id, -U/+U carrying the kept one
    records = await changelog(table, 30 + 2 * 15)
    inserts = {r.row["id"]: r.row["uid"] for r in records if r.change_type == fluss.ChangeType.Insert}
    assert inserts == {k: first[k]["uid"] for k in range(30)}
    for r in records:
        if r.change_type in (fluss.ChangeType.UpdateBefore, fluss.ChangeType.UpdateAfter):
            assert r.row["uid"] == first[r.row["id"]]["uid"]
    await admin.drop_table(path)


async def test_ids_survive_sigkill_and_are_not_reused(own_server):
    conn = await connect(own_server.bootstrap)
    path = await create(conn.get_admin(), "compat_autoinc_kill")
    table = await conn.get_table(path)
    writer = writer_of(table)
    for k in range(20):
        writer.upsert({"id": k, "name": f"n{k}"})
    await writer.flush()
    before = {k: r["uid"] for k, r in (await lookup_all(table, range(20))).items()}
    own_server.kill()
    conn.close()

    own_server.start()
    conn = await connect(own_server.bootstrap)
    table = await conn.get_table(path)
    after = {k: r["uid"] for k, r in (await lookup_all(table, range(20))).items()}
    assert after == before

    writer = writer_of(table)
    for k in range(20, 40):
        writer.upsert({"id": k, "name": f"n{k}"})
    for k in range(0, 20, 3):
        writer.upsert({"id": k, "name": f"again{k}"})
    await writer.flush()
    rows = await lookup_all(table, range(40))
    uids = {k: r["uid"] for k, r in rows.items()}
    for k in range(20):
        assert uids[k] == before[k], k
    new = [uids[k] for k in range(20, 40)]
    assert len(set(uids.values())) == 40, uids
    # the ranges the first server process held are never handed out again
    assert min(new) > max(before.values()), (sorted(before.values()), sorted(new))
    conn.close()
