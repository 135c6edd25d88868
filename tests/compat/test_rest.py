"""The REST gateway (docs/rest.md) against pyfluss: a table pyfluss wrote is read over REST,
and rows written over REST are read by pyfluss. The gateway is a Fluss client of the node's
own listener, so both sides must see one table."""

import asyncio
import json
import time
import urllib.error
import urllib.request

import pyarrow as pa
import pytest

import fluss
from conftest import connect
from strom_server import StromServer, free_port


@pytest.fixture(scope="module")
def rest_server(strom_binary, tmp_path_factory):
    port = free_port()
    srv = StromServer(strom_binary, str(tmp_path_factory.mktemp("rest") / "data"), ["--http-listen", f"127.0.0.1:{port}"])
    srv.start()
    srv.api = f"http://127.0.0.1:{port}/api/v1"
    yield srv
    srv.stop()


def rest(srv, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(srv.api + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


async def test_pyfluss_table_is_read_over_rest(rest_server):
    conn = await connect(rest_server.bootstrap)
    admin = conn.get_admin()
    path = fluss.TablePath("fluss", "rest_from_pyfluss")
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string()), pa.field("score", pa.float64())])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema, primary_keys=["id"]), bucket_count=2), ignore_if_exists=False)
    table = await conn.get_table(path)
    w = table.new_upsert().create_writer()
    for i in range(1, 6):
        w.upsert({"id": i, "name": f"user{i}", "score": i * 1.5})
    await w.flush()
    conn.close()

    status, info = rest(rest_server, "GET", "/databases/fluss/tables/rest_from_pyfluss")
    assert status == 200 and info["primary_key"] == ["id"] and info["bucket_count"] == 2
    status, got = rest(rest_server, "POST", "/databases/fluss/tables/rest_from_pyfluss/lookup", {"keys": [{"id": 3}, {"id": 42}]})
    assert status == 200
    assert got["rows"] == [{"id": 3, "name": "user3", "score": 4.5}, None]
    status, got = rest(rest_server, "GET", "/databases/fluss/tables/rest_from_pyfluss/scan?limit=100")
    assert status == 200
    assert sorted(r["id"] for r in got["rows"]) == [1, 2, 3, 4, 5]


async def test_rest_rows_are_read_by_pyfluss(rest_server):
    status, _ = rest(rest_server, "POST", "/databases/fluss/tables", {
        "name": "rest_to_pyfluss_log", "columns": [{"name": "id", "type": "INT"}, {"name": "msg", "type": "STRING"}]})
    assert status == 201
    status, _ = rest(rest_server, "POST", "/databases/fluss/tables", {
        "name": "rest_to_pyfluss_pk", "columns": [{"name": "k", "type": "STRING"}, {"name": "v", "type": "BIGINT"}], "primary_key": ["k"]})
    assert status == 201
    status, got = rest(rest_server, "POST", "/databases/fluss/tables/rest_to_pyfluss_log/rows", {"rows": [{"id": 1, "msg": "one"}, {"id": 2, "msg": "two"}]})
    assert status == 200 and got["rows_written"] == 2
    status, _ = rest(rest_server, "POST", "/databases/fluss/tables/rest_to_pyfluss_pk/rows", {"rows": [{"k": "a", "v": 7}]})
    assert status == 200

    conn = await connect(rest_server.bootstrap)
    table = await conn.get_table(fluss.TablePath("fluss", "rest_to_pyfluss_log"))
    scanner = await table.new_scan().create_log_scanner()
    scanner.subscribe(bucket_id=0, start_offset=fluss.EARLIEST_OFFSET)
    records = []
    deadline = time.monotonic() + 10
    while len(records) < 2 and time.monotonic() < deadline:
        records.extend(await scanner.poll(500))
    assert [(r.row["id"], r.row["msg"]) for r in records] == [(1, "one"), (2, "two")]

    pk = await conn.get_table(fluss.TablePath("fluss", "rest_to_pyfluss_pk"))
    assert await pk.new_lookup().create_lookuper().lookup({"k": "a"}) == {"k": "a", "v": 7}
    conn.close()
