"""Progress bars for long calls: tqdm bars on stderr when tqdm is installed, one per stage."""

from typing import Any, Callable, Optional, TypeVar, Union

ProgressCallback = Callable[[str, int, int], None]
Progress = Union[bool, None, ProgressCallback]
T = TypeVar("T")


class _TqdmBars:
    """A progress callback that draws one tqdm bar per stage, closed when the stage changes
    or the call ends."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._bar: Any = None
        self._stage: Optional[str] = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._bar is None or stage != self._stage or total != self._bar.total:
            self.close()
            self._bar = self._tqdm(total=total, desc=stage, leave=False)
            self._stage = stage
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def callback(progress: Progress) -> Optional[ProgressCallback]:
    """The callback for a call's ``progress`` argument: ``None`` (the default) draws tqdm bars
    when tqdm is installed, ``False`` draws nothing, a callable is called with
    ``(stage, done, total)``."""
    if progress is False:
        return None
    if progress is None or progress is True:
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped]
        except ImportError:
            return None
        return _TqdmBars(tqdm)
    if not callable(progress):
        raise TypeError("progress must be None, True, False or a callable (stage, done, total)")
    return progress


def run(call: Callable[..., T], progress: Progress, *args: Any, **kwargs: Any) -> T:
    """Runs ``call`` with the progress callback of ``progress``, closing its bars afterwards."""
    reporter = callback(progress)
    try:
        return call(*args, progress=reporter, **kwargs)
    finally:
        if isinstance(reporter, _TqdmBars):
            reporter.close()
