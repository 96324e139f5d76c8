"""The server fixtures give real, correctly configured servers."""

from __future__ import annotations

import psycopg
import pytest
import redis
from redis.cluster import RedisCluster


def test_redis_standalone_set_get(redis_server_url: str, key_prefix: str) -> None:
    r = redis.Redis.from_url(redis_server_url, decode_responses=True)
    try:
        key = f"{key_prefix}:k"
        assert r.set(key, "v1")
        assert r.get(key) == "v1"
        assert r.info("persistence")["aof_enabled"] == 0
        assert r.config_get("save")["save"] == ""
        info = r.info("server")
        assert info["tcp_port"] == int(redis_server_url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(redis.exceptions.ResponseError):  # not a cluster node
            r.cluster("INFO")
        r.delete(key)
    finally:
        r.close()


def test_redis_cluster_spreads_keys(
    redis_cluster_url: str, redis_cluster_urls: list[str], key_prefix: str
) -> None:
    assert len(redis_cluster_urls) == 3
    rc = RedisCluster.from_url(redis_cluster_url, decode_responses=True)
    try:
        assert len(rc.get_primaries()) == 3
        assert not rc.get_replicas()
        keys = {
            f"{key_prefix}:a{{x}}": "1",
            f"{key_prefix}:b{{y}}": "2",
            f"{key_prefix}:c{{z}}": "3",
        }
        for key, value in keys.items():
            assert rc.set(key, value)
        nodes = {rc.get_node_from_key(k).name for k in keys}
        slots = {rc.keyslot(k) for k in keys}
        assert len(slots) == 3
        assert len(nodes) >= 2, f"keys {list(keys)} all landed on {nodes}"
        for key, value in keys.items():
            assert rc.get(key) == value
            # the key is on the node owning its slot; the other nodes redirect there
            owner = rc.get_node_from_key(key)
            for primary in rc.get_primaries():
                conn = primary.redis_connection
                assert conn is not None
                if primary.name == owner.name:
                    assert conn.get(key) == value
                else:
                    with pytest.raises(redis.exceptions.MovedError, match=owner.name):
                        conn.get(key)
        # a real cluster node refuses a multi-key command across slots
        any_node = rc.get_primaries()[0].redis_connection
        assert any_node is not None
        with pytest.raises(redis.exceptions.ResponseError, match="same slot"):
            any_node.mget(list(keys))
        rc.delete(*keys)
    finally:
        rc.close()


def test_postgres_select_and_ddl(postgres_url: str, key_prefix: str) -> None:
    table = f"{key_prefix}_tbl"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        assert conn.execute("select current_database()").fetchone() == ("test",)
        conn.execute(f"create table {table} (id int primary key, body text)")
        conn.execute(f"insert into {table} values (%s, %s)", (1, "hello"))
        assert conn.execute(f"select body from {table} where id = 1").fetchone() == ("hello",)
        conn.execute(f"drop table {table}")
        exists = conn.execute("select to_regclass(%s)", (table,)).fetchone()
        assert exists == (None,)
