"""Type stubs of the extension module `obscura._obscura` (use it through `obscura`)."""

import pathlib
from os import PathLike
from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple, Union, final

_Item = Union[str, bytes, bytearray, memoryview]
_Path = Union[str, PathLike[str]]
_ProgressCallback = Callable[[str, int, int], None]

__version__: str
__all__ = [
    "__version__",
    "build_index",
    "build_keyword",
    "build_merkle",
    "update",
    "run_psi",
    "Client",
    "BuildReport",
    "AuditPath",
    "Consistency",
    "PsiResult",
    "EcdhPsiServer",
    "EcdhPsiClient",
]

@final
class BuildReport:
    """What a build wrote."""

    path: pathlib.Path
    kind: str
    items: int
    version: int
    file_bytes: int
    setup_bytes: int
    setup_sha256: str
    root: Optional[str]

@final
class AuditPath:
    """A Merkle leaf's audit path, fetched privately and verified against the root."""

    leaf: int
    leaves: int
    leaf_hash: str
    path: List[str]
    root: str

@final
class Consistency:
    """A verified consistency proof: the tree of `first` leaves is a prefix of the one served."""

    first: int
    second: int
    root: str
    proof: List[str]

@final
class Client:
    """A client of one database: a local file, or a database served by `obscura serve`."""

    @staticmethod
    def open(path: _Path) -> Client: ...
    @staticmethod
    def connect(
        url: str,
        db: str,
        *,
        setup_sha256: Optional[Union[str, bytes]] = None,
        cache_dir: Optional[Union[_Path, bool]] = None,
        token: Optional[str] = None,
        ca_cert: Optional[_Path] = None,
        timeout: float = 300.0,
        max_setup_bytes: int = ...,
        max_query_bytes: int = ...,
    ) -> Client: ...
    @property
    def name(self) -> str: ...
    @property
    def lookup(self) -> str: ...
    def get(self, index: int) -> Optional[bytes]: ...
    def get_key(self, key: _Item) -> Optional[bytes]: ...
    def audit_path(
        self,
        leaf: int,
        *,
        leaf_data: Optional[_Item] = None,
        leaf_hash: Optional[Union[str, bytes]] = None,
        root: Optional[Union[str, bytes]] = None,
    ) -> AuditPath: ...
    def consistency(self, first: int, first_root: Union[str, bytes]) -> Consistency: ...

@final
class PsiResult:
    """What a PSI session did, and the intersection when this party learns it."""

    intersection: Optional[List[int]]
    intersection_size: Optional[int]
    items: int
    duplicates_dropped: int
    peer_items: int
    bytes_sent: int
    bytes_received: int
    seconds: float
    buckets: Optional[int]

@final
class EcdhPsiServer:
    """The server of ECDH-PSI as messages: one key; one setup serves many clients."""

    def __new__(cls, reveal_intersection: bool = True) -> EcdhPsiServer: ...
    @property
    def reveal_intersection(self) -> bool: ...
    def create_setup_message(
        self, items: Iterable[_Item], num_client_inputs: int, fpr: float = ...
    ) -> bytes: ...
    def process_request(self, request: bytes) -> bytes: ...

@final
class EcdhPsiClient:
    """The client of ECDH-PSI as messages."""

    def __new__(cls) -> EcdhPsiClient: ...
    def create_request(self, items: Iterable[_Item]) -> bytes: ...
    def get_intersection(self, setup: bytes, response: bytes) -> List[int]: ...
    def get_intersection_size(self, setup: bytes, response: bytes) -> int: ...

def build_index(
    records: Union[bytes, Iterable[_Item]],
    out: _Path,
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
    progress: Optional[_ProgressCallback] = None,
) -> BuildReport: ...
def build_keyword(
    pairs: Union[Mapping[Any, Any], Iterable[Tuple[_Item, _Item]]],
    out: _Path,
    *,
    arity: Optional[int] = None,
    params: str = "ypir-1024",
    matrix: Optional[str] = None,
    threads: Optional[int] = None,
    max_memory: Optional[int] = None,
    progress: Optional[_ProgressCallback] = None,
) -> BuildReport: ...
def build_merkle(
    leaves: Iterable[_Item],
    out: _Path,
    *,
    capacity: Optional[int] = None,
    params: str = "ypir-1024",
    matrix: Optional[str] = None,
    threads: Optional[int] = None,
    progress: Optional[_ProgressCallback] = None,
) -> BuildReport: ...
def update(
    db: _Path,
    changes: bytes,
    *,
    keep_patches: Optional[int] = None,
    progress: Optional[_ProgressCallback] = None,
) -> BuildReport: ...
def run_psi(
    items: Iterable[_Item],
    *,
    role: str,
    protocol: str = "kkrt",
    listen: Optional[str] = None,
    connect: Optional[str] = None,
    mailbox: Optional[_Path] = None,
    session: Optional[str] = None,
    attempt: int = 1,
    both_learn: bool = False,
    timeout: float = 60.0,
    threads: Optional[int] = None,
    bucket_items: Optional[int] = None,
    spill_dir: Optional[_Path] = None,
    progress: Optional[_ProgressCallback] = None,
    ready: Optional[Callable[[str], Any]] = None,
) -> PsiResult: ...
