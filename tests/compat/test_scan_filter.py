"""Scan filters (Fluss 1.0 FETCH_LOG filter_predicate) through pyfluss: the server prunes log
batches whose statistics prove no row matches, for batches of any writer, also across an
ALTER TABLE ADD COLUMN. pyfluss does not filter rows itself, so each test filters the rows
it received and checks that none that matches is missing."""

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pytest

import fluss
from fluss import col

REPO = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("amount", pa.int64())])
BATCHES, PER_BATCH = 20, 1000


@pytest.fixture(scope="module")
def crossclient():
    out = Path(tempfile.gettempdir()) / f"crossclient-filter-{os.getpid()}"
    subprocess.run(["go", "build", "-o", str(out), "./tests/compat/crossclient"], cwd=REPO, check=True)
    return str(out)


async def make_table(admin, name):
    path = fluss.TablePath("fluss", name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(SCHEMA), bucket_count=1))
    return path


async def write_batches(table, first, batches, schema=SCHEMA, extra=None):
    """One write and flush per batch of PER_BATCH rows, ids counting from first."""
    w = table.new_append().create_writer()
    for b in range(batches):
        ids = list(range(first + b * PER_BATCH, first + (b + 1) * PER_BATCH))
        cols = {"id": ids, "name": [f"n{i}" for i in ids], "amount": [i * 10 for i in ids]}
        if extra is not None:
            cols["extra"] = [extra(i) for i in ids]
        w.write_arrow(pa.Table.from_pydict(cols, schema=schema))
        await w.flush()


async def scan(table, predicate, end):
    """Every row a filtered scan of bucket 0 returns until its latest offset is passed
    (polled until no row arrives for a while after the last expected offset)."""
    scanner = await table.new_scan().filter(predicate).create_record_batch_log_scanner()
    scanner.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
    rows, quiet = [], 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and quiet < 4:
        got = await scanner.poll_arrow(300)
        if got.num_rows:
            rows.extend(got.to_pylist())
            quiet = 0
        else:
            quiet += 1
    return rows


async def test_filter_prunes_batches_that_cannot_match(connection, admin):
    path = await make_table(admin, "compat_filter_prune")
    table = await connection.get_table(path)
    await write_batches(table, 0, BATCHES)
    stored = BATCHES * PER_BATCH

    rows = await scan(table, col("id") >= 19500, stored)
    matching = sorted(r["id"] for r in rows if r["id"] >= 19500)
    assert matching == list(range(19500, 20000)), "a matching row is missing"
    assert len(rows) < stored
    assert len(rows) == PER_BATCH  # only the last batch can match

    # AND / OR / IN / string functions: each matching row arrives, pruned batches do not.
    pred = (col("id").is_in([5, 12345]) | col("name").starts_with("n777")) & col("amount").is_not_null()
    rows = await scan(table, pred, stored)
    want = {5, 12345} | {i for i in range(stored) if str(i).startswith("777")}
    got = {r["id"] for r in rows}
    assert want <= got
    assert len(rows) < stored

    # Nothing matches: nothing is sent, and the scanner moves past the pruned range.
    assert await scan(table, col("id") < 0, stored) == []


async def test_filter_across_add_column(connection, admin, server, crossclient):
    path = await make_table(admin, "compat_filter_evolve")
    table = await connection.get_table(path)
    await write_batches(table, 0, 5)
    res = subprocess.run([crossclient, "-bootstrap", server.bootstrap, "addcolumn", "fluss", "compat_filter_evolve"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    table = await connection.get_table(path)
    evolved = pa.schema(list(SCHEMA) + [pa.field("extra", pa.int64())])
    await write_batches(table, 5 * PER_BATCH, 5, schema=evolved, extra=lambda i: i if i >= 9000 else None)

    # Batches written before the column existed are all NULL in it, so they cannot match.
    rows = await scan(table, col("extra") >= 9500, 10 * PER_BATCH)
    assert sorted(r["id"] for r in rows if (r.get("extra") or -1) >= 9500) == list(range(9500, 10000))
    assert len(rows) == PER_BATCH

    # A filter on an old column, compiled against the new schema, prunes old batches too.
    rows = await scan(table, col("id") < 1000, 10 * PER_BATCH)
    assert sorted(r["id"] for r in rows if r["id"] < 1000) == list(range(1000))
    assert len(rows) == PER_BATCH
