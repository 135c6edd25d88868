"""Remote log tiering into S3 (docs/tiered-storage.md), against moto's S3 server on loopback:
closed segments leave the tablet's directory once committed in the bucket, and pyfluss reads
them from S3 with the credentials GET_FILESYSTEM_SECURITY_TOKEN hands out — every row exactly
once, also after kill -9."""

import boto3
import pytest
from moto.server import ThreadedMotoServer

from conftest import connect
from strom_server import StromServer
from test_remote_log import append_ids, create_tiered_table, local_segments, read_all, wait_tiered

ROWS = 20_000


@pytest.fixture
def s3():
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv._server.server_address
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket="strom")
    yield endpoint, client
    srv.stop()


async def test_pyfluss_reads_segments_tiered_to_s3(strom_binary, tmp_path, s3):
    endpoint, client = s3
    srv = StromServer(strom_binary, str(tmp_path / "data"), [
        "--set", "remote.data.dir=s3://strom/cluster1",
        "--set", f"s3.endpoint={endpoint}",
        "--set", "s3.access-key=testing",
        "--set", "s3.secret-key=testing",
        "--set", "s3.region=us-east-1",
        "--set", "s3.path-style-access=true",
        "--set", "log.segment.file-size=1mb",
        "--set", "remote.log.task-interval-duration=1s",
    ]).start()
    try:
        conn = await connect(srv.bootstrap)
        admin = conn.get_admin()
        path, table_id = await create_tiered_table(admin, "compat_remote_log_s3")
        await append_ids(conn, path, 0, ROWS)
        assert all(n > 1 for n in local_segments(srv, table_id).values()), local_segments(srv, table_id)
        await wait_tiered(srv, table_id)
        keys = [o["Key"] for o in client.list_objects_v2(Bucket="strom", Prefix="cluster1/log/fluss/").get("Contents", [])]
        assert any(k.endswith(".log") for k in keys) and any(k.endswith(".manifest") for k in keys), keys

        ids = await read_all(conn, path, ROWS)
        assert len(ids) == ROWS and sorted(ids) == list(range(ROWS)), f"read {len(ids)} rows, want {ROWS} once each"
        conn.close()

        srv.kill()
        srv.start()
        conn = await connect(srv.bootstrap)
        ids = await read_all(conn, path, ROWS)
        assert sorted(ids) == list(range(ROWS)), f"after kill -9: {len(ids)} rows"
        conn.close()
    finally:
        srv.kill()
