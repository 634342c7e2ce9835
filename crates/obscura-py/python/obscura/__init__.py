"""Obscura: private information retrieval (PIR) and private set intersection (PSI).

PIR: build a database file, then fetch from it (or from ``obscura serve``) without the server
learning what was fetched::

    import obscura
    obscura.build_keyword({"+15550013": "Ada"}, "phones.obs")
    client = obscura.Client.open("phones.obs")      # or Client.connect(url, "phones")
    client.get_key("+15550013")                     # b"Ada"; None for an absent key

PSI: two parties learn the items they share and nothing else::

    obscura.psi_server(their_items, listen="0.0.0.0:9000")            # one process
    result = obscura.psi_client(our_items, connect="10.0.0.2:9000")   # the other
    result.intersection                                               # positions in our_items

Every error is an :class:`ObscuraError`; long calls release the GIL and show tqdm progress
bars when tqdm is installed (``progress=False`` hides them, a callable receives
``(stage, done, total)``). The library's work cannot be stopped half way: Ctrl-C during a call
raises ``KeyboardInterrupt`` when the call returns (a PSI session ends at the latest when its
``timeout`` passes without a word from the peer).
"""

import json
from os import PathLike
from typing import Any, Callable, Iterable, Mapping, Optional, Tuple, Union

from . import _obscura, _progress
from ._errors import (
    InvalidInputError,
    MalformedDataError,
    MemoryLimitError,
    ObscuraError,
    PeerError,
    PeerTimeoutError,
    ServerError,
    StorageError,
)
from ._obscura import AuditPath, BuildReport, Client, Consistency, EcdhPsiClient, EcdhPsiServer, PsiResult

__version__ = _obscura.__version__

Item = Union[str, bytes]
Path = Union[str, "PathLike[str]"]


def build_index(
    records: Union[bytes, Iterable[Item]],
    out: Path,
    *,
    record_size: Optional[int] = None,
    value_bytes: Optional[int] = None,
    capacity: Optional[int] = None,
    scheme: str = "index",
    layout: str = "square",
    params: str = "ypir-1024",
    matrix: Optional[str] = None,
    threads: Optional[int] = None,
    max_memory: Optional[int] = None,
    progress: _progress.Progress = None,
) -> BuildReport:
    """Builds an index database file (records fetched by position) and writes it to ``out``.

    ``records`` is one bytes object of fixed-size records laid end to end (give
    ``record_size``; the last may be short) or any iterable of str or bytes, one record each
    (a list, a pandas Series, a pyarrow array). ``scheme`` is ``"index"`` (SimplePIR or FrodoPIR
    as ``layout`` says: ``"square"``, ``"one-per-column"`` or a count), ``"double"``
    (DoublePIR), ``"ypir"`` (records up to 72 bytes, no hint) or ``"ypir-sp"``. A build that
    needs more memory than ``max_memory`` bytes (default: what the system has available) is
    refused before it starts. ``value_bytes`` gives a database of values slots for values of up
    to that many bytes (default: the longest), and ``capacity`` room for that many records in
    all (default: those given), so that :func:`update` can set longer values and append.
    """
    return _progress.run(
        _obscura.build_index,
        progress,
        records,
        out,
        record_size=record_size,
        value_bytes=value_bytes,
        capacity=capacity,
        scheme=scheme,
        layout=layout,
        params=params,
        matrix=matrix,
        threads=threads,
        max_memory=max_memory,
    )


def build_keyword(
    pairs: Union[Mapping[Any, Any], Iterable[Tuple[Item, Item]]],
    out: Path,
    *,
    arity: Optional[int] = None,
    params: str = "ypir-1024",
    matrix: Optional[str] = None,
    threads: Optional[int] = None,
    max_memory: Optional[int] = None,
    progress: _progress.Progress = None,
) -> BuildReport:
    """Builds a keyword database file (values fetched by key; absent keys reported absent).

    ``pairs`` is a mapping or an iterable of ``(key, value)`` pairs of str or bytes, e.g.
    ``zip(frame["phone"], frame["name"])``; keys must be distinct. ``arity`` (3 or 4) is the
    number of filter slots per key (default: 3 below 100,000 keys, else 4).
    """
    return _progress.run(
        _obscura.build_keyword,
        progress,
        pairs,
        out,
        arity=arity,
        params=params,
        matrix=matrix,
        threads=threads,
        max_memory=max_memory,
    )


def build_merkle(
    leaves: Iterable[Item],
    out: Path,
    *,
    capacity: Optional[int] = None,
    params: str = "ypir-1024",
    matrix: Optional[str] = None,
    threads: Optional[int] = None,
    progress: _progress.Progress = None,
) -> BuildReport:
    """Builds an RFC 6962 Merkle tree of ``leaves`` (one str or bytes each) for private
    audit-path retrieval (TreePIR); the report holds the tree's root. ``capacity`` leaves room
    for that many leaves in all (rounded up to a power of two), which ``update`` appends."""
    return _progress.run(
        _obscura.build_merkle,
        progress,
        leaves,
        out,
        capacity=capacity,
        params=params,
        matrix=matrix,
        threads=threads,
    )


def update(
    db: Path,
    changes: Union[Path, Iterable[Union[Mapping[str, Any], Item]]],
    *,
    keep_patches: Optional[int] = None,
    progress: _progress.Progress = None,
) -> BuildReport:
    """Applies ``changes`` to the database file ``db`` as its next version, without a new
    setup: the file is replaced in one step, and nothing is written unless every change
    applies. ``changes`` is a change file (JSON lines, as ``obscura update`` reads) or an
    iterable of changes such as ``{"op": "set", "index": 7, "value": "new"}``,
    ``{"op": "append", "index": 1000, "value_hex": "00ff"}`` or ``{"op": "delete", "index": 3}``
    (a deleted record then reads as ``None``); a keyword database's are
    ``{"op": "upsert", "key": "k", "value": "v"}`` and ``{"op": "delete", "key": "k"}``
    (``key_hex`` for bytes). A Merkle tree grows by appended leaves: its
    changes are the new leaves (str or bytes, without line breaks; a file of one per line).
    Servers serve the new version once reloaded; clients holding one of the last
    ``keep_patches`` versions (16 unless given; 0 for none) catch up by a patch kept beside the
    file instead of downloading the whole setup."""
    if isinstance(changes, (str, PathLike)):
        with open(changes, "rb") as file:
            data = file.read()
    else:
        data = b"\n".join(_change_line(change) for change in changes)
    return _progress.run(_obscura.update, progress, db, data, keep_patches=keep_patches)


def _change_line(change: Union[Mapping[str, Any], Item]) -> bytes:
    """One line of a change file: a change as JSON, or a Merkle leaf's bytes."""
    if isinstance(change, Mapping):
        return json.dumps(change).encode()
    leaf = change.encode() if isinstance(change, str) else bytes(change)
    if b"\n" in leaf or leaf.endswith(b"\r"):
        raise InvalidInputError(f"a leaf holds a line break: {leaf[:40]!r}")
    return leaf


def psi_server(
    items: Iterable[Item],
    *,
    listen: Optional[str] = None,
    mailbox: Optional[Path] = None,
    session: Optional[str] = None,
    attempt: int = 1,
    protocol: str = "kkrt",
    both_learn: bool = False,
    timeout: float = 60.0,
    threads: Optional[int] = None,
    bucket_items: Optional[int] = None,
    spill_dir: Optional[Path] = None,
    progress: _progress.Progress = None,
    ready: Optional[Callable[[str], Any]] = None,
) -> PsiResult:
    """Runs the server's side of one PSI session: listens on ``listen`` (``"HOST:PORT"``; port
    0 picks a free one, which ``ready`` receives as ``"HOST:PORT"`` once listening), waits up to
    ``timeout`` seconds for the client, and intersects ``items`` with the client's.

    Without an open port, both parties can instead exchange the messages as files in a folder
    both reach: ``mailbox`` (the folder) and ``session`` (a name both pass; letters, digits,
    ``-``, ``_``) replace ``listen`` and ``connect``, and ``timeout`` bounds each wait for the
    peer's next file. Each ``attempt`` of a session runs once in a folder: rerun a failed one
    with the next attempt on both sides.

    The server learns the intersection only with ``both_learn`` (both parties must pass it).
    ``protocol`` is ``"kkrt"`` (OT extension), ``"rr22"`` (VOLE: the least traffic, about a
    fifth of KKRT's, for slow links), ``"rr22-malicious"`` (RR22 secure against a malicious
    peer; the client alone learns the intersection) or ``"ecdh"`` (elliptic curves: the
    slowest). ``bucket_items``
    streams the items through buckets of about that many items on disk (in ``spill_dir``), for sets
    larger than memory: ``items`` is then read once as it streams (a generator will do).
    Interoperates with ``obscura psi`` in another process.
    """
    return _progress.run(
        _obscura.run_psi,
        progress,
        items,
        role="server",
        protocol=protocol,
        listen=listen,
        mailbox=mailbox,
        session=session,
        attempt=attempt,
        both_learn=both_learn,
        timeout=timeout,
        threads=threads,
        bucket_items=bucket_items,
        spill_dir=spill_dir,
        ready=ready,
    )


def psi_client(
    items: Iterable[Item],
    *,
    connect: Optional[str] = None,
    mailbox: Optional[Path] = None,
    session: Optional[str] = None,
    attempt: int = 1,
    protocol: str = "kkrt",
    both_learn: bool = False,
    timeout: float = 60.0,
    threads: Optional[int] = None,
    bucket_items: Optional[int] = None,
    spill_dir: Optional[Path] = None,
    progress: _progress.Progress = None,
) -> PsiResult:
    """Runs the client's side of one PSI session: connects to the server at ``connect``
    (retrying until ``timeout`` seconds), intersects ``items`` with the server's, and returns
    the positions of ``items`` in the intersection (``result.intersection``). The options
    (``mailbox``, ``session`` and ``attempt`` instead of ``connect`` included) are those of
    :func:`psi_server`, and must match the server's."""
    return _progress.run(
        _obscura.run_psi,
        progress,
        items,
        role="client",
        protocol=protocol,
        connect=connect,
        mailbox=mailbox,
        session=session,
        attempt=attempt,
        both_learn=both_learn,
        timeout=timeout,
        threads=threads,
        bucket_items=bucket_items,
        spill_dir=spill_dir,
    )


__all__ = [
    "AuditPath",
    "Consistency",
    "BuildReport",
    "Client",
    "EcdhPsiClient",
    "EcdhPsiServer",
    "InvalidInputError",
    "MalformedDataError",
    "MemoryLimitError",
    "ObscuraError",
    "PeerError",
    "PeerTimeoutError",
    "PsiResult",
    "ServerError",
    "StorageError",
    "build_index",
    "build_keyword",
    "build_merkle",
    "psi_client",
    "psi_server",
    "update",
]
