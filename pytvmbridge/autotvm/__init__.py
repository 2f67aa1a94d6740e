"""Autotuning (AutoTVM's names): tasks, search spaces, tuners, measurement, logs, replay.

``tune(...)`` tunes a ``@kernel`` (with example inputs), a TC def, a template or an existing
task, logs every trial as a JSON line, and returns the best record; ``apply_history_best(log)``
then makes the best record of each workload the schedule used. See the modules: ``task``
(what is tuned), ``space`` (the knobs), ``tuner`` (the searches and the task scheduler),
``measure`` (trustworthy timings in worker processes), ``record`` (logs and replay),
``callback`` (TVM's ``log_to_file`` and ``progress_bar``), ``plot`` and ``ray_runner``.

TVM's classic template workflow runs as written for TVM: ``task = autotvm.task.create(name,
args=..., target="llvm")``, ``task.config_space``, ``autotvm.measure_option(builder=
autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=5))``, ``autotvm.tuner.RandomTuner(
task).tune(n_trial=..., measure_option=..., callbacks=[autotvm.callback.log_to_file(log)])``,
then ``with autotvm.apply_history_best(log):`` around the template's call.

Example:
    >>> import os, tempfile
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import autotvm
    >>> @tvm.kernel
    ... def scale(A):
    ...     return tvm.compute(A.shape, lambda i: A[i] * 3.0, name="B")
    >>> log = os.path.join(tempfile.mkdtemp(), "scale.json")
    >>> x = np.ones(4096, "float32")
    >>> best = autotvm.tune(scale, x, n_trial=2, log_file=log, n_parallel=1, progress=False)
    >>> with autotvm.apply_history_best(log):
    ...     float(scale(x)[0])
    3.0
"""

from __future__ import annotations

import os
from typing import Any

from ..error import TVMTypeError
from . import callback, record, space, task
from .measure import (
    ERROR_NAMES,
    LocalBuilder,
    LocalRunner,
    MeasureInput,
    MeasureOption,
    MeasureResult,
    measure_option,
)
from .plot import plot
from .record import ApplyHistoryBest, apply_history_best
from .space import ConfigEntity, ConfigSpace
from .task import (
    Task,
    auto_task,
    create,
    extract_from_kernel,
    extract_from_tc,
    get_config,
    template,
)
from .tuner import (
    EvolutionaryTuner,
    GridSearchTuner,
    RandomTuner,
    Tuner,
    XGBTuner,
    tune_tasks,
)

__all__ = [
    "ERROR_NAMES",
    "ApplyHistoryBest",
    "ConfigEntity",
    "ConfigSpace",
    "EvolutionaryTuner",
    "GridSearchTuner",
    "LocalBuilder",
    "LocalRunner",
    "MeasureInput",
    "MeasureOption",
    "MeasureResult",
    "RandomTuner",
    "Task",
    "Tuner",
    "XGBTuner",
    "apply_history_best",
    "auto_task",
    "callback",
    "create",
    "extract_from_kernel",
    "extract_from_tc",
    "extract_tasks",
    "get_config",
    "measure_option",
    "plot",
    "record",
    "space",
    "task",
    "template",
    "tune",
    "tune_tasks",
]


def extract_tasks(obj: Any, *example_inputs: Any, target: str = "llvm") -> list[Task]:
    """The tasks of a ``@kernel`` or TC def at ``example_inputs``' shapes, or of a list of
    tasks (returned as is). A kernel given another number of example inputs than it takes is
    a TypeError naming both.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import autotvm
        >>> @tvm.kernel
        ... def scale(A):
        ...     return tvm.compute(A.shape, lambda i: A[i] * 3.0, name="B")
        >>> [t.description for t in autotvm.extract_tasks(scale, np.ones(8, "float32"))]
        ['scale([8]:float32, [8]:float32)']
    """
    from ..kernel import Kernel

    if isinstance(obj, Task):
        return [obj]
    if isinstance(obj, (list, tuple)) and all(isinstance(t, Task) for t in obj):
        return list(obj)
    if isinstance(obj, Kernel):
        return extract_from_kernel(obj, *example_inputs)
    if type(obj).__name__ == "TcFunction":
        return extract_from_tc(obj, *example_inputs)
    raise TVMTypeError(
        "autotvm.tune takes a @kernel or a TC def (with example inputs), a Task or a list of "
        f"Tasks, got {type(obj).__name__}"
    )


def tune(
    obj: Any,
    *example_inputs: Any,
    n_trial: int = 64,
    tuner: Any = "evolutionary",
    log_file: str | os.PathLike[str] | None = None,
    early_stopping: int | None = None,
    measure_option: MeasureOption | dict[str, Any] | None = None,
    n_parallel: int | None = None,
    runner: Any = "local",
    seed: int | None = 0,
    progress: bool = True,
    resume: bool = True,
    verify: bool = True,
    callbacks: Any = (),
    si_prefix: str = "G",
) -> Any:
    """Tune ``obj`` (see ``extract_tasks``) for ``n_trial`` trials in total; returns the best
    record (one task) or the list of them. See ``Tuner.tune`` and ``tune_tasks`` for the
    arguments (``measure_option`` may be TVM's ``measure_option(builder=..., runner=...)``)."""
    tasks = extract_tasks(obj, *example_inputs)
    bests = tune_tasks(
        tasks,
        n_trial,
        tuner,
        log_file,
        early_stopping,
        measure_option,
        n_parallel,
        runner,
        seed,
        progress,
        resume,
        verify,
        callbacks=callbacks,
        si_prefix=si_prefix,
    )
    return bests[0] if len(bests) == 1 else bests
