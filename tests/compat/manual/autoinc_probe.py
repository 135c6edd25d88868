"""Auto-increment probe, run by hand against any Fluss-protocol server (Apache Fluss 0.9.1,
`bin/strom serve`) to compare what each assigns: the ids on insert, where they start, the
range each bucket draws from, whether an update (partial, as every write to such a table is)
keeps the id, and what a key deleted and written again gets. It prints one JSON document;
run it against both servers and compare (docs/primary-keys.md, "Auto-increment columns").

    .venv/bin/python tests/compat/manual/autoinc_probe.py HOST:PORT [TABLE-PREFIX]

It creates two tables in database `fluss` (one with the default
table.auto-increment.cache-size, one with cache-size 4), 3 buckets each, and drops them.

Across a restart, in two steps around a kill -9 and restart of the tablet server:

    .venv/bin/python tests/compat/manual/autoinc_probe.py HOST:PORT --before-restart
    .venv/bin/python tests/compat/manual/autoinc_probe.py HOST:PORT --after-restart

The first creates `autoinc_probe_restart` (1 bucket, cache-size 4) and inserts keys 0..5, the
second inserts keys 6..11, prints every key's id and drops the table."""

import asyncio
import json
import sys

import pyarrow as pa

import fluss

BUCKETS = 3
KEYS = 30


async def probe(conn, admin, name, props):
    path = fluss.TablePath("fluss", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    schema = fluss.Schema(
        pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("uid", pa.int64())]),
        primary_keys=["id"], auto_increment_column="uid")
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=BUCKETS, properties=props))
    table = await conn.get_table(path)
    info = table.get_table_info()
    writer = table.new_upsert().partial_update_by_name(["id", "name"]).create_writer()
    lookuper = table.new_lookup().create_lookuper()

    async def lookup(keys):
        rows = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in keys))
        return {k: (r["uid"] if r is not None else None) for k, r in zip(keys, rows)}

    # inserts one at a time, flushed after each, so the order of assignment is the key order
    for k in range(KEYS):
        writer.upsert({"id": k, "name": f"n{k}"})
        await writer.flush()
    first = await lookup(range(KEYS))

    per_bucket = {}
    for b in range(BUCKETS):
        scanner = table.new_scan().limit(1000).create_bucket_batch_scanner(fluss.TableBucket(info.table_id, b))
        rows = (await scanner.to_arrow()).to_pylist()
        per_bucket[b] = sorted(r["uid"] for r in rows)

    for k in range(0, KEYS, 2):
        writer.upsert({"id": k, "name": f"m{k}"})
    await writer.flush()
    second = await lookup(range(KEYS))

    # a delete through this (partial) writer: Fluss nulls the target columns, so the row may stay
    await writer.delete({"id": 1}).wait()
    row = await lookuper.lookup({"id": 1})
    after_delete = None if row is None else {"name": row["name"], "uid": row["uid"]}
    writer.upsert({"id": 1, "name": "again"})
    await writer.flush()
    reinserted = (await lookup([1]))[1]

    out = {
        "table": name,
        "properties": props,
        "auto_increment_columns": info.get_schema().get_auto_increment_columns(),
        "ids_in_key_order": [first[k] for k in range(KEYS)],
        "none_ids": sum(1 for v in first.values() if v is None),
        "unique": len(set(first.values())) == KEYS,
        "min": min((v for v in first.values() if v is not None), default=None),
        "per_bucket": per_bucket,
        "kept_on_update": all(second[k] == first[k] for k in range(KEYS)),
        "key_1_before_delete": first[1],
        "key_1_after_delete": after_delete,
        "key_1_after_delete_and_insert": reinserted,
    }
    await admin.drop_table(path)
    return out


async def restart_step(conn, admin, after):
    path = fluss.TablePath("fluss", "autoinc_probe_restart")
    if not after:
        await admin.drop_table(path, ignore_if_not_exists=True)
        schema = fluss.Schema(
            pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("uid", pa.int64())]),
            primary_keys=["id"], auto_increment_column="uid")
        await admin.create_table(path, fluss.TableDescriptor(
            schema, bucket_count=1, properties={"table.auto-increment.cache-size": "4"}))
    table = await conn.get_table(path)
    writer = table.new_upsert().partial_update_by_name(["id", "name"]).create_writer()
    for k in range(6, 12) if after else range(6):
        writer.upsert({"id": k, "name": f"n{k}"})
        await writer.flush()
    lookuper = table.new_lookup().create_lookuper()
    keys = range(12) if after else range(6)
    rows = await asyncio.gather(*(lookuper.lookup({"id": k}) for k in keys))
    out = {"step": "after-restart" if after else "before-restart",
           "ids_in_key_order": [None if r is None else r["uid"] for r in rows]}
    if after:
        await admin.drop_table(path)
    return out


async def main():
    bootstrap = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] in ("--before-restart", "--after-restart"):
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
        print(json.dumps(await restart_step(conn, conn.get_admin(), sys.argv[2] == "--after-restart")))
        conn.close()
        return
    prefix = sys.argv[2] if len(sys.argv) > 2 else "autoinc_probe"
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    admin = conn.get_admin()
    results = [
        await probe(conn, admin, prefix + "_default", {}),
        await probe(conn, admin, prefix + "_cache4", {"table.auto-increment.cache-size": "4"}),
    ]
    print(json.dumps(results, indent=1))
    conn.close()


if __name__ == "__main__":
    asyncio.run(main())
