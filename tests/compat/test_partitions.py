"""Partitioned tables (manual and automatic) through pyfluss."""

import time
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest

import fluss

from conftest import connect

SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("region", pa.string()), pa.field("v", pa.int64())])


async def make_partitioned(admin, name, primary_keys=None, properties=None, keys=("region",), schema=SCHEMA):
    path = fluss.TablePath("fluss", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(schema, primary_keys=primary_keys), partition_keys=list(keys), bucket_count=2,
        properties=properties or {}))
    return path


async def test_partition_lifecycle_and_errors(admin):
    path = await make_partitioned(admin, "compat_parts_lifecycle")
    assert await admin.list_partition_infos(path) == []
    await admin.create_partition(path, {"region": "EU"})
    await admin.create_partition(path, {"region": "US"})
    await admin.create_partition(path, {"region": "US"}, ignore_if_exists=True)
    with pytest.raises(fluss.FlussError) as e:
        await admin.create_partition(path, {"region": "US"})
    assert e.value.error_code == fluss.ErrorCode.PARTITION_ALREADY_EXISTS

    infos = await admin.list_partition_infos(path)
    assert sorted(p.partition_name for p in infos) == ["EU", "US"]
    assert len({p.partition_id for p in infos}) == 2

    with pytest.raises(fluss.FlussError) as e:
        await admin.create_partition(path, {"nope": "x"})
    assert e.value.error_code == fluss.ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION
    with pytest.raises(fluss.FlussError) as e:
        await admin.create_partition(path, {"region": "bad value"})
    assert e.value.error_code == fluss.ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION

    await admin.drop_partition(path, {"region": "EU"})
    assert [p.partition_name for p in await admin.list_partition_infos(path)] == ["US"]
    with pytest.raises(fluss.FlussError) as e:
        await admin.drop_partition(path, {"region": "EU"})
    assert e.value.error_code == fluss.ErrorCode.PARTITION_NOT_EXISTS
    await admin.drop_partition(path, {"region": "EU"}, ignore_if_not_exists=True)

    plain = fluss.TablePath("fluss", "compat_parts_plain")
    await admin.drop_table(plain, ignore_if_not_exists=True)
    await admin.create_table(plain, fluss.TableDescriptor(fluss.Schema(SCHEMA)))
    with pytest.raises(fluss.FlussError) as e:
        await admin.list_partition_infos(plain)
    assert e.value.error_code == fluss.ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION
    with pytest.raises(fluss.FlussError) as e:
        await admin.create_partition(plain, {"region": "EU"})
    assert e.value.error_code == fluss.ErrorCode.TABLE_NOT_PARTITIONED_EXCEPTION


async def test_partial_spec_filter(admin):
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("dt", pa.string()), pa.field("region", pa.string())])
    path = await make_partitioned(admin, "compat_parts_multi", keys=("dt", "region"), schema=schema)
    for dt in ["2024-01-01", "2024-01-02"]:
        for region in ["EU", "US"]:
            await admin.create_partition(path, {"dt": dt, "region": region})
    names = sorted(p.partition_name for p in await admin.list_partition_infos(path))
    assert names == ["2024-01-01$EU", "2024-01-01$US", "2024-01-02$EU", "2024-01-02$US"]
    us = await admin.list_partition_infos(path, {"region": "US"})
    assert sorted(p.partition_name for p in us) == ["2024-01-01$US", "2024-01-02$US"]


async def test_writes_and_reads_are_routed_by_partition(connection, admin):
    path = await make_partitioned(admin, "compat_parts_log")
    for r in ["EU", "US"]:
        await admin.create_partition(path, {"region": r})
    table = await connection.get_table(path)
    w = table.new_append().create_writer()
    for i in range(10):
        w.append({"id": i, "region": "EU" if i % 2 else "US", "v": i})
    await w.flush()

    eu = await admin.list_partition_offsets(path, "EU", [0, 1], fluss.OffsetSpec.latest())
    us = await admin.list_partition_offsets(path, "US", [0, 1], fluss.OffsetSpec.latest())
    assert sum(eu.values()) == 5 and sum(us.values()) == 5

    infos = {p.partition_name: p.partition_id for p in await admin.list_partition_infos(path)}
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_partition_buckets({(infos["EU"], b): fluss.EARLIEST_OFFSET for b in range(2)})
    rows = []
    deadline = time.monotonic() + 10
    while len(rows) < 5 and time.monotonic() < deadline:
        rows.extend((await scanner.poll_arrow(500)).to_pylist())
    assert sorted(r["id"] for r in rows) == [1, 3, 5, 7, 9]
    assert {r["region"] for r in rows} == {"EU"}


async def test_partitioned_primary_key_table(connection, admin):
    path = await make_partitioned(admin, "compat_parts_pk", primary_keys=["id", "region"])
    await admin.create_partition(path, {"region": "EU"})
    table = await connection.get_table(path)
    w = table.new_upsert().create_writer()
    await w.upsert({"id": 1, "region": "EU", "v": 10}).wait()
    await w.upsert({"id": 1, "region": "EU", "v": 11}).wait()
    lk = table.new_lookup().create_lookuper()
    assert (await lk.lookup({"id": 1, "region": "EU"}))["v"] == 11
    assert await lk.lookup({"id": 2, "region": "EU"}) is None
    assert await lk.lookup({"id": 1, "region": "NOPE"}) is None


async def test_auto_partitioning_precreates_today_and_tomorrow(admin):
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("day", pa.string())])
    path = await make_partitioned(admin, "compat_parts_auto", keys=("day",), schema=schema, properties={
        "table.auto-partition.enabled": "true",
        "table.auto-partition.time-unit": "DAY",
        "table.auto-partition.num-precreate": "2",
        "table.auto-partition.time-zone": "UTC",
    })
    names = sorted(p.partition_name for p in await admin.list_partition_infos(path))
    now = datetime.now(timezone.utc)
    want = sorted({(now + timedelta(days=d)).strftime("%Y%m%d") for d in (0, 1)})
    # allow for a run that straddles midnight UTC
    assert names == want or len(names) == 2
    with pytest.raises(fluss.FlussError) as e:
        await admin.create_partition(path, {"day": "not-a-day"})
    assert e.value.error_code == fluss.ErrorCode.PARTITION_SPEC_INVALID_EXCEPTION


async def test_partitions_survive_restart(own_server):
    conn = await connect(own_server.bootstrap)
    admin = conn.get_admin()
    path = await make_partitioned(admin, "compat_parts_restart")
    await admin.create_partition(path, {"region": "EU"})
    table = await conn.get_table(path)
    w = table.new_append().create_writer()
    await w.append({"id": 1, "region": "EU", "v": 1}).wait()
    before = await admin.list_partition_infos(path)
    conn.close()
    own_server.restart()
    conn = await connect(own_server.bootstrap)
    admin = conn.get_admin()
    after = await admin.list_partition_infos(path)
    assert [(p.partition_id, p.partition_name) for p in after] == [(p.partition_id, p.partition_name) for p in before]
    assert sum((await admin.list_partition_offsets(path, "EU", [0, 1], fluss.OffsetSpec.latest())).values()) == 1
    conn.close()
