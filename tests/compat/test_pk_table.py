"""Primary-key tables end to end through pyfluss: upsert/delete/lookup, partial updates,
the changelog in FULL and WAL image, and limit scans (the primary-key-tables seed)."""

import asyncio
import time

import pyarrow as pa

import fluss


def users_schema():
    return fluss.Schema(
        pa.schema([
            pa.field("id", pa.int32()),
            pa.field("name", pa.string()),
            pa.field("age", pa.int64()),
        ]),
        primary_keys=["id"],
    )


async def fresh_table(admin, name, buckets, properties=None):
    path = fluss.TablePath("fluss", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    kwargs = {"bucket_count": buckets}
    if properties:
        kwargs["properties"] = properties
    await admin.create_table(path, fluss.TableDescriptor(users_schema(), **kwargs), ignore_if_exists=False)
    return path


async def read_changelog(table, buckets, expected, timeout_s=15):
    """All change records from the earliest offset of every bucket, as
    (id, offset, change type, name, age), ordered per key by offset."""
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < expected and time.monotonic() < deadline:
        for r in await scanner.poll(1000):
            out.append((r.row["id"], r.offset, r.change_type, r.row["name"], r.row["age"]))
    out.sort()
    return out


async def test_seed_walkthrough(connection, admin):
    path = await fresh_table(admin, "compat_pk_seed", buckets=3)
    table = await connection.get_table(path)
    writer = table.new_upsert().create_writer()
    writer.upsert({"id": 1, "name": "Alice", "age": 25})
    writer.upsert({"id": 2, "name": "Bob", "age": 30})
    await writer.flush()
    await writer.upsert({"id": 3, "name": "Charlie", "age": 35}).wait()
    await writer.delete({"id": 2}).wait()
    # a delete of a key that never existed is accepted and changes nothing
    await writer.delete({"id": 99}).wait()

    lookuper = table.new_lookup().create_lookuper()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "Alice", "age": 25}
    assert await lookuper.lookup({"id": 2}) is None
    assert await lookuper.lookup({"id": 99}) is None

    by_name = table.new_upsert().partial_update_by_name(["id", "age"]).create_writer()
    by_name.upsert({"id": 1, "age": 27})
    await by_name.flush()
    assert await lookuper.lookup({"id": 1}) == {"id": 1, "name": "Alice", "age": 27}

    by_index = table.new_upsert().partial_update_by_index([0, 1]).create_writer()
    await by_index.upsert({"id": 3, "name": "Chuck"}).wait()
    assert await lookuper.lookup({"id": 3}) == {"id": 3, "name": "Chuck", "age": 35}

    log = await read_changelog(table, 3, expected=9)
    per_key = {}
    for key, _, ct, name, age in log:
        per_key.setdefault(key, []).append((ct, name, age))
    CT = fluss.ChangeType
    assert per_key[1] == [
        (CT.Insert, "Alice", 25),
        (CT.UpdateBefore, "Alice", 25), (CT.UpdateAfter, "Alice", 27),
    ]
    assert per_key[2] == [(CT.Insert, "Bob", 30), (CT.Delete, "Bob", 30)]
    assert per_key[3] == [
        (CT.Insert, "Charlie", 35),
        (CT.UpdateBefore, "Charlie", 35), (CT.UpdateAfter, "Chuck", 35),
    ]
    assert 99 not in per_key

    # limit scan: current rows per bucket, deletes applied, no duplicates
    table_id = table.get_table_info().table_id
    seen = {}
    for b in range(3):
        scanner = table.new_scan().limit(100).create_bucket_batch_scanner(fluss.TableBucket(table_id, b))
        arrow = await scanner.to_arrow()
        for row in arrow.to_pylist():
            assert row["id"] not in seen
            seen[row["id"]] = (row["name"], row["age"])
    assert seen == {1: ("Alice", 27), 3: ("Chuck", 35)}
    await admin.drop_table(path)


async def test_wal_image_emits_only_update_after(connection, admin):
    path = await fresh_table(admin, "compat_pk_wal", buckets=1, properties={"table.changelog.image": "WAL"})
    table = await connection.get_table(path)
    writer = table.new_upsert().create_writer()
    await writer.upsert({"id": 1, "name": "a", "age": 1}).wait()
    await writer.upsert({"id": 1, "name": "b", "age": 2}).wait()
    await writer.upsert({"id": 1, "name": "b", "age": 2}).wait()
    await writer.delete({"id": 1}).wait()
    log = await read_changelog(table, 1, expected=4)
    assert [(o, ct, n) for _, o, ct, n, _ in log] == [
        (0, fluss.ChangeType.UpdateAfter, "a"),
        (1, fluss.ChangeType.UpdateAfter, "b"),
        (2, fluss.ChangeType.UpdateAfter, "b"),
        (3, fluss.ChangeType.Delete, "b"),
    ]
    assert await table.new_lookup().create_lookuper().lookup({"id": 1}) is None
    await admin.drop_table(path)


async def test_full_image_reupsert_and_batch_visibility(connection, admin):
    """Records of one flushed batch see each other; an identical re-upsert still emits -U/+U;
    a batch that changes nothing still takes an offset."""
    path = await fresh_table(admin, "compat_pk_full", buckets=1)
    table = await connection.get_table(path)
    writer = table.new_upsert().create_writer()
    writer.upsert({"id": 1, "name": "a", "age": 1})
    writer.upsert({"id": 1, "name": "b", "age": 2})
    writer.delete({"id": 1})
    writer.upsert({"id": 1, "name": "c", "age": 3})
    await writer.flush()
    await writer.upsert({"id": 1, "name": "c", "age": 3}).wait()
    await writer.delete({"id": 42}).wait()
    await writer.upsert({"id": 2, "name": "z", "age": 9}).wait()
    log = await read_changelog(table, 1, expected=8)
    CT = fluss.ChangeType
    assert [(k, ct, n) for k, _, ct, n, _ in log] == [
        (1, CT.Insert, "a"), (1, CT.UpdateBefore, "a"), (1, CT.UpdateAfter, "b"),
        (1, CT.Delete, "b"), (1, CT.Insert, "c"),
        (1, CT.UpdateBefore, "c"), (1, CT.UpdateAfter, "c"),
        (2, CT.Insert, "z"),
    ]
    offsets = {k: o for k, o, *_ in log}
    # the empty batch of the delete of 42 sits between the re-upsert and key 2
    assert offsets[2] == 8
    bucket_end = await connection.get_admin().list_offsets(path, [0], fluss.OffsetSpec.latest())
    assert bucket_end[0] == 9
    await admin.drop_table(path)
