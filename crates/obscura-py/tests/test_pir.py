"""Private lookups from Python: every scheme builds, stores and answers real data."""

import os
import subprocess
import sys
import threading

import pytest

import obscura

RECORDS = bytes((i * 37 + 11) % 256 for i in range(40 * 9))


def records_of(data: bytes, size: int):
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(
    "scheme, layout",
    [("index", "square"), ("index", "one-per-column"), ("index", "3"), ("double", "square"), ("ypir", "square"), ("ypir-sp", "square")],
)
def test_every_scheme_retrieves_fixed_size_records(tmp_path, scheme, layout):
    path = tmp_path / "db.obs"
    report = obscura.build_index(RECORDS, path, record_size=9, scheme=scheme, layout=layout, progress=False)
    assert report.path == path and report.items == 40 and report.file_bytes == path.stat().st_size
    assert len(report.setup_sha256) == 64
    client = obscura.Client.open(path)
    assert client.lookup == "index"
    expected = records_of(RECORDS, 9)
    for index in (0, 1, 17, 39):
        assert client.get(index) == expected[index]


def test_fixed_size_records_come_from_any_bytes_like_object(tmp_path):
    for kind, data in [("bytearray", bytearray(RECORDS)), ("memoryview", memoryview(RECORDS))]:
        obscura.build_index(data, tmp_path / f"{kind}.obs", record_size=9, progress=False)
        assert obscura.Client.open(tmp_path / f"{kind}.obs").get(5) == RECORDS[45:54], kind


def test_records_come_from_lists_of_str_and_bytes(tmp_path):
    values = ["alpha", b"beta", bytearray(b"\x00gamma\xff"), memoryview(b"delta"), "", "\u00e9t\u00e9"]
    obscura.build_index(values, tmp_path / "db.obs", progress=False)
    client = obscura.Client.open(tmp_path / "db.obs")
    for index, value in enumerate(values):
        expected = value.encode() if isinstance(value, str) else bytes(value)
        assert client.get(index) == expected


def test_records_come_from_generators(tmp_path):
    obscura.build_index((f"row {i}" for i in range(50)), tmp_path / "db.obs", progress=False)
    assert obscura.Client.open(tmp_path / "db.obs").get(42) == b"row 42"


def test_records_come_from_pandas_and_pyarrow(tmp_path):
    pandas = pytest.importorskip("pandas")
    series = pandas.Series([f"+1555{i:04d}" for i in range(30)])
    obscura.build_index(series, tmp_path / "pandas.obs", progress=False)
    assert obscura.Client.open(tmp_path / "pandas.obs").get(29) == b"+15550029"
    pyarrow = pytest.importorskip("pyarrow")
    array = pyarrow.array([f"v{i}" for i in range(20)])
    obscura.build_index(array, tmp_path / "arrow.obs", progress=False)
    assert obscura.Client.open(tmp_path / "arrow.obs").get(7) == b"v7"


def test_keyword_lookups_find_values_and_report_absent_keys(tmp_path):
    pairs = {f"+1555{i:04d}": f"name {i}" for i in range(300)}
    pairs[b"\xffraw key"] = b"\x00\x01"
    report = obscura.build_keyword(pairs, tmp_path / "kw.obs", progress=False)
    assert report.kind == "keyword" and report.items == 301
    client = obscura.Client.open(tmp_path / "kw.obs")
    assert client.lookup == "keyword"
    assert client.get_key("+15550123") == b"name 123"
    assert client.get_key(b"\xffraw key") == b"\x00\x01"
    assert client.get_key("+15559999") is None
    assert client.get_key("") is None


def test_updates_set_append_and_delete_records(tmp_path):
    db = tmp_path / "values.obs"
    obscura.build_index([f"value {i:02d}" for i in range(20)], db, layout="7", progress=False)
    report = obscura.update(
        db,
        [
            {"op": "set", "index": 4, "value": "changed"},
            {"op": "delete", "index": 5},
            {"op": "append", "index": 20, "value_hex": "00ff"},
        ],
    )
    assert (report.version, report.items) == (1, 21)
    client = obscura.Client.open(db)
    assert client.get(4) == b"changed"
    assert client.get(5) is None
    assert client.get(20) == b"\x00\xff"
    assert client.get(6) == b"value 06"
    changes = tmp_path / "changes.jsonl"
    changes.write_text('{"op": "set", "index": 5, "value": "back"}\n')
    assert obscura.update(db, changes).version == 2
    assert obscura.Client.open(db).get(5) == b"back"
    before = db.read_bytes()
    with pytest.raises(obscura.InvalidInputError, match="lines 1 and 2 both change index 1"):
        obscura.update(db, [{"op": "set", "index": 1, "value": "a"}, {"op": "delete", "index": 1}])
    with pytest.raises(obscura.InvalidInputError, match="needs a new setup"):
        obscura.update(db, [{"op": "set", "index": 1, "value": "longer than any slot"}])
    assert db.read_bytes() == before
    # Slots built with room take longer values.
    roomy = tmp_path / "roomy.obs"
    obscura.build_index(["a", "b"], roomy, value_bytes=30, capacity=50, progress=False)
    appends = [{"op": "append", "index": i, "value": f"appended {i}"} for i in range(2, 50)]
    report = obscura.update(
        roomy, [{"op": "set", "index": 1, "value": "longer than any slot"}] + appends
    )
    assert report.items == 50
    client = obscura.Client.open(roomy)
    assert client.get(1) == b"longer than any slot" and client.get(49) == b"appended 49"


def test_ypir_updates_keep_the_setup(tmp_path):
    db = tmp_path / "ypir.obs"
    built = obscura.build_index([f"value {i:02d}" for i in range(40)], db, scheme="ypir", progress=False)
    report = obscura.update(db, [{"op": "set", "index": 4, "value": "new"}, {"op": "delete", "index": 5}])
    # The setup holds no data: it stays as clients hold it.
    assert (report.version, report.items, report.setup_sha256) == (0, 40, built.setup_sha256)
    updated = obscura.Client.open(db)
    assert updated.get(4) == b"new"
    assert updated.get(5) is None
    assert updated.get(6) == b"value 06"
    before = db.read_bytes()
    with pytest.raises(obscura.InvalidInputError, match="needs a new setup"):
        obscura.update(db, [{"op": "append", "index": 40, "value": "more"}])
    assert db.read_bytes() == before


def test_keyword_updates_upsert_and_delete_keys(tmp_path):
    db = tmp_path / "callers.obs"
    obscura.build_keyword({f"+1555{i:04d}": f"caller {i}" for i in range(50)}, db, progress=False)
    report = obscura.update(
        db,
        [
            {"op": "upsert", "key": "+15550007", "value": "a spammer"},
            {"op": "upsert", "key": "+15559999", "value_hex": "00ff"},
            {"op": "delete", "key": "+15550003"},
        ],
    )
    assert (report.version, report.items) == (1, 50)
    client = obscura.Client.open(db)
    assert client.get_key("+15550007") == b"a spammer"
    assert client.get_key("+15559999") == b"\x00\xff"
    assert client.get_key("+15550003") is None
    assert client.get_key("+15550008") == b"caller 8"
    before = db.read_bytes()
    with pytest.raises(obscura.InvalidInputError, match="not in the database"):
        obscura.update(db, [{"op": "delete", "key": "+15550003"}])
    with pytest.raises(obscura.InvalidInputError, match="lines 1 and 2 both change key"):
        obscura.update(db, [{"op": "upsert", "key": "k", "value": "1"}, {"op": "delete", "key": "k"}])
    assert db.read_bytes() == before


def test_keyword_databases_take_pairs_and_dataframes(tmp_path):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"phone": ["+1", "+2", "+3"], "city": ["Oslo", "Lima", "Pune"]})
    obscura.build_keyword(zip(frame["phone"], frame["city"]), tmp_path / "kw.obs", arity=4, progress=False)
    client = obscura.Client.open(tmp_path / "kw.obs")
    assert [client.get_key(p) for p in ["+3", "+1", "+4"]] == [b"Pune", b"Oslo", None]


def test_duplicate_keys_are_refused(tmp_path):
    with pytest.raises(obscura.InvalidInputError, match="more than once"):
        obscura.build_keyword([("a", "1"), ("b", "2"), ("a", "3")], tmp_path / "kw.obs", progress=False)
    assert not (tmp_path / "kw.obs").exists()


def test_merkle_audit_paths_verify_against_the_root(tmp_path):
    leaves = [f"certificate {i}" for i in range(21)]
    report = obscura.build_merkle(leaves, tmp_path / "log.obs", progress=False)
    client = obscura.Client.open(tmp_path / "log.obs")
    assert client.lookup == "audit-path"
    fetched = client.audit_path(13)
    given = client.audit_path(13, leaf_data=leaves[13], root=report.root)
    assert fetched.path == given.path and fetched.root == report.root
    assert fetched.leaf == 13 and fetched.leaves == 21
    with pytest.raises(obscura.MalformedDataError):
        client.audit_path(13, leaf_data="not the leaf")
    with pytest.raises(obscura.MalformedDataError, match="not the expected"):
        client.audit_path(13, root="00" * 32)
    with pytest.raises(obscura.InvalidInputError, match="out of range"):
        client.audit_path(21)


def test_a_merkle_tree_grows_by_appended_leaves_and_proves_it(tmp_path):
    leaves = [f"certificate {i}" for i in range(40)]
    first = obscura.build_merkle(leaves[:21], tmp_path / "log.obs", capacity=64, progress=False)
    grown = obscura.update(tmp_path / "log.obs", leaves[21:])
    assert grown.items == 40 and grown.version == 1
    rebuilt = obscura.build_merkle(leaves, tmp_path / "all.obs", progress=False)
    assert grown.root == rebuilt.root
    client = obscura.Client.open(tmp_path / "log.obs")
    assert client.audit_path(30, leaf_data=leaves[30]).root == rebuilt.root
    proved = client.consistency(21, first.root)
    assert (proved.first, proved.second, proved.root) == (21, 40, rebuilt.root)
    assert len(proved.proof) > 0
    with pytest.raises(obscura.MalformedDataError, match="not proved a prefix"):
        client.consistency(21, rebuilt.root)
    with pytest.raises(obscura.InvalidInputError, match="no consistency proof"):
        client.consistency(41, first.root)
    with pytest.raises(obscura.InvalidInputError, match="line break"):
        obscura.update(tmp_path / "log.obs", ["two\nlines"])
    lines = tmp_path / "more.txt"
    lines.write_bytes(b"".join(f"more {i}\n".encode() for i in range(30)))
    with pytest.raises(obscura.InvalidInputError, match="do not fit"):
        obscura.update(tmp_path / "log.obs", lines)


def test_wrong_calls_raise_typed_errors(tmp_path):
    obscura.build_index([b"a", b"b"], tmp_path / "db.obs", progress=False)
    client = obscura.Client.open(tmp_path / "db.obs")
    with pytest.raises(obscura.InvalidInputError, match="out of range"):
        client.get(2)
    with pytest.raises(ValueError):  # the typed errors are ValueErrors too
        client.get_key("a")
    with pytest.raises(OverflowError):
        client.get(-1)
    with pytest.raises(obscura.InvalidInputError, match="item 1 is an int"):
        obscura.build_index(["a", 5], tmp_path / "x.obs")
    with pytest.raises(obscura.InvalidInputError, match="item 0 is None"):
        obscura.build_index([None], tmp_path / "x.obs")
    with pytest.raises(obscura.InvalidInputError, match="no records"):
        obscura.build_index([], tmp_path / "x.obs")
    with pytest.raises(obscura.InvalidInputError, match="record_size"):
        obscura.build_index(b"abc", tmp_path / "x.obs")
    with pytest.raises(obscura.InvalidInputError, match="characters"):
        obscura.build_index("abc", tmp_path / "x.obs")
    with pytest.raises(obscura.InvalidInputError, match="laid end to end"):
        obscura.build_index([b"abc"], tmp_path / "x.obs", record_size=3)
    with pytest.raises(obscura.InvalidInputError, match="unknown scheme"):
        obscura.build_index([b"a"], tmp_path / "x.obs", scheme="simplepir")
    with pytest.raises(obscura.InvalidInputError, match="layout"):
        obscura.build_index([b"a"], tmp_path / "x.obs", layout="round")
    with pytest.raises(obscura.InvalidInputError, match="3 or 4"):
        obscura.build_keyword({"a": "b"}, tmp_path / "x.obs", arity=5)
    with pytest.raises(obscura.InvalidInputError, match="threads must be at least 1"):
        obscura.build_index([b"a"], tmp_path / "x.obs", threads=0)
    with pytest.raises(obscura.InvalidInputError, match="threads must be at most 1024"):
        obscura.build_index([b"a"], tmp_path / "x.obs", threads=100_000)
    assert not (tmp_path / "x.obs").exists()
    with pytest.raises(obscura.StorageError):
        obscura.Client.open(tmp_path / "missing.obs")
    with pytest.raises(OSError):
        obscura.Client.open(tmp_path / "missing.obs")


def test_a_corrupted_file_is_refused_not_misread(tmp_path):
    path = tmp_path / "db.obs"
    obscura.build_index(RECORDS, path, record_size=9, progress=False)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(obscura.MalformedDataError, match="checksum"):
        obscura.Client.open(path)
    path.write_bytes(b"not a database")
    with pytest.raises(obscura.MalformedDataError):
        obscura.Client.open(path)


def test_a_build_larger_than_the_memory_limit_is_refused(tmp_path):
    with pytest.raises(obscura.MemoryLimitError, match="max_memory allows"):
        obscura.build_index(bytes(3 << 20), tmp_path / "x.obs", record_size=1 << 20, max_memory=1 << 30)
    with pytest.raises(MemoryError):
        obscura.build_index(bytes(3 << 20), tmp_path / "x.obs", record_size=1 << 20, max_memory=1 << 30)
    assert not (tmp_path / "x.obs").exists()


def test_progress_reaches_a_callable_and_its_errors_propagate(tmp_path):
    seen = []
    obscura.build_keyword({str(i): "v" for i in range(500)}, tmp_path / "kw.obs", progress=lambda *r: seen.append(r))
    stages = [stage for stage, _, _ in seen]
    assert stages[0] == "filling the slots" and stages[-1] == "computing the hint"
    assert all(0 <= done <= total for _, done, total in seen)
    assert seen[-1][1] == seen[-1][2]

    def failing(stage, done, total):
        raise KeyError("stop")

    with pytest.raises(KeyError):
        obscura.build_index([b"a"] * 100, tmp_path / "db.obs", progress=failing)


def test_long_calls_release_the_gil(tmp_path):
    """Another Python thread keeps running while a build works."""
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        obscura.build_index(bytes(8 << 20), tmp_path / "db.obs", record_size=64, progress=False, threads=1)
    finally:
        done.set()
        counter.join()
    assert ticks > 1000


def test_fixture_files_of_the_rust_tests_decode_to_their_known_records(tmp_path):
    """The database files committed with the Rust fuzz targets, read through the bindings."""
    from conftest import REPO

    fixtures = REPO / "crates" / "obscura-fuzz" / "fixtures"
    index = obscura.Client.open(fixtures / "index.obs")
    known = bytes((i * 37) % 256 for i in range(64))
    assert [index.get(i) for i in range(16)] == records_of(known, 4)
    keyword = obscura.Client.open(fixtures / "keyword.obs")
    for key, value in [("alice", b"1"), ("bob", b"22"), ("carol", b"333"), ("dave", None)]:
        assert keyword.get_key(key) == value
    tree = obscura.Client.open(fixtures / "tree.obs")
    assert tree.audit_path(1, leaf_data="right").leaves == 2


def test_rfc6962_known_answers_through_the_bindings(tmp_path):
    import json

    from conftest import REPO

    vectors = json.loads((REPO / "crates" / "obscura-pir" / "vectors" / "rfc6962.json").read_text())
    leaves = [bytes.fromhex(h) for h in vectors["leaves_hex"]]
    for n in range(1, len(leaves) + 1):
        report = obscura.build_merkle(leaves[:n], tmp_path / f"t{n}.obs", progress=False)
        assert report.root == vectors["roots"][n]
    client = obscura.Client.open(tmp_path / "t7.obs")
    for leaf, path in vectors["paths_in_7"].items():
        proof = client.audit_path(int(leaf), leaf_data=leaves[int(leaf)], root=vectors["roots"][7])
        assert proof.path == path


def test_a_backend_the_cpu_cannot_run_refuses_the_import():
    def import_with(backend):
        env = dict(os.environ, OBSCURA_BACKEND=backend)
        return subprocess.run([sys.executable, "-c", "import obscura"], env=env, capture_output=True, text=True)

    assert import_with("portable").returncode == 0
    unknown = import_with("sse9")
    assert unknown.returncode != 0
    assert "InvalidInputError" in unknown.stderr
    assert 'OBSCURA_BACKEND="sse9" names no backend: expected portable, avx2 or avx512' in unknown.stderr
