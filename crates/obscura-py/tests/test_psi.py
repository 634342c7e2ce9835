"""Private joins from Python: sessions over TCP (both parties in Python or one in the CLI) and
the ECDH message API."""

import queue
import subprocess
import threading

import pytest

import obscura
from conftest import run

CLIENT = [f"user{i}@example.com" for i in range(0, 3000, 3)] + ["user3@example.com"]  # a duplicate
SERVER = [f"user{i}@example.com".encode() for i in range(0, 3000, 5)]
SHARED = {f"user{i}@example.com" for i in range(0, 3000, 15)}


def expected_rows(items, shared):
    return [row for row, item in enumerate(items) if (item if isinstance(item, str) else item.decode()) in shared]


class Peer:
    """The server's side in a thread; `address` once it listens, `result` once it ends."""

    def __init__(self, items, **options):
        self._address = queue.Queue()
        self.result = None
        self.error = None

        def serve():
            try:
                self.result = obscura.psi_server(items, listen="127.0.0.1:0", ready=self._address.put, progress=False, **options)
            except BaseException as error:  # surfaced by join()
                self.error = error
                self._address.put(None)

        self.thread = threading.Thread(target=serve)
        self.thread.start()
        self.address = self._address.get(timeout=60)

    def join(self):
        self.thread.join(timeout=120)
        return self.result


@pytest.mark.parametrize("protocol", ["ecdh", "kkrt", "rr22", "rr22-malicious"])
def test_two_parties_learn_their_shared_rows(protocol):
    peer = Peer(SERVER, protocol=protocol)
    result = obscura.psi_client(CLIENT, connect=peer.address, protocol=protocol, progress=False)
    server = peer.join()
    assert result.intersection == expected_rows(CLIENT, SHARED)
    assert result.intersection_size == len(SHARED)
    assert result.items == len(CLIENT) and result.duplicates_dropped == 1
    assert result.peer_items == len(SERVER) and result.bytes_sent > 0 and result.seconds > 0
    assert server.intersection is None and server.intersection_size is None
    assert result.buckets is None


def test_both_learn_and_pandas_series():
    pandas = pytest.importorskip("pandas")
    client = pandas.Series(CLIENT)
    peer = Peer(pandas.Series([s.decode() for s in SERVER]), both_learn=True)
    result = obscura.psi_client(client, connect=peer.address, both_learn=True, progress=False)
    server = peer.join()
    assert result.intersection == expected_rows(CLIENT, SHARED)
    assert server.intersection == expected_rows(SERVER, SHARED)


@pytest.mark.parametrize("protocol", ["kkrt", "rr22", "rr22-malicious"])
def test_bucketed_sessions_stream_lists_and_generators(protocol):
    peer = Peer((item for item in SERVER), bucket_items=200, protocol=protocol)
    result = obscura.psi_client(
        CLIENT, connect=peer.address, bucket_items=200, protocol=protocol, progress=False
    )
    server = peer.join()
    assert result.intersection == expected_rows(CLIENT, SHARED)
    assert result.buckets >= 5 and result.intersection_size == len(SHARED)
    assert server.items == len(SERVER) and result.peer_items == len(SERVER)


def test_a_string_is_refused_as_items_for_buckets_too():
    with pytest.raises(obscura.InvalidInputError, match="characters"):
        obscura.psi_client("alice@example.com", connect="127.0.0.1:9", bucket_items=100)


def test_mismatched_settings_and_silent_peers_raise_peer_errors():
    peer = Peer(SERVER, protocol="ecdh")
    with pytest.raises(obscura.PeerError, match="protocol"):
        obscura.psi_client(CLIENT, connect=peer.address, protocol="kkrt", progress=False)
    peer.join()
    assert isinstance(peer.error, obscura.PeerError)
    with pytest.raises(obscura.PeerTimeoutError):
        obscura.psi_server(SERVER, listen="127.0.0.1:0", timeout=0.5, progress=False)
    with pytest.raises(obscura.InvalidInputError, match="characters"):
        obscura.psi_client("alice@example.com", connect="127.0.0.1:9")
    with pytest.raises(obscura.InvalidInputError, match="unknown protocol"):
        obscura.psi_client(CLIENT, connect="127.0.0.1:9", protocol="rsa")
    with pytest.raises(obscura.InvalidInputError, match="does not offer an intersection for the server"):
        obscura.psi_server(SERVER, listen="127.0.0.1:0", protocol="rr22-malicious", both_learn=True)


def test_sessions_with_the_cli_in_another_process(tmp_path, cli):
    """Python as the client of `obscura psi`, then as its server."""
    csv = tmp_path / "theirs.csv"
    csv.write_text("email\n" + "\n".join(s.decode() for s in SERVER) + "\n")
    server = subprocess.Popen(
        [cli, "psi", "--protocol", "kkrt", "--role", "server", "--listen", "127.0.0.1:0",
         "--input", str(csv), "--column", "email"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    address = server.stderr.readline().split("listening on ")[1].strip()
    result = obscura.psi_client(CLIENT, connect=address, progress=False)
    assert server.wait(timeout=120) == 0
    assert result.intersection == expected_rows(CLIENT, SHARED)

    ours = tmp_path / "ours.csv"
    ours.write_text("email\n" + "\n".join(CLIENT) + "\n")
    output = tmp_path / "common.csv"
    peer = Peer(SERVER, protocol="ecdh")
    run(cli, "psi", "--protocol", "ecdh", "--role", "client", "--connect", peer.address,
        "--input", str(ours), "--column", "email", "--output", str(output))
    peer.join()
    rows = output.read_text().splitlines()[1:]
    assert rows == [CLIENT[row] for row in expected_rows(CLIENT, SHARED)]


def test_bucketed_sessions_with_the_cli(tmp_path, cli):
    """A bucketed CLI server and a bucketed Python client agree on the plan and the rows."""
    csv = tmp_path / "theirs.csv"
    csv.write_text("email\n" + "\n".join(s.decode() for s in SERVER) + "\n")
    server = subprocess.Popen(
        [cli, "psi", "--protocol", "ecdh", "--role", "server", "--listen", "127.0.0.1:0",
         "--input", str(csv), "--column", "email", "--bucket-items", "300", "--both-learn"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    address = server.stderr.readline().split("listening on ")[1].strip()
    result = obscura.psi_client(CLIENT, connect=address, protocol="ecdh", bucket_items=300, both_learn=True, progress=False)
    output, _ = server.communicate(timeout=120)
    assert server.returncode == 0
    assert result.intersection == expected_rows(CLIENT, SHARED) and result.buckets >= 3
    assert f"intersection: {len(SHARED)} items" in output


def test_a_mailbox_folder_carries_sessions_with_python_and_the_cli(tmp_path, cli):
    """Two parties with no connection exchange files in one folder: Python with Python
    (bucketed, both learning), then Python with the CLI; a used attempt is refused."""
    mailbox = tmp_path / "mailbox"
    mailbox.mkdir()
    results = {}

    def serve():
        results["server"] = obscura.psi_server(
            SERVER, mailbox=mailbox, session="nightly", protocol="rr22", both_learn=True,
            bucket_items=400, progress=False,
        )

    thread = threading.Thread(target=serve)
    thread.start()
    result = obscura.psi_client(
        CLIENT, mailbox=str(mailbox), session="nightly", protocol="rr22", both_learn=True,
        bucket_items=400, progress=False,
    )
    thread.join(timeout=120)
    assert result.intersection == expected_rows(CLIENT, SHARED)
    assert results["server"].intersection == expected_rows(SERVER, SHARED)
    assert sorted(p.name for p in mailbox.iterdir()) == ["nightly.a1.client.lock", "nightly.a1.server.lock"]
    with pytest.raises(obscura.InvalidInputError, match="start attempt 2 on both sides"):
        obscura.psi_client(CLIENT, mailbox=mailbox, session="nightly", protocol="rr22", progress=False)

    csv = tmp_path / "theirs.csv"
    csv.write_text("email\n" + "\n".join(s.decode() for s in SERVER) + "\n")
    server = subprocess.Popen(
        [cli, "psi", "--protocol", "kkrt", "--role", "server", "--mailbox", str(mailbox),
         "--session", "nightly", "--attempt", "2", "--input", str(csv), "--column", "email"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    result = obscura.psi_client(CLIENT, mailbox=mailbox, session="nightly", attempt=2, progress=False)
    assert server.wait(timeout=120) == 0
    assert result.intersection == expected_rows(CLIENT, SHARED)
    with pytest.raises(obscura.InvalidInputError, match="attempt must be from 1"):
        obscura.psi_client(CLIENT, mailbox=mailbox, session="x", attempt=-1, progress=False)
    with pytest.raises(obscura.InvalidInputError, match="session name"):
        obscura.psi_client(CLIENT, mailbox=mailbox, session="../up", progress=False)
    with pytest.raises(obscura.InvalidInputError, match="not both"):
        obscura.psi_client(CLIENT, mailbox=mailbox, session="x", connect="127.0.0.1:9", progress=False)


def test_the_ecdh_message_api_in_openmined_style():
    server = obscura.EcdhPsiServer(reveal_intersection=True)
    setup = server.create_setup_message(SERVER, num_client_inputs=len(CLIENT))
    client = obscura.EcdhPsiClient()
    request = client.create_request(CLIENT)
    response = server.process_request(request)
    assert client.get_intersection(setup, response) == expected_rows(CLIENT, SHARED)
    assert client.get_intersection_size(setup, response) == len(SHARED)


def test_a_server_that_reveals_only_the_size():
    server = obscura.EcdhPsiServer(reveal_intersection=False)
    assert not server.reveal_intersection
    setup = server.create_setup_message(SERVER, len(CLIENT), fpr=1e-9)
    client = obscura.EcdhPsiClient()
    response = server.process_request(client.create_request(CLIENT))
    assert client.get_intersection_size(setup, response) == len(SHARED)
    with pytest.raises(obscura.InvalidInputError, match="size"):
        client.get_intersection(setup, response)


def test_bad_messages_raise_and_never_crash():
    server = obscura.EcdhPsiServer()
    client = obscura.EcdhPsiClient()
    setup = server.create_setup_message(["a", "b"], 10)
    with pytest.raises(obscura.InvalidInputError, match="create_request"):
        client.get_intersection(setup, setup)
    request = client.create_request(["a", "c"])
    for bad in [b"", b"OBEM", request[:-1], request + b"x", setup]:
        with pytest.raises(obscura.MalformedDataError):
            server.process_request(bad)
    with pytest.raises(obscura.PeerError):
        server.process_request(request[:14] + b"\xff" * 32 + request[46:])
    with pytest.raises(obscura.InvalidInputError, match="false-positive"):
        server.create_setup_message(["a"], 1, fpr=1.5)
    with pytest.raises(obscura.InvalidInputError, match="made for at most 1"):
        big = server.create_setup_message(["a"], 1)
        client.get_intersection(big, server.process_request(request))
