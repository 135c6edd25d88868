"""Append-only log tables through pyfluss: every write path, every read path, offsets, projection, types."""

import asyncio
import time
from datetime import date, datetime, timezone
from datetime import time as dtime
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest

import fluss

SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("amount", pa.int64())])


async def make_table(admin, name, schema=SCHEMA, buckets=1, **kwargs):
    path = fluss.TablePath("fluss", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema), bucket_count=buckets, **kwargs))
    return path


async def poll_records(scanner, want, timeout=10.0):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        out.extend(await scanner.poll(500))
    return out


async def poll_arrow_rows(scanner, want, timeout=10.0):
    tables = []
    n = 0
    deadline = time.monotonic() + timeout
    while n < want and time.monotonic() < deadline:
        t = await scanner.poll_arrow(500)
        if t.num_rows:
            tables.append(t)
            n += t.num_rows
    return pa.concat_tables(tables) if tables else None


async def test_every_write_path_reaches_the_log(connection, admin):
    path = await make_table(admin, "compat_log_writes")
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    w.append({"id": 1, "name": "dict", "amount": 10})
    w.append([2, "list", 20])
    w.append((3, "tuple", 30))
    w.write_arrow(pa.Table.from_pydict({"id": [4, 5], "name": ["table", "table"], "amount": [40, 50]}, schema=SCHEMA))
    w.write_arrow_batch(pa.RecordBatch.from_pydict({"id": [6], "name": ["batch"], "amount": [60]}, schema=SCHEMA))
    w.write_pandas(pd.DataFrame({"id": pd.Series([7], dtype="int32"), "name": ["pandas"], "amount": [70]}))
    handle = w.append({"id": 8, "name": "waited", "amount": 80})
    await handle.wait()
    await w.flush()

    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
    records = await poll_records(scanner, 8)
    assert [r.row["id"] for r in records] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [r.offset for r in records] == list(range(8))
    assert {r.row["name"] for r in records} == {"dict", "list", "tuple", "table", "batch", "pandas", "waited"}
    assert all(r.change_type == fluss.ChangeType.AppendOnly for r in records)
    assert all(r.change_type.short_string() == "+A" for r in records)
    assert all(r.timestamp > 0 for r in records)

    offsets = await admin.list_offsets(path, bucket_ids=[0], offset_spec=fluss.OffsetSpec.latest())
    assert offsets == {0: 8}


async def test_batch_read_paths_agree(connection, admin):
    path = await make_table(admin, "compat_log_reads", buckets=3, bucket_keys=["id"])
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    ids = list(range(100))
    w.write_arrow(pa.Table.from_pydict({"id": ids, "name": [f"n{i}" for i in ids], "amount": [i * 3 for i in ids]}, schema=SCHEMA))
    await w.flush()

    subs = {b: fluss.EARLIEST_OFFSET for b in range(3)}
    s1 = await table.new_scan().create_record_batch_log_scanner()
    s1.subscribe_buckets(subs)
    t = await s1.to_arrow()
    assert sorted(t.column("id").to_pylist()) == ids
    assert t.schema.names == ["id", "name", "amount"]

    s2 = await table.new_scan().create_record_batch_log_scanner()
    s2.subscribe_buckets(subs)
    df = await s2.to_pandas()
    assert sorted(df["id"].tolist()) == ids
    assert (df["amount"] == df["id"] * 3).all()

    s3 = await table.new_scan().create_record_batch_log_scanner()
    s3.subscribe_buckets(subs)
    got = await poll_arrow_rows(s3, 100)
    assert sorted(got.column("id").to_pylist()) == ids

    s4 = await table.new_scan().create_record_batch_log_scanner()
    s4.subscribe_buckets(subs)
    batches = []
    deadline = time.monotonic() + 10
    while sum(b.batch.num_rows for b in batches) < 100 and time.monotonic() < deadline:
        batches.extend(await s4.poll_record_batch(500))
    assert sum(b.batch.num_rows for b in batches) == 100
    for b in batches:
        assert b.last_offset - b.base_offset + 1 == b.batch.num_rows

    s5 = await table.new_scan().create_log_scanner()
    s5.subscribe_buckets(subs)
    seen = []
    async def consume():
        async for rec in s5:
            seen.append(rec.row["id"])
            if len(seen) == 100:
                break
    await asyncio.wait_for(consume(), 15)
    assert sorted(seen) == ids


async def test_scan_from_the_middle_and_new_data_while_polling(connection, admin):
    path = await make_table(admin, "compat_log_middle")
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    for i in range(10):
        w.append({"id": i, "name": "x", "amount": i})
    await w.flush()
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe(bucket_id=0, start_offset=6)
    got = await poll_records(scanner, 4)
    assert [r.row["id"] for r in got] == [6, 7, 8, 9]

    # a poll that is waiting sees rows appended meanwhile (long polling)
    async def later():
        await asyncio.sleep(0.3)
        w.append({"id": 10, "name": "late", "amount": 0})
        await w.flush()
    task = asyncio.create_task(later())
    got = await poll_records(scanner, 1)
    await task
    assert [r.row["name"] for r in got] == ["late"]


async def test_projection_by_name_and_index(connection, admin):
    path = await make_table(admin, "compat_log_projection")
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    w.write_arrow(pa.Table.from_pydict({"id": [1, 2], "name": ["a", "b"], "amount": [5, 6]}, schema=SCHEMA))
    await w.flush()

    s = await table.new_scan().project_by_name(["amount", "id"]).create_log_scanner()
    s.subscribe(bucket_id=0, start_offset=0)
    rows = [r.row for r in await poll_records(s, 2)]
    assert rows == [{"amount": 5, "id": 1}, {"amount": 6, "id": 2}]
    assert list(rows[0].keys()) == ["amount", "id"]

    s = await table.new_scan().project([1]).create_record_batch_log_scanner()
    s.subscribe(bucket_id=0, start_offset=0)
    t = await poll_arrow_rows(s, 2)
    assert t.schema.names == ["name"]
    assert t.column("name").to_pylist() == ["a", "b"]


async def test_list_offsets_earliest_latest_timestamp(connection, admin):
    path = await make_table(admin, "compat_log_offsets", buckets=2, bucket_keys=["id"])
    empty = await admin.list_offsets(path, bucket_ids=[0, 1], offset_spec=fluss.OffsetSpec.latest())
    assert empty == {0: 0, 1: 0}
    table = await connection.get_table(path)
    before = int(time.time() * 1000)
    time.sleep(0.05)
    w = table.new_append().create_writer()
    w.write_arrow(pa.Table.from_pydict({"id": list(range(20)), "name": ["x"] * 20, "amount": [0] * 20}, schema=SCHEMA))
    await w.flush()
    time.sleep(0.05)
    after = int(time.time() * 1000)

    latest = await admin.list_offsets(path, bucket_ids=[0, 1], offset_spec=fluss.OffsetSpec.latest())
    assert sum(latest.values()) == 20 and all(v > 0 for v in latest.values())
    earliest = await admin.list_offsets(path, bucket_ids=[0, 1], offset_spec=fluss.OffsetSpec.earliest())
    assert earliest == {0: 0, 1: 0}
    assert await admin.list_offsets(path, bucket_ids=[0, 1], offset_spec=fluss.OffsetSpec.timestamp(before)) == {0: 0, 1: 0}
    assert await admin.list_offsets(path, bucket_ids=[0, 1], offset_spec=fluss.OffsetSpec.timestamp(after)) == latest
    with pytest.raises(fluss.FlussError) as e:
        await admin.list_offsets(path, bucket_ids=[0], offset_spec=fluss.OffsetSpec.timestamp(after + 3_600_000))
    assert e.value.error_code == fluss.ErrorCode.INVALID_TIMESTAMP_EXCEPTION


ALL_TYPES = pa.schema([
    pa.field("b", pa.bool_()),
    pa.field("i8", pa.int8()),
    pa.field("i16", pa.int16()),
    pa.field("i32", pa.int32()),
    pa.field("i64", pa.int64()),
    pa.field("f32", pa.float32()),
    pa.field("f64", pa.float64()),
    pa.field("s", pa.string()),
    pa.field("bin", pa.binary()),
    pa.field("fixed", pa.binary(3)),
    pa.field("dec", pa.decimal128(10, 2)),
    pa.field("big_dec", pa.decimal128(30, 5)),
    pa.field("d", pa.date32()),
    pa.field("t", pa.time32("ms")),
    pa.field("ts", pa.timestamp("us")),
    pa.field("ts_ltz", pa.timestamp("us", tz="UTC")),
    pa.field("arr", pa.list_(pa.int32())),
    pa.field("m", pa.map_(pa.string(), pa.int64())),
    pa.field("r", pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])),
])


async def test_every_data_type_round_trips(connection, admin):
    path = await make_table(admin, "compat_log_types", schema=ALL_TYPES)
    table = await connection.get_table(path)
    row = {
        "b": True, "i8": -8, "i16": 1600, "i32": -320000, "i64": 2**40, "f32": 1.5, "f64": -2.25,
        "s": "héllo", "bin": b"\x00\xff", "fixed": b"abc", "dec": Decimal("123.45"),
        "big_dec": Decimal("1234567890123456789012.34567"), "d": date(2024, 2, 29),
        "t": dtime(13, 14, 15, 16000), "ts": datetime(2024, 1, 2, 3, 4, 5, 678901),
        "ts_ltz": datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc),
        "arr": [1, None, 3], "m": [("k", 1)], "r": {"x": 7, "tags": ["a", "b"]},
    }
    nulls = {k: None for k in row}
    w = table.new_append().create_writer()
    w.write_arrow(pa.Table.from_pylist([row, nulls], schema=ALL_TYPES))
    await w.flush()
    s = await table.new_scan().create_record_batch_log_scanner()
    s.subscribe(bucket_id=0, start_offset=0)
    got = (await poll_arrow_rows(s, 2)).to_pylist()
    assert got[1] == nulls
    got0 = got[0]
    for k, v in row.items():
        if k == "m":
            assert got0[k] == [("k", 1)]
        elif k == "f32":
            assert got0[k] == pytest.approx(1.5)
        else:
            assert got0[k] == v, k

    # projection of nested columns only
    s = await table.new_scan().project_by_name(["r", "arr"]).create_record_batch_log_scanner()
    s.subscribe(bucket_id=0, start_offset=0)
    got = (await poll_arrow_rows(s, 2)).to_pylist()
    assert got[0] == {"r": {"x": 7, "tags": ["a", "b"]}, "arr": [1, None, 3]}


@pytest.mark.parametrize("compression", ["NONE", "LZ4_FRAME", "ZSTD"])
async def test_compression_codecs(connection, admin, compression):
    path = await make_table(admin, f"compat_log_codec_{compression.lower()}", properties={"table.log.arrow.compression.type": compression})
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    w.write_arrow(pa.Table.from_pydict({"id": list(range(1000)), "name": ["same text"] * 1000, "amount": list(range(1000))}, schema=SCHEMA))
    await w.flush()
    s = await table.new_scan().project_by_name(["amount"]).create_record_batch_log_scanner()
    s.subscribe(bucket_id=0, start_offset=0)
    t = await poll_arrow_rows(s, 1000)
    assert t.column("amount").to_pylist() == list(range(1000))


async def test_limit_scan_returns_the_last_rows(connection, admin):
    path = await make_table(admin, "compat_log_limit")
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    for chunk in range(3):
        w.write_arrow(pa.Table.from_pydict({"id": list(range(chunk * 10, chunk * 10 + 10)), "name": ["x"] * 10, "amount": [0] * 10}, schema=SCHEMA))
    await w.flush()
    bucket = fluss.TableBucket(table.get_table_info().table_id, 0)
    t = await table.new_scan().limit(5).create_bucket_batch_scanner(bucket).to_arrow()
    assert t.column("id").to_pylist() == [25, 26, 27, 28, 29]
