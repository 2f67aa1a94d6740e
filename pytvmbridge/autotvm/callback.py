"""TVM's tuning callbacks: ``log_to_file`` and ``progress_bar``, for ``Tuner.tune(callbacks=...)``.

A callback is any function ``callback(tuner, inputs, results)``; the tuner calls it after each
measured batch, as TVM does, with the batch's ``MeasureInput`` (target, task, configuration)
and ``MeasureResult`` (costs in seconds, ``error_no``, ``timestamp``...) lists.
``log_to_file(path)`` appends pytvmbridge's JSON-lines records, which ``apply_history_best``
reads; the verification a tuning run ends with (see ``Tuner.verify``) is written there too, so
that the log holds the choice ``tune`` returned.

Example:
    >>> import os, tempfile
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import autotvm
    >>> def add(n):
    ...     A = tvm.placeholder((n,), name="A")
    ...     return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]
    >>> task = autotvm.auto_task(add, (4096,))
    >>> log = os.path.join(tempfile.mkdtemp(), "add.json")
    >>> seen = []
    >>> best = autotvm.RandomTuner(task).tune(
    ...     n_trial=2, n_parallel=1, progress=False, verify=False,
    ...     callbacks=[autotvm.callback.log_to_file(log),
    ...                lambda tuner, inputs, results: seen.extend(r.error_no for r in results)])
    >>> seen, len(list(autotvm.record.load(log)))
    ([0, 0], 2)
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

from . import record

__all__ = ["log_to_file", "progress_bar"]

# TVM's: with this logger at DEBUG, the tuner's own lines replace the progress bar
logger = logging.getLogger("autotvm")

# TVM's SI prefixes (` ` for none), smallest first, a factor of 1000 apart
_SI_PREFIXES = "yzafpn\u00b5m kMGTPEZY"


def check_si_prefix(si_prefix: Any) -> None:
    """Raises a ValueError naming the choices where ``si_prefix`` is not one of TVM's."""
    if not (isinstance(si_prefix, str) and len(si_prefix) == 1 and si_prefix in _SI_PREFIXES):
        from ..error import TVMValueError

        raise TVMValueError(f"si_prefix must be one of {list(_SI_PREFIXES)}, got {si_prefix!r}")


def _scaled(flops: float, si_prefix: str) -> float:
    exponent = _SI_PREFIXES.index(si_prefix) - _SI_PREFIXES.index(" ")
    return flops / 10.0 ** (3 * exponent)


class _LogToFile:
    """The callback ``log_to_file`` returns (TVM's is a closure; here the tuner also hands it
    the records of its final verification, ``write_records``)."""

    def __init__(self, file_out: str | os.PathLike[str] | IO[str]) -> None:
        self.file_out = file_out

    def write_records(self, records: Sequence[dict[str, Any]]) -> None:
        if isinstance(self.file_out, (str, os.PathLike)):
            record.append(self.file_out, records)
        else:
            import json

            for r in records:
                self.file_out.write(json.dumps(r, sort_keys=True) + "\n")
            self.file_out.flush()

    def __call__(self, tuner: Any, inputs: Sequence[Any], results: Sequence[Any]) -> None:
        self.write_records(
            [record.from_result(inp.task, res) for inp, res in zip(inputs, results, strict=True)]
        )

    def __repr__(self) -> str:
        return f"log_to_file({self.file_out!r})"


def log_to_file(file_out: str | os.PathLike[str] | IO[str], protocol: str = "json") -> _LogToFile:
    """TVM's ``callback.log_to_file``: a callback that appends each measured batch to
    ``file_out`` (a path, or an open text file) as pytvmbridge's JSON-lines records
    (``protocol`` "json" only), for ``apply_history_best``, ``record.load_from_file`` and a
    later ``tune(..., log_file=...)`` to resume from.

    Example:
        >>> from pytvmbridge import autotvm
        >>> autotvm.callback.log_to_file("matmul.log")
        log_to_file('matmul.log')
    """
    if protocol != "json":
        from ..error import TVMValueError

        raise TVMValueError(
            f"log protocol must be 'json' (pytvmbridge's logs are JSON lines), got {protocol!r}"
        )
    if isinstance(file_out, (str, os.PathLike)):
        from .tuner import _check_log_file

        _check_log_file(file_out)  # a directory or an unwritable path: now, not after a batch
    elif not hasattr(file_out, "write"):
        from ..error import TVMTypeError

        raise TVMTypeError(
            f"log_to_file takes a path or an open text file, got {type(file_out).__name__}"
        )
    return _LogToFile(file_out)


class _ProgressBar:
    """The callback ``progress_bar`` returns (see there)."""

    def __init__(self, total: int, prefix: str, si_prefix: str, out: IO[str] | None) -> None:
        self.total, self.prefix, self.si_prefix = total, prefix, si_prefix
        self.out = out
        self.count = 0
        self.cur_flops = 0.0
        self.best_flops = 0.0
        self.start = time.time()
        self._shown = False

    def __call__(self, tuner: Any, inputs: Sequence[Any], results: Sequence[Any]) -> None:
        self.count += len(inputs)
        flops = 0.0
        for inp, res in zip(inputs, results, strict=True):
            if res.error_no == 0 and res.costs:
                flops = float(getattr(inp.task, "flop", 0.0)) / (sum(res.costs) / len(res.costs))
        self.cur_flops = flops
        best = getattr(tuner, "best_flops", 0.0)
        self.best_flops = best if math.isfinite(best) else 0.0
        # As TVM: not while the "autotvm" logger prints every trial (DEBUG)
        if logger.level < logging.DEBUG:
            out = self.out or sys.stdout
            unit = self.si_prefix.strip()
            out.write(
                f"\r{self.prefix} Current/Best: {_scaled(self.cur_flops, self.si_prefix):7.2f}/"
                f"{_scaled(self.best_flops, self.si_prefix):7.2f} {unit}FLOPS | Progress: "
                f"({self.count}/{self.total}) | {time.time() - self.start:.2f} s"
            )
            out.flush()
            self._shown = True

    def close(self) -> None:
        """Ends the bar's line (TVM writes " Done." when its callback is dropped)."""
        if self._shown:
            out = self.out or sys.stdout
            out.write(" Done.\n")
            out.flush()
            self._shown = False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: stdout may be gone
            pass


def progress_bar(
    total: int, prefix: str = "", si_prefix: str = "G", out: IO[str] | None = None
) -> _ProgressBar:
    """TVM's ``callback.progress_bar``: a callback that rewrites one line on ``out`` (standard
    output) after each batch: ``<prefix> Current/Best: <FLOPS>/<FLOPS> GFLOPS | Progress:
    (done/total) | <seconds> s`` (the unit per ``si_prefix``), and " Done." at the end of the
    tuning run. Given to a tuner, it stands in for the tuner's own progress bar.

    Example:
        >>> import io
        >>> from pytvmbridge import autotvm
        >>> bar = autotvm.callback.progress_bar(10, prefix="[Task 1/1]", out=io.StringIO())
        >>> bar.total, bar.count
        (10, 0)
    """
    check_si_prefix(si_prefix)
    return _ProgressBar(total, prefix, si_prefix, out)
