import asyncio
import os
import tempfile

import pytest
import pytest_asyncio

import fluss
from strom_server import StromServer, build_binary


@pytest.fixture(scope="session")
def strom_binary():
    return build_binary()


class _ExternalServer:
    """A running cluster the session uses instead of starting a server
    ($STROM_COMPAT_BOOTSTRAP, e.g. one node of a 3-node cluster; docs/cluster.md)."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap


@pytest.fixture(scope="session")
def server(strom_binary, tmp_path_factory):
    """A strom server shared by the session (tests must use their own table names)."""
    if os.environ.get("STROM_COMPAT_BOOTSTRAP"):
        yield _ExternalServer(os.environ["STROM_COMPAT_BOOTSTRAP"])
        return
    srv = StromServer(strom_binary, str(tmp_path_factory.mktemp("strom") / "data")).start()
    yield srv
    srv.stop()


@pytest.fixture
def own_server(strom_binary, tmp_path):
    """A fresh strom server for tests that restart or kill it."""
    srv = StromServer(strom_binary, str(tmp_path / "data")).start()
    yield srv
    srv.kill()


async def connect(bootstrap: str) -> fluss.FlussConnection:
    return await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))


@pytest_asyncio.fixture(scope="session")
async def connection(server):
    conn = await connect(server.bootstrap)
    yield conn
    conn.close()


@pytest_asyncio.fixture(scope="session")
async def admin(connection):
    return connection.get_admin()
