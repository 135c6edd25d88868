"""SIGKILL during appends: after a restart every acknowledged row is there exactly once."""

import asyncio
import time

import pyarrow as pa

import fluss

from conftest import connect

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("payload", pa.string())])


async def read_all(conn, path, buckets):
    table = await conn.get_table(path)
    admin = conn.get_admin()
    latest = await admin.list_offsets(path, bucket_ids=list(range(buckets)), offset_spec=fluss.OffsetSpec.latest())
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    ids = []
    deadline = time.monotonic() + 30
    while len(ids) < sum(latest.values()) and time.monotonic() < deadline:
        t = await scanner.poll_arrow(500)
        ids.extend(t.column("id").to_pylist())
    return ids, latest


async def test_sigkill_loses_no_acknowledged_row(own_server):
    conn = await connect(own_server.bootstrap)
    admin = conn.get_admin()
    path = fluss.TablePath("fluss", "compat_log_kill")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=3, bucket_keys=["id"]))
    table = await conn.get_table(path)
    writer = table.new_append().create_writer()

    acked = []
    pending = []
    next_id = 0
    # Acknowledged rows: each waited for individually.
    for _ in range(60):
        h = writer.append({"id": next_id, "payload": "x" * 100})
        await h.wait()
        acked.append(next_id)
        next_id += 1
    # Rows in flight when the server dies: may or may not survive, never twice.
    for _ in range(500):
        pending.append(writer.append({"id": next_id, "payload": "y" * 100}))
        next_id += 1
    own_server.kill()
    conn.close()

    own_server.start()
    conn = await connect(own_server.bootstrap)
    ids, latest = await read_all(conn, path, 3)
    assert len(ids) == sum(latest.values())
    assert len(ids) == len(set(ids)), "a row appears twice"
    missing = set(acked) - set(ids)
    assert not missing, f"acknowledged rows lost: {sorted(missing)[:10]}"
    assert set(ids) <= set(range(next_id))

    # the log keeps working after recovery
    writer = (await conn.get_table(path)).new_append().create_writer()
    await writer.append({"id": 10_000, "payload": "after"}).wait()
    ids2, _ = await read_all(conn, path, 3)
    assert 10_000 in ids2 and len(ids2) == len(ids) + 1
    conn.close()
