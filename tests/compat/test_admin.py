"""Databases, tables, server nodes and their errors, driven through pyfluss against strom."""

import pyarrow as pa
import pytest

import fluss

from conftest import connect


def users_schema(primary_keys=None):
    return fluss.Schema(
        pa.schema([
            pa.field("id", pa.int32()),
            pa.field("name", pa.string()),
            pa.field("score", pa.float64()),
            pa.field("joined", pa.timestamp("us")),
        ]),
        primary_keys=primary_keys,
    )


async def fresh_database(admin, name, **kwargs):
    await admin.drop_database(name, ignore_if_not_exists=True, cascade=True)
    await admin.create_database(name, fluss.DatabaseDescriptor(**kwargs) if kwargs else None)
    return name


async def test_default_database_exists(admin):
    assert await admin.database_exists("fluss")
    assert "fluss" in await admin.list_databases()


async def test_database_lifecycle_keeps_comment_and_properties(admin):
    db = "compat_db_lifecycle"
    await admin.drop_database(db, ignore_if_not_exists=True, cascade=True)
    assert not await admin.database_exists(db)

    await admin.create_database(db, fluss.DatabaseDescriptor(comment="sales data", custom_properties={"owner": "ops", "tier": "gold"}))
    assert await admin.database_exists(db)
    assert db in await admin.list_databases()

    info = await admin.get_database_info(db)
    assert info.database_name == db
    assert info.created_time > 0 and info.modified_time >= info.created_time
    desc = info.get_database_descriptor()
    assert desc.comment == "sales data"
    assert desc.get_custom_properties() == {"owner": "ops", "tier": "gold"}

    # create again: error unless ignored
    with pytest.raises(fluss.FlussError) as e:
        await admin.create_database(db)
    assert e.value.error_code == fluss.ErrorCode.DATABASE_ALREADY_EXIST
    await admin.create_database(db, ignore_if_exists=True)

    await admin.drop_database(db)
    assert not await admin.database_exists(db)
    with pytest.raises(fluss.FlussError) as e:
        await admin.drop_database(db)
    assert e.value.error_code == fluss.ErrorCode.DATABASE_NOT_EXIST
    await admin.drop_database(db, ignore_if_not_exists=True)


async def test_database_without_descriptor(admin):
    db = await fresh_database(admin, "compat_db_plain")
    desc = (await admin.get_database_info(db)).get_database_descriptor()
    assert desc.comment is None
    assert desc.get_custom_properties() == {}
    await admin.drop_database(db)


async def test_drop_non_empty_database_needs_cascade(admin):
    db = await fresh_database(admin, "compat_db_cascade")
    path = fluss.TablePath(db, "t1")
    await admin.create_table(path, fluss.TableDescriptor(users_schema(), bucket_count=2))
    with pytest.raises(fluss.FlussError) as e:
        await admin.drop_database(db, cascade=False)
    assert e.value.error_code == fluss.ErrorCode.DATABASE_NOT_EMPTY
    assert await admin.table_exists(path)
    await admin.drop_database(db, cascade=True)
    assert not await admin.database_exists(db)
    assert not await admin.table_exists(path)


@pytest.mark.parametrize("name", ["bad.name", "has space", "__reserved", "", "x" * 201, "ünïcode"])
async def test_invalid_database_names(admin, name):
    with pytest.raises(fluss.FlussError) as e:
        await admin.create_database(name)
    assert e.value.error_code == fluss.ErrorCode.INVALID_DATABASE_EXCEPTION


async def test_log_table_info_round_trips(admin):
    db = await fresh_database(admin, "compat_tables_log")
    path = fluss.TablePath(db, "events")
    desc = fluss.TableDescriptor(
        users_schema(), bucket_count=4, bucket_keys=["id"], comment="click events",
        properties={"table.log.ttl": "2d"}, custom_properties={"team": "web"},
    )
    await admin.create_table(path, desc)
    assert await admin.table_exists(path)
    assert await admin.list_tables(db) == ["events"]

    info = await admin.get_table_info(path)
    assert info.table_path.database_name == db and info.table_path.table_name == "events"
    assert info.table_id >= 0
    assert info.schema_id == 1
    assert info.num_buckets == 4
    assert info.get_bucket_keys() == ["id"]
    assert info.get_primary_keys() == []
    assert not info.has_primary_key()
    assert not info.is_partitioned()
    assert info.comment == "click events"
    assert info.get_column_names() == ["id", "name", "score", "joined"]
    assert info.get_custom_properties() == {"team": "web"}
    props = info.get_properties()
    assert props["table.log.ttl"] == "2d"
    assert props["table.replication.factor"] == "1"
    assert info.created_time > 0
    await admin.drop_database(db, cascade=True)


async def test_primary_key_table_defaults(admin):
    db = await fresh_database(admin, "compat_tables_pk")
    path = fluss.TablePath(db, "users")
    await admin.create_table(path, fluss.TableDescriptor(users_schema(primary_keys=["id"]), bucket_count=3))
    info = await admin.get_table_info(path)
    assert info.has_primary_key()
    assert info.get_primary_keys() == ["id"]
    assert info.get_bucket_keys() == ["id"], "bucket key defaults to the primary key"
    assert info.num_buckets == 3
    assert info.get_properties()["table.kv.format-version"] == "2"
    await admin.drop_database(db, cascade=True)


async def test_default_bucket_count_is_filled_in(admin):
    db = await fresh_database(admin, "compat_tables_default_buckets")
    path = fluss.TablePath(db, "t")
    await admin.create_table(path, fluss.TableDescriptor(users_schema()))
    assert (await admin.get_table_info(path)).num_buckets == 1
    await admin.drop_database(db, cascade=True)


async def test_table_errors(admin):
    db = await fresh_database(admin, "compat_tables_errors")
    path = fluss.TablePath(db, "t")
    await admin.create_table(path, fluss.TableDescriptor(users_schema()))

    with pytest.raises(fluss.FlussError) as e:
        await admin.create_table(path, fluss.TableDescriptor(users_schema()))
    assert e.value.error_code == fluss.ErrorCode.TABLE_ALREADY_EXIST
    await admin.create_table(path, fluss.TableDescriptor(users_schema()), ignore_if_exists=True)

    missing = fluss.TablePath(db, "missing")
    assert not await admin.table_exists(missing)
    with pytest.raises(fluss.FlussError) as e:
        await admin.get_table_info(missing)
    assert e.value.error_code == fluss.ErrorCode.TABLE_NOT_EXIST
    with pytest.raises(fluss.FlussError) as e:
        await admin.drop_table(missing)
    assert e.value.error_code == fluss.ErrorCode.TABLE_NOT_EXIST
    await admin.drop_table(missing, ignore_if_not_exists=True)

    with pytest.raises(fluss.FlussError) as e:
        await admin.create_table(fluss.TablePath("compat_no_such_db", "t"), fluss.TableDescriptor(users_schema()))
    assert e.value.error_code == fluss.ErrorCode.DATABASE_NOT_EXIST
    with pytest.raises(fluss.FlussError) as e:
        await admin.list_tables("compat_no_such_db")
    assert e.value.error_code == fluss.ErrorCode.DATABASE_NOT_EXIST

    with pytest.raises(fluss.FlussError) as e:
        await admin.create_table(fluss.TablePath(db, "bad.table"), fluss.TableDescriptor(users_schema()))
    assert e.value.error_code == fluss.ErrorCode.INVALID_TABLE_EXCEPTION

    with pytest.raises(fluss.FlussError) as e:
        await admin.create_table(fluss.TablePath(db, "bad_prop"), fluss.TableDescriptor(users_schema(), properties={"table.no.such.option": "1"}))
    assert e.value.error_code == fluss.ErrorCode.INVALID_CONFIG_EXCEPTION

    await admin.drop_table(path)
    assert not await admin.table_exists(path)
    await admin.drop_database(db, cascade=True)


async def test_server_nodes(admin, server):
    nodes = await admin.get_server_nodes()
    kinds = sorted(n.server_type for n in nodes)
    assert kinds == ["CoordinatorServer", "TabletServer"]
    addrs = {n.server_type: f"{n.host}:{n.port}" for n in nodes}
    assert addrs["CoordinatorServer"] == server.coordinator
    assert addrs["TabletServer"] == server.tablet_server


async def test_lake_snapshot_absent(admin):
    db = await fresh_database(admin, "compat_lake")
    path = fluss.TablePath(db, "t")
    await admin.create_table(path, fluss.TableDescriptor(users_schema()))
    with pytest.raises(fluss.FlussError) as e:
        await admin.get_latest_lake_snapshot(path)
    assert e.value.error_code == fluss.ErrorCode.LAKE_SNAPSHOT_NOT_EXIST
    await admin.drop_database(db, cascade=True)


async def test_catalog_survives_restart(own_server):
    conn = await connect(own_server.bootstrap)
    admin = conn.get_admin()
    await admin.create_database("compat_restart", fluss.DatabaseDescriptor(comment="kept"))
    path = fluss.TablePath("compat_restart", "users")
    await admin.create_table(path, fluss.TableDescriptor(users_schema(primary_keys=["id"]), bucket_count=5, comment="kept too"))
    before = await admin.get_table_info(path)
    conn.close()

    own_server.restart()
    conn = await connect(own_server.bootstrap)
    admin = conn.get_admin()
    assert "compat_restart" in await admin.list_databases()
    assert (await admin.get_database_info("compat_restart")).get_database_descriptor().comment == "kept"
    after = await admin.get_table_info(path)
    assert after.table_id == before.table_id
    assert after.num_buckets == 5
    assert after.comment == "kept too"
    assert after.get_primary_keys() == ["id"]
    assert after.created_time == before.created_time
    # ids keep increasing after a restart
    other = fluss.TablePath("compat_restart", "other")
    await admin.create_table(other, fluss.TableDescriptor(users_schema()))
    assert (await admin.get_table_info(other)).table_id > before.table_id
    conn.close()


def test_second_server_on_same_data_dir_is_refused(own_server, strom_binary):
    import subprocess
    res = subprocess.run(
        [strom_binary, "serve", "--data-dir", own_server.data_dir, "--coordinator-listen", "127.0.0.1:0", "--tablet-listen", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=30,
    )
    assert res.returncode != 0
    assert "in use by another strom server" in res.stderr
