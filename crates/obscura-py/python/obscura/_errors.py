"""The exceptions Obscura raises: every one derives from :class:`ObscuraError`.

The classes also derive from the built-in exception that fits (``ValueError``, ``OSError``,
``MemoryError``, ``TimeoutError``), so code that catches those keeps working.
"""


class ObscuraError(Exception):
    """Base class of every error Obscura raises, with the library's message."""


class InvalidInputError(ObscuraError, ValueError):
    """An argument or the data given is not valid (an index out of range, no records, options
    that do not fit together)."""


class MalformedDataError(ObscuraError, ValueError):
    """A message, answer or database file is not valid: corrupted, truncated, of another
    database, or made by an incompatible version."""


class StorageError(ObscuraError, OSError):
    """A file could not be read or written."""


class MemoryLimitError(ObscuraError, MemoryError):
    """A build was refused before it started because it needs more memory than it may use."""


class ServerError(ObscuraError):
    """A PIR server could not be reached, refused the request, or answered wrongly."""


class PeerError(ObscuraError):
    """The PSI peer could not be reached, runs incompatible settings, or broke the protocol."""


class PeerTimeoutError(PeerError, TimeoutError):
    """The PSI peer did not connect, answer or read within the time limit."""


__all__ = [
    "ObscuraError",
    "InvalidInputError",
    "MalformedDataError",
    "StorageError",
    "MemoryLimitError",
    "ServerError",
    "PeerError",
    "PeerTimeoutError",
]
