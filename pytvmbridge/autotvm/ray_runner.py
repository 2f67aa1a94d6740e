"""``runner="ray"``: candidates built as Ray tasks across a cluster, measured by one actor.

Ray is the engine (no home-made RPC): the task (a recipe, see ``task``) is sent to the
workers with Ray's cloudpickle. Per batch:

1. build: each candidate is instantiated, lowered (features) and compiled by a Ray task, all
   in parallel across the cluster; failures come back as error records;
2. measure: the candidates that built go to a ``_Measurer`` actor, one call each, one at a
   time (an actor runs its calls in order), after every build of the batch has finished, so no
   tuning work runs beside a measurement. The actor measures like the local runner (checked
   against the reference, repeats, cut short, a crash or hang isolated in its own worker
   process). It asks for the custom resource ``pytvmbridge_machine`` when the cluster has it
   (give each node ``resources={"pytvmbridge_machine": 1}`` so that one actor holds a
   machine), else one CPU.

Results stream back through ``ray.wait`` to the calling process, the one that writes the
log. Compiled code cannot travel between processes (modules are JIT-compiled in memory), so
the actor compiles each candidate again before timing it; the build tasks still filter out
the failures and give the features in parallel.

Without ``ray.is_initialized()``, a local instance is started (``ray.init(num_cpus=...,
include_dashboard=False)``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from .measure import (
    BUILD_ERROR,
    CRASH,
    INSTANTIATE_ERROR,
    OK,
    TIMEOUT,
    LocalRunner,
    MeasureOption,
    MeasureResult,
)

__all__ = ["RayRunner"]


_tasks: dict[bytes, Any] = {}  # unpickled tasks, per worker process


def _task(payload: bytes) -> Any:
    import hashlib

    import ray.cloudpickle as cp

    key = hashlib.sha256(payload).digest()
    if key not in _tasks:
        _tasks[key] = cp.loads(payload)
    return _tasks[key]


def _build(payload: bytes, config: Any) -> tuple[int, str, list[float], float]:
    """A Ray task: compile one candidate; (error code, message, features, seconds)."""
    from ..build import build
    from .features import loop_features
    from .measure import _describe

    task = _task(payload)
    start = time.perf_counter()
    try:
        s, args = task.instantiate(config)
        feats = loop_features(s, args)
    except Exception as err:
        return INSTANTIATE_ERROR, _describe(err), [], 0.0
    try:
        build(s, args, target=task.target)
    except Exception as err:
        return BUILD_ERROR, _describe(err), feats, 0.0
    return OK, "", feats, time.perf_counter() - start


class _Measurer:
    """The measuring actor: a ``LocalRunner`` with one worker, on its node."""

    def __init__(self, payload: bytes, option: MeasureOption, seed: int) -> None:
        self.runner = LocalRunner(_task(payload), n_parallel=1, option=option, seed=seed)

    def measure(self, config: Any, best: float | None) -> MeasureResult:
        [result] = self.runner.run([config], best)
        return result

    def close(self) -> None:
        self.runner.close()


def _dumps(task: Any) -> bytes:
    """The task pickled with its code by value when its module is not pytvmbridge's (a script,
    a test file: the workers may not be able to import it)."""
    import ray.cloudpickle as cp

    registered = []
    for fn in (task.func, getattr(task.func, "fn", None)):
        name = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", None)
        if name and not name.startswith("pytvmbridge") and name in sys.modules:
            try:
                cp.register_pickle_by_value(sys.modules[name])
                registered.append(sys.modules[name])
            except (ValueError, TypeError):
                pass
    try:
        return cp.dumps(task)
    finally:
        for module in registered:
            cp.unregister_pickle_by_value(module)


class RayRunner:
    """``run(configs, best)`` as ``LocalRunner``'s, on a Ray cluster (see the module doc)."""

    def __init__(
        self,
        task: Any,
        n_parallel: int | None = None,
        option: MeasureOption | None = None,
        seed: int = 0,
    ) -> None:
        try:
            import ray
        except ImportError as err:
            raise ImportError("runner='ray' needs ray: pip install ray") from err
        if not ray.is_initialized():
            ray.init(num_cpus=n_parallel or 2, include_dashboard=False, log_to_driver=False)
        self.ray = ray
        self.task = task
        self.option = option or MeasureOption()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.n_parallel = max(1, n_parallel or cpus)
        self.payload = _dumps(task)
        # A build task whose process dies is a CRASH record, not retried.
        self._build = ray.remote(num_cpus=1, max_retries=0)(_build)
        resources = ray.cluster_resources()
        actor = ray.remote(_Measurer)
        if resources.get("pytvmbridge_machine"):
            actor = actor.options(num_cpus=0, resources={"pytvmbridge_machine": 1})
        else:
            actor = actor.options(num_cpus=0)
        self.measurer = actor.remote(self.payload, self.option, seed)

    def run(self, configs: list[Any], best: float | None = None) -> list[MeasureResult]:
        ray = self.ray
        results = [MeasureResult(config=c) for c in configs]
        pending = {self._build.remote(self.payload, c): k for k, c in enumerate(configs)}
        built = []
        while pending:  # phase 1: builds, streamed back as they finish
            done, _ = ray.wait(list(pending), num_returns=1, timeout=self.option.timeout)
            if not done:
                for ref, k in pending.items():
                    ray.cancel(ref, force=True)
                    results[k].error = TIMEOUT
                    results[k].error_msg = f"building took longer than {self.option.timeout:g} s"
                break
            for ref in done:
                k = pending.pop(ref)
                try:
                    code, text, feats, build_s = ray.get(ref)
                except Exception as err:  # the build task's process died
                    code, text, feats, build_s = CRASH, f"build task failed: {err}", [], 0.0
                r = results[k]
                r.error, r.error_msg, r.features, r.build_s = code, text, feats, build_s
                if code == OK:
                    built.append(k)
        for k in sorted(built):  # phase 2: one measurement at a time
            features, build_s = results[k].features, results[k].build_s
            results[k] = ray.get(self.measurer.measure.remote(configs[k], best))
            results[k].features, results[k].build_s = features, build_s
            r = results[k]
            if r.error == OK and not r.cut_short and (best is None or r.cost < best):
                best = r.cost
        return results

    def close(self) -> None:
        try:
            self.ray.get(self.measurer.close.remote())
            self.ray.kill(self.measurer)
        except Exception:
            pass
