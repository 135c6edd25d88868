"""Remote log tiering (docs/tiered-storage.md): with remote.data.dir set, closed segments leave
the tablet's directory once their copy is committed, and pyfluss reads them from remote
storage (the remote_log_fetch_info of FETCH_LOG) — every row exactly once, also after kill -9."""

import asyncio
import json
import os
import time
from pathlib import Path

import pyarrow as pa

import fluss

from conftest import connect
from strom_server import StromServer

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("payload", pa.string())])
BUCKETS = 2
ROWS = 40_000  # about 8 MB of payload: several 1 MB segments per bucket


def tiering_server(binary, root: Path) -> StromServer:
    return StromServer(binary, str(root / "data"), [
        "--set", f"remote.data.dir={root / 'remote'}",
        "--set", "log.segment.file-size=1mb",
        "--set", "remote.log.task-interval-duration=1s",
    ])


def local_segments(srv: StromServer, table_id: int) -> dict:
    base = Path(srv.data_dir) / "tablet" / f"table-{table_id}"
    return {b: len(list((base / f"bucket-{b}").glob("*.log"))) for b in range(BUCKETS)}


async def wait_tiered(srv, table_id, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        segs = local_segments(srv, table_id)
        if all(n == 1 for n in segs.values()):
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"local segments still there after {timeout}s: {segs}\n{srv.log_text()[-3000:]}")


async def create_tiered_table(admin, name):
    """A log table that keeps one local segment per bucket; returns its path and table id."""
    path = fluss.TablePath("fluss", name)
    await admin.create_table(path, fluss.TableDescriptor(
        fluss.Schema(SCHEMA), bucket_count=BUCKETS, bucket_keys=["id"],
        properties={"table.log.tiered.local-segments": "1"}))
    return path, (await admin.get_table_info(path)).table_id


async def append_ids(conn, path, start, count, step=2000):
    """Appends rows with ids start … start+count-1 and ~100 bytes of payload each, then flushes."""
    writer = (await conn.get_table(path)).new_append().create_writer()
    for first in range(start, start + count, step):
        writer.write_arrow_batch(pa.RecordBatch.from_pydict(
            {"id": list(range(first, first + step)), "payload": [os.urandom(100).hex() for _ in range(step)]},
            schema=SCHEMA))
    await writer.flush()


async def read_all(conn, path, total, timeout=120):
    table = await conn.get_table(path)
    scanner = await table.new_scan().create_record_batch_log_scanner()
    scanner.subscribe_buckets({b: fluss.EARLIEST_OFFSET for b in range(BUCKETS)})
    ids = []
    deadline = time.monotonic() + timeout
    while len(ids) < total and time.monotonic() < deadline:
        t = await scanner.poll_arrow(500)
        ids.extend(t.column("id").to_pylist())
    # A little longer: rows read twice would show up now.
    t = await scanner.poll_arrow(1000)
    ids.extend(t.column("id").to_pylist())
    return ids


async def test_scan_from_earliest_reads_tiered_segments(strom_binary, tmp_path):
    srv = tiering_server(strom_binary, tmp_path).start()
    try:
        conn = await connect(srv.bootstrap)
        admin = conn.get_admin()
        path, table_id = await create_tiered_table(admin, "compat_remote_log")
        await append_ids(conn, path, 0, ROWS)
        assert all(n > 2 for n in local_segments(srv, table_id).values()), local_segments(srv, table_id)
        await wait_tiered(srv, table_id)
        remote_logs = list((tmp_path / "remote" / "log" / "fluss").glob(f"compat_remote_log-{table_id}/*/*/*.log"))
        assert len(remote_logs) >= 2 * BUCKETS, remote_logs

        # Earliest is the remote log start.
        earliest = await admin.list_offsets(path, bucket_ids=list(range(BUCKETS)), offset_spec=fluss.OffsetSpec.earliest())
        assert all(v == 0 for v in earliest.values()), earliest

        ids = await read_all(conn, path, ROWS)
        assert len(ids) == ROWS, f"read {len(ids)} rows, want {ROWS}"
        assert sorted(ids) == list(range(ROWS)), "rows lost or read twice"
        conn.close()

        srv.kill()
        srv.start()
        conn = await connect(srv.bootstrap)
        writer = (await conn.get_table(path)).new_append().create_writer()
        await writer.append({"id": ROWS, "payload": "after restart"}).wait()
        ids = await read_all(conn, path, ROWS + 1)
        assert sorted(ids) == list(range(ROWS + 1)), f"after kill -9: {len(ids)} rows"
        assert local_segments(srv, table_id) == {b: 1 for b in range(BUCKETS)}
        conn.close()
    finally:
        srv.kill()


async def test_kill_during_tiering_loses_and_duplicates_nothing(strom_binary, tmp_path):
    """kill -9 while segments are being copied and committed, three times: after each restart
    tiering resumes, orphans are swept, and a scan reads every row exactly once."""
    srv = tiering_server(strom_binary, tmp_path).start()
    try:
        conn = await connect(srv.bootstrap)
        admin = conn.get_admin()
        path, table_id = await create_tiered_table(admin, "compat_remote_log_kill")
        total, step = 0, 2000
        for round_ in range(3):
            await append_ids(conn, path, total, 5 * step, step)
            total += 5 * step
            await asyncio.sleep(0.4 * round_ + 0.9)  # the 1 s task runs now or soon
            conn.close()
            srv.kill()
            srv.start()
            conn = await connect(srv.bootstrap)
        await wait_tiered(srv, table_id)
        ids = await read_all(conn, path, total)
        assert len(ids) == total, f"read {len(ids)} rows, want {total}"
        assert sorted(ids) == list(range(total)), "rows lost or read twice"
        # Only committed objects are left: every segment directory holds a .log the manifest names.
        bucket_dirs = list((tmp_path / "remote" / "log" / "fluss").glob(f"compat_remote_log_kill-{table_id}/*"))
        assert len(bucket_dirs) == BUCKETS
        for d in bucket_dirs:
            manifests = list((d / "metadata").glob("*.manifest"))
            assert len(manifests) == 1, manifests
            named = {s["segment_id"] for s in json.loads(manifests[0].read_text())["remote_log_segments"]}
            on_disk = {p.name for p in d.iterdir() if p.name != "metadata"}
            assert on_disk == named, f"orphans {on_disk - named}, missing {named - on_disk}"
        conn.close()
    finally:
        srv.kill()
