"""ACL authorization (authorizer.enabled, super.users) as pyfluss sees it. pyfluss 1.0 has no
ACL administration API; granting ACLs is covered by the Go tests (server/coordinator)."""

import pyarrow as pa
import pytest

import fluss
from strom_server import StromServer, free_port

JAAS = ('org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def acl_server(strom_binary, tmp_path_factory):
    d = tmp_path_factory.mktemp("acl")
    ports = [free_port() for _ in range(2)]
    cfg = d / "server.yaml"
    cfg.write_text(
        f"bind.listeners: CLIENT://127.0.0.1:{ports[0]}\n"
        f"tablet-server.bind.listeners: CLIENT://127.0.0.1:{ports[1]}\n"
        "security.protocol.map: CLIENT:sasl\n"
        f"security.sasl.plain.jaas.config: '{JAAS}'\n"
        "authorizer.enabled: true\n"
        "super.users: User:admin\n"
    )
    srv = StromServer(strom_binary, str(d / "data"), extra_args=["--config", str(cfg)])
    srv.listen_flags = False
    srv.start()
    srv.sasl_addr = f"127.0.0.1:{ports[0]}"
    yield srv
    srv.stop()


async def login(srv, user):
    return await fluss.FlussConnection.create(fluss.Config({
        "bootstrap.servers": srv.sasl_addr, "security.protocol": "sasl", "security.sasl.mechanism": "PLAIN",
        "security.sasl.username": user, "security.sasl.password": f"{user}-secret"}))


async def test_super_user_and_denied_user(acl_server):
    root = await login(acl_server, "admin")
    admin = root.get_admin()
    path = fluss.TablePath("fluss", "acl_t")
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(pa.schema([pa.field("id", pa.int32())]))),
                             ignore_if_exists=True)
    w = (await root.get_table(path)).new_append().create_writer()
    await w.append({"id": 1}).wait()
    assert "acl_t" in await admin.list_tables("fluss")

    alice = await login(acl_server, "alice")
    a = alice.get_admin()
    # Nothing is leaked: lists are empty, existence checks say no.
    assert await a.list_databases() == []
    assert await a.list_tables("fluss") == []
    assert not await a.table_exists(path)
    # ... and nothing is written.
    with pytest.raises(fluss.FlussError) as e:
        await a.create_database("alice_db")
    assert e.value.error_code == fluss.ErrorCode.AUTHORIZATION_EXCEPTION
    with pytest.raises(fluss.FlussError) as e:
        await a.get_table_info(path)
    assert e.value.error_code == fluss.ErrorCode.AUTHORIZATION_EXCEPTION
    with pytest.raises(fluss.FlussError) as e:
        await a.drop_table(path)
    assert e.value.error_code == fluss.ErrorCode.AUTHORIZATION_EXCEPTION
    assert "alice_db" not in await admin.list_databases()
    assert "acl_t" in await admin.list_tables("fluss")
    alice.close()
    root.close()
