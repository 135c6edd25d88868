"""SASL/PLAIN: a SASL listener and a plaintext listener per role, configured with Fluss's option names."""

import socket
import struct

import pyarrow as pa
import pytest

import fluss

from strom_server import StromServer, free_port

JAAS = ('org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def sasl_server(strom_binary, tmp_path_factory):
    d = tmp_path_factory.mktemp("sasl")
    ports = [free_port() for _ in range(4)]
    cfg = d / "server.yaml"
    cfg.write_text(
        f"bind.listeners: CLIENT://127.0.0.1:{ports[0]}, PLAIN_CLIENT://127.0.0.1:{ports[1]}\n"
        f"tablet-server.bind.listeners: CLIENT://127.0.0.1:{ports[2]}, PLAIN_CLIENT://127.0.0.1:{ports[3]}\n"
        "security.protocol.map: CLIENT:sasl\n"
        "security.sasl.enabled.mechanisms: PLAIN\n"
        f"security.sasl.plain.jaas.config: '{JAAS}'\n"
    )
    srv = StromServer(strom_binary, str(d / "data"), extra_args=["--config", str(cfg)])
    # --coordinator-listen/--tablet-listen from StromServer override bind.listeners; drop them.
    srv.listen_flags = False
    srv.start()
    srv.sasl_addr = f"127.0.0.1:{ports[0]}"
    srv.plain_addr = f"127.0.0.1:{ports[1]}"
    yield srv
    srv.stop()


def sasl_config(addr, user, password):
    return fluss.Config({
        "bootstrap.servers": addr,
        "security.protocol": "sasl",
        "security.sasl.mechanism": "PLAIN",
        "security.sasl.username": user,
        "security.sasl.password": password,
    })


@pytest.mark.parametrize("user,password", [("admin", "admin-secret"), ("alice", "alice-secret")])
async def test_valid_credentials_can_do_everything(sasl_server, user, password):
    conn = await fluss.FlussConnection.create(sasl_config(sasl_server.sasl_addr, user, password))
    admin = conn.get_admin()
    db = f"compat_sasl_{user}"
    await admin.drop_database(db, ignore_if_not_exists=True, cascade=True)
    await admin.create_database(db)
    path = fluss.TablePath(db, "t")
    schema = pa.schema([pa.field("id", pa.int32())])
    await admin.create_table(path, fluss.TableDescriptor(fluss.Schema(schema)))
    table = await conn.get_table(path)
    w = table.new_append().create_writer()
    await w.append({"id": 42}).wait()
    # metadata handed out on the SASL listener points at SASL endpoints
    nodes = {n.server_type: n for n in await admin.get_server_nodes()}
    assert f"{nodes['CoordinatorServer'].host}:{nodes['CoordinatorServer'].port}" == sasl_server.sasl_addr
    await admin.drop_database(db, cascade=True)
    conn.close()


@pytest.mark.parametrize("user,password", [("admin", "wrong"), ("mallory", "x")])
async def test_wrong_credentials_are_refused(sasl_server, user, password):
    with pytest.raises(fluss.FlussError) as e:
        await fluss.FlussConnection.create(sasl_config(sasl_server.sasl_addr, user, password))
    assert e.value.error_code == fluss.ErrorCode.AUTHENTICATE_EXCEPTION


async def test_plaintext_listener_still_serves_plain_clients(sasl_server):
    conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": sasl_server.plain_addr}))
    assert await conn.get_admin().database_exists("fluss")
    conn.close()


async def test_sasl_client_against_plaintext_listener_fails(sasl_server):
    with pytest.raises(fluss.FlussError) as e:
        await fluss.FlussConnection.create(sasl_config(sasl_server.plain_addr, "admin", "admin-secret"))
    assert e.value.error_code == fluss.ErrorCode.AUTHENTICATE_EXCEPTION


def raw_call(addr, api_key, body=b"", request_id=7):
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(struct.pack(">ihhi", 8 + len(body), api_key, 0, request_id) + body)
        (n,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
        return s.recv(n, socket.MSG_WAITALL)


def test_nothing_but_api_versions_before_authentication(sasl_server):
    # API_VERSIONS is answered (type 0 = success) ...
    resp = raw_call(sasl_server.sasl_addr, 1000, b"\x0a\x01x\x12\x01y")
    assert resp[0] == 0
    # ... LIST_DATABASES is refused with ERROR_RESPONSE code 46.
    resp = raw_call(sasl_server.sasl_addr, 1003)
    assert resp[0] == 1 and struct.unpack(">i", resp[1:5])[0] == 7
    assert resp[5:7] == b"\x08\x2e"  # field 1 (error_code) = 46
