"""Progress bars for work that can take more than a second: long builds, graph compilation
(``torch.compile`` with this backend, ``pytvmbridge.torch.compile``), schedule sweeps and
tuning.

A bar appears only once the work has lasted ``delay`` seconds (one second by default), so the
usual 20 ms build never prints anything. Bars come from ``tqdm.auto``: a widget in Jupyter
(when ipywidgets is installed), text on stderr elsewhere. A bar is drawn where someone watches:
in a Jupyter/IPython kernel or when stderr is a terminal; output sent to a log file or a pipe
gets none (a redrawn bar is a run of carriage returns there). ``PYTVMBRIDGE_PROGRESS=1`` shows
bars everywhere, ``PYTVMBRIDGE_PROGRESS=0`` nowhere; without tqdm nothing is shown. The work
runs the same either way.

Example:
    >>> from pytvmbridge import progress
    >>> [x * x for x in progress.track(range(4), desc="squares")]
    [0, 1, 4, 9]
    >>> with progress.busy("waiting"):
    ...     pass
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .error import TVMTypeError, TVMValueError

T = TypeVar("T")

#: Seconds a piece of work runs before its bar appears.
DEFAULT_DELAY = 1.0
# How often an open "busy" bar refreshes its elapsed time.
_BUSY_REFRESH = 0.25


_tqdm_installed: bool | None = None


def enabled() -> bool:
    """Whether bars may be shown: tqdm is installed and ``PYTVMBRIDGE_PROGRESS`` is not ``0``.

    Example:
        >>> import os
        >>> from pytvmbridge import progress
        >>> os.environ["PYTVMBRIDGE_PROGRESS"] = "0"; progress.enabled()
        False
        >>> del os.environ["PYTVMBRIDGE_PROGRESS"]
    """
    if os.environ.get("PYTVMBRIDGE_PROGRESS", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    global _tqdm_installed
    if _tqdm_installed is None:
        # Looked up, not imported: every build asks, on whatever thread builds, and a thread
        # inside tqdm's first import holds its module lock; the child of a fork() taken then
        # would wait on that lock forever in its own first build. tqdm is imported only when a
        # bar is actually shown.
        _tqdm_installed = importlib.util.find_spec("tqdm") is not None
    return _tqdm_installed


def _watched(file: Any) -> bool:
    """Whether a bar written to ``file`` (None: stderr) would be seen as a bar: an explicit
    file, ``PYTVMBRIDGE_PROGRESS=1``, a Jupyter/IPython kernel, or a terminal."""
    if file is not None:
        return True
    if os.environ.get("PYTVMBRIDGE_PROGRESS", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def _tqdm_class() -> Any:
    """tqdm.auto's class, chosen now (in a notebook, its kernel is known only at run time).
    Without ipywidgets tqdm falls back to text and warns; the text bar is what we want then."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm
    return tqdm


def _check_delay(delay: Any, what: str) -> float:
    if isinstance(delay, bool) or not isinstance(delay, (int, float)):
        raise TVMTypeError(f"{what}: delay must be a number of seconds, got {delay!r}")
    if not 0 <= delay < float("inf"):
        raise TVMValueError(f"{what}: delay must be >= 0 seconds, got {delay}")
    return float(delay)


def track(
    iterable: Iterable[T],
    desc: str | None = None,
    total: int | None = None,
    unit: str = "it",
    delay: float = DEFAULT_DELAY,
    file: Any = None,
) -> Iterator[T]:
    """Iterate over ``iterable``, with a bar once the loop has run ``delay`` seconds.

    ``total`` defaults to ``len(iterable)`` when it has one. ``file`` sends a text bar
    elsewhere than stderr (tests use it).

    Example:
        >>> from pytvmbridge import progress
        >>> sum(progress.track([1, 2, 3], desc="adding", unit="number"))
        6
    """
    delay = _check_delay(delay, "track")
    if not enabled() or not _watched(file):
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {"desc": desc, "total": total, "unit": unit, "delay": delay}
    if file is not None:
        kwargs["file"] = file
    with _tqdm_class()(**kwargs) as bar:
        for item in iterable:
            yield item
            bar.update(1)


@contextmanager
def busy(desc: str, delay: float = DEFAULT_DELAY, file: Any = None) -> Iterator[None]:
    """Show ``desc`` with the elapsed time while the block runs, once it has run ``delay``
    seconds: for one long call that reports no steps (a build, a graph compile).

    The bar is drawn from a helper thread, so the block must release the GIL while it works
    (compiling does); a block shorter than ``delay`` shows nothing and starts no bar.

    Example:
        >>> from pytvmbridge import progress
        >>> with progress.busy("compiling gemm"):
        ...     result = 6 * 7
        >>> result
        42
    """
    delay = _check_delay(delay, "busy")
    if not enabled() or not _watched(file) or getattr(_busy_state, "active", False):
        # (inside another busy block, a graph compile's builds: the outer bar speaks for them)
        yield
        return
    _busy_state.active = True
    try:
        yield from _busy_bar(desc, delay, file)
    finally:
        _busy_state.active = False


_busy_state = threading.local()  # whether this thread is inside a busy() block with a bar


def _busy_bar(desc: str, delay: float, file: Any) -> Iterator[None]:
    done = threading.Event()
    start = time.perf_counter()

    def show() -> None:
        if done.wait(delay):
            return
        kwargs: dict[str, Any] = {"desc": desc, "bar_format": "{desc}: {elapsed}", "total": None}
        if file is not None:
            kwargs["file"] = file
        bar = _tqdm_class()(**kwargs)
        # tqdm counts elapsed time from its own creation, on its own clock: move its start back
        # to the block's start.
        bar.start_t -= time.perf_counter() - start
        try:
            while not done.wait(_BUSY_REFRESH):
                bar.refresh()
        finally:
            bar.close()

    watcher = threading.Thread(target=show, name="pytvmbridge-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


__all__ = ["DEFAULT_DELAY", "busy", "enabled", "track"]
