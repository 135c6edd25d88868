"""The pyfluss half of the side-by-side benchmark (`make bench-fluss`).

Runs three workloads through the official Python client against one server and prints one
JSON object on its last stdout line, mapping workload names to rows/s:

* append: one AppendWriter.write_arrow of --rows rows of 4 columns (id BIGINT, name STRING,
  amount BIGINT, ts BIGINT) to a log table of --buckets buckets, then flush;
* scan:   a record-batch log scanner over every bucket from the earliest offset, poll_arrow
  until all --rows rows are back;
* upsert: UpsertWriter.upsert of --rows new keys (one call per row, as applications write
  primary-key tables from Python), then flush.

Data is built before each clock starts. The script creates its own database and tables and
drops them at the end. Progress goes to stderr.
"""

import argparse
import asyncio
import json
import os
import sys
import time

import pyarrow as pa

import fluss

SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("name", pa.string()),
    pa.field("amount", pa.int64()),
    pa.field("ts", pa.int64()),
])


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def make_table(rows: int) -> pa.Table:
    ids = list(range(rows))
    return pa.Table.from_pydict({
        "id": ids,
        "name": [f"name-{i:011d}" for i in ids],  # 16 bytes
        "amount": [(i * 7919) % 1_000_000 for i in ids],
        "ts": [1_700_000_000_000 + i for i in ids],
    }, schema=SCHEMA)


async def retry(what, fn, timeout=60.0):
    """Calls fn until it stops raising (a new bucket may not be served yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await fn()
        except Exception as e:  # noqa: BLE001 - any failure before the deadline is retried
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not ready after {timeout}s") from e
            await asyncio.sleep(0.05)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--database", default="strom_pybench")
    ap.add_argument("--scan-timeout", type=float, default=300.0)
    args = ap.parse_args()

    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": args.bootstrap}))
    admin = conn.get_admin()
    await admin.create_database(args.database, ignore_if_exists=True)
    log_path = fluss.TablePath(args.database, "py_log")
    kv_path = fluss.TablePath(args.database, "py_kv")
    await admin.create_table(log_path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=args.buckets), ignore_if_exists=False)
    await admin.create_table(kv_path, fluss.TableDescriptor(fluss.Schema(SCHEMA, primary_keys=["id"]), bucket_count=args.buckets), ignore_if_exists=False)
    out = {}
    try:
        data = make_table(args.rows)

        log_table = await conn.get_table(log_path)
        writer = log_table.new_append().create_writer()
        t0 = time.perf_counter()
        writer.write_arrow(data)
        await writer.flush()
        out["append"] = args.rows / (time.perf_counter() - t0)
        log(f"append {args.rows} rows: {out['append']:.0f} rows/s")

        scanner = await log_table.new_scan().create_record_batch_log_scanner()
        t0 = time.perf_counter()
        scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(args.buckets)})
        got = 0
        while got < args.rows:
            if time.perf_counter() - t0 > args.scan_timeout:
                raise RuntimeError(f"scan: {got} of {args.rows} rows after {args.scan_timeout}s")
            got += (await scanner.poll_arrow(500)).num_rows
        out["scan"] = got / (time.perf_counter() - t0)
        log(f"scan {got} rows: {out['scan']:.0f} rows/s")

        kv_table = await conn.get_table(kv_path)
        lookuper = kv_table.new_lookup().create_lookuper()
        await retry("primary-key table", lambda: lookuper.lookup({"id": -1}))
        rows = list(zip(*(data.column(i).to_pylist() for i in range(len(SCHEMA)))))
        upserter = kv_table.new_upsert().create_writer()
        t0 = time.perf_counter()
        for r in rows:
            upserter.upsert(r)
        await upserter.flush()
        out["upsert"] = args.rows / (time.perf_counter() - t0)
        log(f"upsert {args.rows} rows: {out['upsert']:.0f} rows/s")
        last = await lookuper.lookup({"id": args.rows - 1})
        if last is None or last["ts"] != rows[-1][3]:
            raise RuntimeError(f"upsert: last key reads back as {last}")
        # The result goes out before the cleanup, so that a failure there cannot lose it.
        print(json.dumps(out), flush=True)
    finally:
        for p in (log_path, kv_path):
            await admin.drop_table(p, ignore_if_not_exists=True)
        await admin.drop_database(args.database, ignore_if_not_exists=True, cascade=True)
        conn.close()
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    # pyfluss 1.0 sometimes aborts while the interpreter tears down its native runtime after
    # everything is done; leave without that teardown.
    os._exit(code)
