"""Rows written by the Go client (package fluss) are read correctly by pyfluss and the other
way round, for log and primary-key tables, including lookups of keys the other client wrote.

The Go side is tests/compat/crossclient, built once per session.

Keys are kept below 128: for keys whose encoding ends in a byte >= 0x80 the Rust client
(pyfluss) and the Java client pick different buckets (docs/encodings.md §10.3); the Go client follows
Java, so such keys written by one of pyfluss and Go are not found by the other's lookups.
"""

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

import fluss

REPO = Path(__file__).resolve().parents[2]
DB = "compat_cross_client"


@pytest.fixture(scope="session")
def crossclient():
    out = Path(tempfile.gettempdir()) / f"crossclient-{os.getpid()}"
    subprocess.run(["go", "build", "-o", str(out), "./tests/compat/crossclient"], cwd=REPO, check=True)
    return str(out)


def go(crossclient, server, *args):
    res = subprocess.run(
        [crossclient, "-bootstrap", server.bootstrap, *[str(a) for a in args]],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


async def fresh_table(admin, name, schema, buckets):
    await admin.create_database(DB, ignore_if_exists=True)
    path = fluss.TablePath(DB, name)
    await admin.drop_table(path, ignore_if_not_exists=True)
    await admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=buckets))
    return path


async def py_scan(connection, path, buckets, want):
    table = await connection.get_table(path)
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(buckets)})
    rows = []
    for _ in range(30):
        if len(rows) >= want:
            break
        for rec in await scanner.poll(2000):
            rows.append((rec.change_type.short_string(), rec.row))
    return rows


async def test_log_table_go_and_python(server, connection, admin, crossclient):
    schema = fluss.Schema(pa.schema([
        pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("score", pa.float64()),
    ]))
    path = await fresh_table(admin, "log_rows", schema, 3)

    table = await connection.get_table(path)
    writer = table.new_append().create_writer()
    for i in range(10):
        writer.append({"id": i, "name": f"py-{i}", "score": i + 0.25})
    await writer.flush()

    assert go(crossclient, server, "append", DB, "log_rows", 10, 10) == "ok"

    # Go reads what both wrote.
    rows = go(crossclient, server, "scan", DB, "log_rows", 20)
    assert len(rows) == 20
    by_id = {r["id"]: r for r in rows}
    assert sorted(by_id) == list(range(20))
    for i in range(10):
        assert by_id[i]["name"] == f"py-{i}" and by_id[i]["score"] == i + 0.25
        assert by_id[i]["change_type"] == "+A"
    for i in range(10, 20):
        assert by_id[i]["name"] == f"go-{i}" and by_id[i]["score"] == i + 0.5

    # pyfluss reads what both wrote.
    got = await py_scan(connection, path, 3, 20)
    assert len(got) == 20
    py_by_id = {row["id"]: row for _, row in got}
    assert sorted(py_by_id) == list(range(20))
    for i in range(10, 20):
        assert py_by_id[i]["name"] == f"go-{i}" and py_by_id[i]["score"] == i + 0.5
    assert {ct for ct, _ in got} == {"+A"}


async def test_primary_key_table_go_and_python(server, connection, admin, crossclient):
    schema = fluss.Schema(pa.schema([
        pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("age", pa.int64()),
    ]), primary_keys=["id"])
    path = await fresh_table(admin, "pk_rows", schema, 3)
    table = await connection.get_table(path)

    writer = table.new_upsert().create_writer()
    for i in range(1, 11):
        writer.upsert({"id": i, "name": f"py-{i}", "age": i})
    await writer.flush()

    # Go upserts new keys and overwrites some pyfluss keys, then deletes one pyfluss key.
    assert go(crossclient, server, "upsert", DB, "pk_rows", 5, 6, 20, 21, 22, 100) == "ok"
    assert go(crossclient, server, "delete", DB, "pk_rows", 1) == "ok"

    # Go looks up keys written by pyfluss (and by itself).
    found = go(crossclient, server, "lookup", DB, "pk_rows", 1, 2, 5, 10, 20, 100, 99)
    assert found["1"] is None and found["99"] is None
    assert found["2"] == {"id": 2, "name": "py-2", "age": 2}
    assert found["10"] == {"id": 10, "name": "py-10", "age": 10}
    assert found["5"] == {"id": 5, "name": "go-5", "age": 50}
    assert found["20"] == {"id": 20, "name": "go-20", "age": 200}
    assert found["100"] == {"id": 100, "name": "go-100", "age": 1000}

    # pyfluss looks up keys written by Go.
    lookuper = table.new_lookup().create_lookuper()
    for i in (20, 21, 22, 100, 6):
        row = await lookuper.lookup({"id": i})
        assert row is not None, i
        assert row["name"] == f"go-{i}" and row["age"] == i * 10
    assert await lookuper.lookup({"id": 1}) is None

    # pyfluss deletes a Go key and updates another; Go sees it.
    writer.delete({"id": 21})
    writer.upsert({"id": 22, "name": "py-22", "age": 7})
    await writer.flush()
    found = go(crossclient, server, "lookup", DB, "pk_rows", 21, 22)
    assert found == {"21": None, "22": {"id": 22, "name": "py-22", "age": 7}}

    # Both read the same changelog.

    go_rows = go(crossclient, server, "scan", DB, "pk_rows", 100)
    py_rows = await py_scan(connection, path, 3, len(go_rows))
    assert len(py_rows) == len(go_rows)
    assert sorted((r["change_type"], r["id"], r["name"], r["age"]) for r in go_rows) == \
        sorted((ct, row["id"], row["name"], row["age"]) for ct, row in py_rows)
    counts = {}
    for r in go_rows:
        counts[r["change_type"]] = counts.get(r["change_type"], 0) + 1
    assert counts == {"+I": 14, "-U": 3, "+U": 3, "-D": 2}, counts

