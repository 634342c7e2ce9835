"""Fetching from `obscura serve` in another process, and files shared with the CLI both ways."""

import json
import signal
import time
import urllib.request

import pytest

import obscura
from conftest import run


def test_lookups_through_a_server_with_a_cached_and_pinned_setup(tmp_path, serve):
    index = obscura.build_index([f"record {i}" for i in range(100)], tmp_path / "db.obs", progress=False)
    obscura.build_keyword({"+15550013": "Ada"}, tmp_path / "phones.obs", progress=False)
    server = serve(tmp_path / "db.obs", tmp_path / "phones.obs")
    cache = tmp_path / "cache"
    client = obscura.Client.connect(server.url, "db", setup_sha256=index.setup_sha256, cache_dir=cache)
    assert client.name == "db" and client.lookup == "index"
    assert client.get(57) == b"record 57"
    assert any(cache.rglob("*")), "the verified setup is cached"
    again = obscura.Client.connect(server.url, "db", setup_sha256=bytes.fromhex(index.setup_sha256), cache_dir=cache)
    assert again.get(3) == b"record 3"
    phones = obscura.Client.connect(server.url, "phones", cache_dir=False)
    assert phones.get_key("+15550013") == b"Ada" and phones.get_key("+1") is None


def test_a_cached_setup_of_an_earlier_version_is_patched(tmp_path, serve):
    db = tmp_path / "db.obs"
    obscura.build_index([f"record {i}" for i in range(100)], db, value_bytes=20, progress=False)
    server = serve(db)
    cache = tmp_path / "cache"
    assert obscura.Client.connect(server.url, "db", cache_dir=cache).get(7) == b"record 7"
    report = obscura.update(db, [{"op": "set", "index": 7, "value": "record 7, changed"}])
    assert (tmp_path / "db.obs.patches").exists()
    server.process.send_signal(signal.SIGHUP)

    def get(path):
        with urllib.request.urlopen(server.url + path, timeout=10) as reply:
            return reply.read().decode()

    deadline = time.monotonic() + 30
    while json.loads(get("/v1/databases"))[0]["setup_sha256"] != report.setup_sha256:
        assert time.monotonic() < deadline, "the server did not reload the file"
        time.sleep(0.05)
    client = obscura.Client.connect(server.url, "db", cache_dir=cache)
    assert client.get(7) == b"record 7, changed" and client.get(8) == b"record 8"
    assert "obscura_patched_setups_total 1\n" in get("/metrics")
    # Without kept patches, none are written (and those kept before are removed).
    obscura.update(db, [{"op": "set", "index": 8, "value": "changed too"}], keep_patches=0)
    assert not (tmp_path / "db.obs.patches").exists()


def test_a_setup_with_another_hash_is_refused(tmp_path, serve):
    obscura.build_index([b"a", b"b"], tmp_path / "db.obs", progress=False)
    server = serve(tmp_path / "db.obs")
    with pytest.raises(obscura.ObscuraError, match="(?i)sha-?256|hash"):
        obscura.Client.connect(server.url, "db", setup_sha256="00" * 32, cache_dir=False)


def test_server_errors_are_server_errors(tmp_path, serve):
    obscura.build_index([b"a"], tmp_path / "db.obs", progress=False)
    server = serve(tmp_path / "db.obs")
    with pytest.raises(obscura.ServerError, match="404|not found|no database"):
        obscura.Client.connect(server.url, "absent", cache_dir=False)
    with pytest.raises(obscura.ServerError):
        obscura.Client.connect("http://127.0.0.1:9", "db", cache_dir=False, timeout=5)
    with pytest.raises(obscura.InvalidInputError):
        obscura.Client.connect(server.url, "db", setup_sha256="abcd", cache_dir=False)


def test_merkle_proofs_through_a_server(tmp_path, serve):
    leaves = [f"leaf {i}" for i in range(9)]
    report = obscura.build_merkle(leaves, tmp_path / "log.obs", progress=False)
    server = serve(tmp_path / "log.obs")
    client = obscura.Client.connect(server.url, "log", cache_dir=False)
    assert client.audit_path(4, root=report.root).root == report.root


def test_files_built_by_python_are_read_by_the_cli(tmp_path, cli):
    obscura.build_keyword({"key": "value from python"}, tmp_path / "kw.obs", progress=False)
    assert run(cli, "get", "--db", str(tmp_path / "kw.obs"), "--key", "key").stdout.strip() == "value from python"
    report = obscura.build_merkle(["a", "b", "c"], tmp_path / "log.obs", progress=False)
    proof = run(cli, "merkle", "prove", "--db", str(tmp_path / "log.obs"), "--leaf", "2")
    assert f"root {report.root} (verified)" in proof.stdout


def test_files_built_by_the_cli_are_read_by_python(tmp_path, cli):
    (tmp_path / "people.csv").write_text("phone,name\n+1,Ada\n+2,Grace\n")
    run(cli, "build", "--input", str(tmp_path / "people.csv"), "--key-column", "phone",
        "--value-column", "name", "--out", str(tmp_path / "people.obs"))
    client = obscura.Client.open(tmp_path / "people.obs")
    assert client.get_key("+2") == b"Grace" and client.get_key("+3") is None
    (tmp_path / "records.bin").write_bytes(bytes(range(256)) * 4)
    run(cli, "build", "--input", str(tmp_path / "records.bin"), "--record-size", "16",
        "--scheme", "ypir", "--out", str(tmp_path / "ypir.obs"))
    assert obscura.Client.open(tmp_path / "ypir.obs").get(17) == bytes(range(16, 32))


def test_a_scheme_registered_in_one_line_is_built_and_fetched_like_the_others(tmp_path, serve):
    # The wheel scripts/test builds registers obscura-test-scheme's trivial scheme ("whole").
    data = bytes(i * 7 % 251 for i in range(40 * 24))
    report = obscura.build_index(data, tmp_path / "whole.obs", record_size=24, scheme="whole", progress=False)
    assert report.kind == "whole" and report.items == 40
    local = obscura.Client.open(tmp_path / "whole.obs")
    assert local.lookup == "index"
    assert [local.get(i) for i in (0, 17, 39)] == [data[i * 24 : (i + 1) * 24] for i in (0, 17, 39)]
    server = serve(tmp_path / "whole.obs")
    remote = obscura.Client.connect(server.url, "whole", setup_sha256=report.setup_sha256, cache_dir=False)
    assert remote.get(5) == data[5 * 24 : 6 * 24]
    with pytest.raises(obscura.InvalidInputError, match="fetch records by index"):
        remote.get_key("k")


def test_a_sharded_database_is_fetched_through_its_gateway_as_one(tmp_path, cli, serve):
    records = bytes((i * 7 + i // 16) % 256 for i in range(400 * 16))
    (tmp_path / "r.bin").write_bytes(records)
    manifest = tmp_path / "db.shards.json"
    common = ("build", "--input", str(tmp_path / "r.bin"), "--record-size", "16")
    run(cli, *common, "--plan-shards", "2", "--out", str(manifest))
    shards = [tmp_path / f"db.{i}.obs" for i in range(2)]
    for i, shard in enumerate(shards):
        run(cli, *common, "--manifest", str(manifest), "--shard", f"{i}/2", "--out", str(shard))
    run(cli, "shards", "seal", str(manifest), *map(str, shards))
    servers = serve(*shards)
    gateway = serve("--gateway", manifest, "--shard", f"0={servers.url}", "--shard", f"1={servers.url}")
    client = obscura.Client.connect(gateway.url, "db", cache_dir=False)
    assert client.lookup == "index"
    for index in (0, 123, 399):
        assert client.get(index) == records[index * 16:(index + 1) * 16]
