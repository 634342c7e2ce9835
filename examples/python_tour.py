"""A tour of the obscura Python package: private lookups and a private join, on data it makes.

Run it after installing the wheel (see the README's Python section):

    python examples/python_tour.py

Each step prints what it did; every answer is checked against the plain data.
"""

import os
import queue
import tempfile
import threading

import obscura


def keyword_lookup(folder: str) -> None:
    """Values fetched by key: the server never learns which key was asked for."""
    directory = {f"+1555{i:04d}": f"caller {i}" for i in range(10_000)}
    path = os.path.join(folder, "callers.obs")
    report = obscura.build_keyword(directory, path)
    client = obscura.Client.open(path)
    assert client.get_key("+15550042") == b"caller 42"
    assert client.get_key("+15559999x") is None
    print(f"keyword PIR: {report.items} keys, file {report.file_bytes:,} bytes; +15550042 -> caller 42, absent keys -> None")


def index_lookup(folder: str) -> None:
    """Records fetched by position, with YPIR: no hint to download, a 12 KiB answer."""
    records = bytes(i % 251 for i in range(64 * 5_000))
    path = os.path.join(folder, "records.obs")
    obscura.build_index(records, path, record_size=64, scheme="ypir")
    client = obscura.Client.open(path)
    assert client.get(1234) == records[1234 * 64 : 1235 * 64]
    print("YPIR: record 1234 of 5,000 fetched and checked")


def audit_path(folder: str) -> None:
    """A certificate's audit path from a transparency log, verified against the root."""
    leaves = [f"certificate {i}" for i in range(1_000)]
    path = os.path.join(folder, "log.obs")
    report = obscura.build_merkle(leaves, path)
    proof = obscura.Client.open(path).audit_path(777, leaf_data=leaves[777], root=report.root)
    print(f"TreePIR: audit path of leaf 777 ({len(proof.path)} hashes) verified against root {proof.root[:16]}…")


def private_join() -> None:
    """Two parties (here two threads) learn which emails they share, and nothing else."""
    ours = [f"user{i}@example.com" for i in range(0, 20_000, 2)]
    theirs = [f"user{i}@example.com" for i in range(0, 20_000, 3)]
    address: "queue.Queue[str]" = queue.Queue()
    server = threading.Thread(
        target=obscura.psi_server,
        args=(theirs,),
        kwargs={"listen": "127.0.0.1:0", "ready": address.put, "progress": False},
    )
    server.start()
    result = obscura.psi_client(ours, connect=address.get(timeout=30), progress=False)
    server.join()
    theirs_set = set(theirs)
    shared = [item for item in ours if item in theirs_set]
    assert result.intersection is not None  # the client learns it
    assert [ours[row] for row in result.intersection] == shared
    print(f"KKRT-PSI: {result.intersection_size} shared of {len(ours)} and {len(theirs)} items, {result.bytes_sent + result.bytes_received:,} bytes exchanged")


def message_join() -> None:
    """ECDH-PSI as three messages the caller carries (openmined-psi's shape)."""
    server = obscura.EcdhPsiServer(reveal_intersection=True)
    setup = server.create_setup_message(["alice", "bob", "carol"], num_client_inputs=10)
    client = obscura.EcdhPsiClient()
    request = client.create_request(["carol", "dave", "alice"])
    response = server.process_request(request)
    assert client.get_intersection(setup, response) == [0, 2]
    print(f"ECDH messages: setup {len(setup)} bytes, request {len(request)}, response {len(response)}; shared rows [0, 2]")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        keyword_lookup(folder)
        index_lookup(folder)
        audit_path(folder)
    private_join()
    message_join()


if __name__ == "__main__":
    main()
