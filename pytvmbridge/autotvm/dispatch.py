"""Where tuning meets the rest of pytvmbridge: ``@kernel(tune=N)``, kernels and TC defs built
under ``apply_history_best``, and ``tuning_n_trials``/``tuning_log_file`` options.

The hooks are small on purpose: ``kernel.py`` and ``tc.py`` call ``kernel_config`` and
``apply_config``/``tc_autotune``; the graph backend and ``pytvmbridge.torch.compile`` can call
``config_for(task, tuning_n_trials, tuning_log_file)`` for each operator they build.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> @tvm.kernel(tune=2)
    ... def twice(A):
    ...     return tvm.compute(A.shape, lambda i: A[i] * 2.0, name="B")
    >>> float(twice(np.ones(1024, "float32"))[0])  # tunes 2 candidates, then runs the best
    2.0
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import record
from .space import repair

__all__ = [
    "apply_config",
    "config_for",
    "kernel_config",
    "schedule_config",
    "tc_autotune",
    "tc_history_config",
    "tc_schedule",
    "tc_task_at",
]


def config_for(
    task: Any,
    tuning_n_trials: int = 0,
    tuning_log_file: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> Any:
    """The configuration to build ``task`` with: tuned now for ``tuning_n_trials`` trials
    (logged to ``tuning_log_file``, resumed from it) when that is positive, else the best
    record of the active ``apply_history_best`` context or of ``tuning_log_file``; ``None``
    means the default schedule."""
    from .tuner import tune_tasks

    if tuning_log_file is not None and tuning_log_file != "":
        # named as the caller's option (tune_tasks would name it log_file)
        record.check_log_path(tuning_log_file, "tuning_log_file")
    if tuning_n_trials and tuning_n_trials > 0:
        [best] = tune_tasks(
            [task], int(tuning_n_trials), log_file=tuning_log_file, progress=progress
        )
        return best["config"] if best is not None else None
    ctx = record.current() or record.context_for_option(tuning_log_file)
    return ctx.lookup(task) if ctx is not None else None


def kernel_config(kernel: Any, specs: Any) -> tuple[str | None, Any]:
    """For a ``@kernel`` variant about to be compiled for inputs of ``specs`` ((dtype, shape)
    pairs): ``(cache token, config)``; ``(None, None)`` when nothing is tuned."""
    n = getattr(kernel, "tune", 0) or 0
    log = getattr(kernel, "tuning_log_file", None)
    if not n and record.current() is None and not log:
        return None, None
    if not isinstance(kernel.schedule, str):
        return None, None
    from .task import kernel_task

    task = kernel_task(kernel, [(shape, dtype) for dtype, shape in specs])
    config = config_for(task, n, log)
    return (json.dumps(config, sort_keys=True) if config is not None else None), config


def apply_config(outputs: Any, target: str, config: Any) -> Any:
    """``config`` made valid for these outputs (a tuned point of the concrete shapes applied
    to a kernel compiled for symbolic ones: knobs the scheduler refuses here move to their
    nearest allowed value)."""
    from ..autoschedule import auto_schedule_space

    if config is None:
        return None
    return repair(lambda c: auto_schedule_space(list(outputs), target=target, config=c), config)[
        "default"
    ]


# TC v0.1.1's autotune keywords for its GPU tuner: accepted, no effect here.
_TC_TUNER_KEYWORDS = frozenset(
    {
        "options", "starting_options", "tuner_config", "crossover_rate", "mutation_rate",
        "number_elites", "threads", "gpus", "proto", "restore_from_proto", "restore_number",
        "log_generations", "tuner_min_launch_total_threads", "load_from_cache",
        "store_to_cache",
    }
)  # fmt: skip


def tc_autotune(tc_fn: Any, *inputs: Any, **kwargs: Any) -> Any:
    """TC's ``f.autotune(*inputs, ...)``: tunes the def at these inputs' sizes (``n_trial``, or
    TC's ``generations * pop_size``, default 8 trials; ``cache=`` or ``cache_filename=`` a log
    file name), then rebuilds the def with the best configuration found. Returns ``tc_fn``.
    TC's GPU tuner settings (``threads``, ``gpus``, ``crossover_rate``...) are accepted and
    have no effect; any other keyword is a TypeError."""
    from .task import extract_from_tc
    from .tuner import tune_tasks

    kwargs = dict(kwargs)
    settings = getattr(kwargs.get("tuner_config"), "settings", {})
    n_trial = kwargs.pop("n_trial", None)
    gens = kwargs.pop("generations", settings.get("generations"))
    pop = kwargs.pop("pop_size", settings.get("pop_size"))
    if n_trial is None:
        n_trial = gens * pop if gens and pop else 8
    cache = kwargs.pop("cache", None)
    log = kwargs.pop("log_file", None) or kwargs.pop("cache_filename", None)
    if isinstance(cache, (str, os.PathLike)):
        log = cache
    progress = kwargs.pop("progress", True)
    n_parallel = kwargs.pop("n_parallel", None)
    unknown = sorted(k for k in kwargs if k not in _TC_TUNER_KEYWORDS)
    if unknown:
        from ..error import TVMTypeError

        raise TVMTypeError(
            f"{tc_fn.name}.autotune() got an unexpected keyword argument {unknown[0]!r} "
            "(pytvmbridge's: n_trial, generations, pop_size, cache, cache_filename, log_file, "
            "n_parallel, progress)"
        )
    [task] = extract_from_tc(tc_fn, *inputs)
    [best] = tune_tasks([task], n_trial, log_file=log, progress=progress, n_parallel=n_parallel)
    if best is not None:
        tc_fn.build(tc_schedule(tc_fn, best["config"]))
    tc_fn.tuned_record = best
    return tc_fn


def tc_schedule(tc_fn: Any, config: Any) -> Any:
    """The automatic schedule of a TC def at a tuned configuration (made valid for the def's
    symbolic sizes, see ``apply_config``)."""
    from ..autoschedule import auto_schedule

    s = tc_fn.create_schedule()
    return auto_schedule(
        s, target=tc_fn.target, config=apply_config(tc_fn.outputs, tc_fn.target, config)
    )


def tc_task_at(tc_fn: Any, input_specs: Any) -> Any:
    """The tuning task of a TC def at inputs of ``input_specs`` ((shape, dtype) pairs), the
    outputs' shapes from the def's own size inference (nothing is run)."""
    from .task import Task, _TcRecipe

    out_shapes = tc_fn._fn.prepare([list(s) for s, _ in input_specs], [d for _, d in input_specs])
    specs = list(input_specs) + [
        (tuple(shape), str(t.dtype)) for shape, t in zip(out_shapes, tc_fn.outputs, strict=True)
    ]
    recipe = _TcRecipe(tc_fn._source, tc_fn.name)
    return Task(tc_fn.name, recipe, (), tc_fn.target, "auto", arg_shapes=specs)


def tc_history_config(tc_fn: Any, input_specs: Any) -> Any:
    """The configuration the active ``apply_history_best`` context has for a TC def called
    with inputs of ``input_specs``, or ``None`` (looked up once per context, def and sizes)."""
    ctx = record.current()
    if ctx is None:
        return None
    found = ctx.__dict__.setdefault("_tc_configs", {})
    key = (tc_fn._source, tc_fn.name, tc_fn.target, tuple(input_specs))
    if key not in found:
        found[key] = ctx.lookup(tc_task_at(tc_fn, input_specs))
    return found[key]


class _FixedTensors:
    """A recipe that returns the same tensors (a graph's fused subgraph): fine for the local
    runner (forked workers inherit them), not picklable for Ray."""

    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = tensors

    def __call__(self) -> list[Any]:
        return list(self.tensors)


def schedule_config(
    args: Any,
    target: str = "llvm",
    tuning_log_file: str | os.PathLike[str] | None = None,
    tuning_n_trials: int = 0,
    name: str = "subgraph",
    progress: bool = True,
) -> Any:
    """For a compiler that builds ``args`` (placeholders, then outputs) with ``auto_schedule``
    (the graph backend, ``pytvmbridge.torch.compile``): the configuration to pass as
    ``auto_schedule(..., config=...)``, tuned now for ``tuning_n_trials`` trials or looked up
    in ``tuning_log_file`` / the active ``apply_history_best``; ``None`` (the analytical
    schedule) when there is nothing, or when a size is symbolic.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge.autotvm.dispatch import schedule_config
        >>> A = tvm.placeholder((64,), name="A")
        >>> B = tvm.compute((64,), lambda i: A[i] + 1.0, name="B")
        >>> schedule_config([A, B]) is None  # no log, no trials: the analytical schedule
        True
    """
    from .task import Task

    if not tuning_n_trials and not tuning_log_file and record.current() is None:
        return None
    try:
        task = Task(name, _FixedTensors(list(args)), (), target, "auto")
    except ValueError:  # symbolic sizes: nothing to measure at
        return None
    return config_for(task, tuning_n_trials, tuning_log_file, progress)
