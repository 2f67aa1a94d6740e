"""Search spaces: the knobs a tuner turns, as JSON-able configurations.

Two kinds of space, one interface (``default``, ``sample``, ``mutate``, ``crossover``, ``grid``,
``canonical``, ``vector``):

- ``AutoSpace``: the automatic scheduler's own decisions (``auto_schedule_space``): tile rows
  and vectors, packing, loop order, parallel depth, unrolling... A configuration is the
  ``{stage: {knob: value}}`` point that ``auto_schedule(config=...)`` applies. The space is
  path-dependent (the tile rows allowed depend on the tile vectors chosen): ``canonical``
  repairs a point by moving a knob the scheduler refuses to its nearest allowed value.
- ``ConfigSpace``: an AutoTVM template's knobs (``cfg.define_split``, ``define_knob``,
  ``define_reorder``), a configuration is ``{knob: value}`` (a split's factors, a knob's
  value, a reorder's permutation).

Example:
    >>> import random
    >>> from pytvmbridge.autotvm.space import ConfigSpace
    >>> cfg = ConfigSpace()
    >>> cfg.define_knob("unroll", [0, 1])
    >>> cfg.define_split("tile", 16, num_outputs=2)
    >>> len(cfg), cfg.default()
    (10, {'unroll': 0, 'tile': [16, 1]})
    >>> cfg.canonical(cfg.sample(random.Random(0))) in list(cfg.grid())
    True
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..error import TVMTypeError, TVMValueError

__all__ = [
    "AutoSpace",
    "ConfigEntity",
    "ConfigSpace",
    "KnobEntity",
    "ReorderEntity",
    "SplitEntity",
]

Config = dict[str, Any]


# --- template knobs ---------------------------------------------------------------------------


class SplitEntity:
    """A chosen split: ``size`` lists the factors outermost first (their product covers the
    extent). ``apply(s, stage, axis)`` splits ``axis`` into ``len(size)`` loops and returns them.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((64,), name="A")
        >>> B = tvm.compute((64,), lambda i: A[i] + 1, name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> [str(a.var) for a in SplitEntity([4, 4, 4]).apply(s, B, B.op.axis[0])]
        ['i.outer.outer', 'i.outer.inner', 'i.inner']
    """

    def __init__(self, size: Sequence[int]) -> None:
        self.size = list(size)

    def apply(self, s: Any, stage: Any, axis: Any) -> list[Any]:
        stage = s[stage] if not hasattr(stage, "split") else stage
        axes = []
        for factor in reversed(self.size[1:]):
            axis, inner = stage.split(axis, factor=int(factor))
            axes.append(inner)
        axes.append(axis)
        return list(reversed(axes))

    @property
    def val(self) -> list[int]:
        return self.size

    def __repr__(self) -> str:
        return f"SplitEntity({self.size})"


class KnobEntity:
    """A chosen value of ``define_knob``: ``.val``."""

    def __init__(self, val: Any) -> None:
        self.val = val

    def __repr__(self) -> str:
        return f"KnobEntity({self.val!r})"


class ReorderEntity:
    """A chosen loop order: ``perm`` indexes the axes given to ``define_reorder``;
    ``apply(s, stage, axes)`` reorders them and returns them in the new order."""

    def __init__(self, perm: Sequence[int]) -> None:
        self.perm = list(perm)

    def apply(self, s: Any, stage: Any, axes: Sequence[Any]) -> list[Any]:
        stage = s[stage] if not hasattr(stage, "reorder") else stage
        ordered = [axes[p] for p in self.perm]
        stage.reorder(*ordered)
        return ordered

    @property
    def val(self) -> list[int]:
        return self.perm

    def __repr__(self) -> str:
        return f"ReorderEntity({self.perm})"


def _extent(name: str, axis_or_int: Any) -> int:
    """The constant extent of ``axis_or_int`` (an IterVar or an int), checked: a knob over a
    negative extent has no meaning, and a bool or a float is a mistake, not a loop length."""
    if isinstance(axis_or_int, bool):
        raise TVMTypeError(
            f"define_split '{name}': axis must be an IterVar or an int extent, got {axis_or_int!r}"
        )
    if isinstance(axis_or_int, numbers.Integral):
        value = int(axis_or_int)
    else:
        dom = getattr(axis_or_int, "dom", None)
        extent = getattr(dom, "extent", None)
        value = getattr(extent, "value", None)
        if not isinstance(value, int):
            raise TVMValueError(
                f"define_split '{name}': the axis must have a constant extent (or pass an int), "
                f"got {axis_or_int!r}"
            )
    if value < 0:
        raise TVMValueError(f"define_split '{name}': axis extent must be >= 0, got {value}")
    return value


def _check_int(name: str, what: str, value: Any, low: int) -> int:
    """``value`` as an int >= ``low``: a TypeError for anything but an integer (a float or a
    string here recursed without end or failed to compare deep inside the factorization), a
    ValueError below ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TVMTypeError(
            f"define_split '{name}': {what} must be an integer >= {low}, "
            f"got {type(value).__name__} {value!r}"
        )
    if value < low:
        raise TVMValueError(
            f"define_split '{name}': {what} must be an integer >= {low}, got {value}"
        )
    return int(value)


def _factorizations(n: int, parts: int, max_factor: int | None, power2: bool) -> list[list[int]]:
    """Ways to write ``n`` as ``parts`` factors (outermost first; the outermost is what is left,
    so non-dividing powers of two are allowed with ``power2``). An empty axis (``n == 0``, a
    template over an empty tensor) has one way, every factor 1: its loops run no iteration
    whatever the split, and each factor is still a valid ``split(factor=...)``."""
    if n == 0:
        return [[1] * parts]
    if parts == 1:
        return [[n]]
    if power2:
        inner_choices = [2**e for e in range(0, max(1, n).bit_length()) if 2**e <= n]
    else:
        inner_choices = [f for f in range(1, n + 1) if n % f == 0]
    if max_factor is not None:
        inner_choices = [f for f in inner_choices if f <= max_factor]
    out = []
    for f in inner_choices:
        rest = n // f if n % f == 0 else math.ceil(n / f)
        for head in _factorizations(rest, parts - 1, max_factor, power2):
            out.append([*head, f])
    return out


def _check_name(method: str, name: Any) -> None:
    # the name keys the knob in every log record: a string, as JSON keys are
    if not isinstance(name, str) or not name:
        raise TVMTypeError(f"{method}: the knob name must be a non-empty string, got {name!r}")


def _permutation(name: str, candidate: Any, n: int) -> list[int]:
    """``candidate`` as a list of axis indices, checked to be an order of all ``n`` axes: one
    that is not (an index out of range, an axis repeated or left out) failed only when a
    tuner applied it, as an IndexError or a schedule error deep in the template."""
    if isinstance(candidate, (str, bytes)) or not isinstance(candidate, Iterable):
        raise TVMTypeError(
            f"define_reorder '{name}': each candidate must be a list of axis indices, "
            f"got {candidate!r}"
        )
    perm = list(candidate)
    if any(isinstance(p, bool) or not isinstance(p, numbers.Integral) for p in perm) or sorted(
        int(p) for p in perm
    ) != list(range(n)):
        raise TVMValueError(
            f"define_reorder '{name}': candidate {perm!r} is not an order of the {n} axes "
            f"(each index 0..{n - 1} once)"
        )
    return [int(p) for p in perm]


class ConfigSpace:
    """The knobs of an AutoTVM template, collected while it runs (see ``template``).

    While the space is being defined, ``cfg[name]`` is the knob's first candidate; a tuner
    then runs the template with a ``ConfigEntity`` (same methods, chosen values).
    """

    def __init__(self) -> None:
        self.knobs: dict[str, list[Any]] = {}
        self.kinds: dict[str, str] = {}

    # defining
    def define_split(
        self,
        name: str,
        axis: Any,
        num_outputs: int = 2,
        policy: str = "factors",
        max_factor: int | None = None,
    ) -> None:
        """Candidate splits of ``axis`` (an IterVar or an extent) into ``num_outputs`` loops:
        ``policy="factors"`` (exact divisors) or ``"power2"`` (powers of two, guarded), inner
        factors at most ``max_factor``. An axis of extent 0 has one candidate, all factors 1.
        Bad arguments are refused here, naming the knob (not later, when a point is read)."""
        _check_name("define_split", name)
        if policy not in ("factors", "power2"):
            raise TVMValueError(
                f"define_split policy must be 'factors' or 'power2', got {policy!r}"
            )
        parts = _check_int(name, "num_outputs", num_outputs, 1)
        if max_factor is not None:
            # factor 1 is always a candidate, so any max_factor >= 1 leaves one
            max_factor = _check_int(name, "max_factor", max_factor, 1)
        sizes = _factorizations(_extent(name, axis), parts, max_factor, policy == "power2")
        self._define(name, "split", sizes)

    def define_knob(self, name: str, candidates: Sequence[Any]) -> None:
        """A knob taking one of ``candidates`` (JSON-able values: numbers, strings, bools,
        None, and lists, tuples or dicts of them; NumPy scalars are taken as Python's). A
        tuple comes back from a log as the tuple, not as JSON's list."""
        _check_name("define_knob", name)
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
            raise TVMTypeError(
                f"define_knob '{name}': candidates must be a list of values, got {candidates!r}"
            )
        values = [c.item() if isinstance(c, np.generic) else c for c in candidates]
        if not values:
            raise TVMValueError(f"define_knob '{name}': candidates must not be empty")
        for c in values:
            try:
                json.dumps(c)
            except (TypeError, ValueError):
                raise TVMTypeError(
                    f"define_knob '{name}': candidate {c!r} cannot be written to a tuning log "
                    "(JSON: numbers, strings, bools, None, and lists, tuples or dicts of them)"
                ) from None
        self._define(name, "knob", values)

    def define_reorder(
        self,
        name: str,
        axes: Sequence[Any],
        policy: str = "all",
        candidate: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Loop orders of ``axes``: every permutation (``policy="all"``) or the given ones
        (``policy="candidate"``, ``candidate=[[1, 0, 2], ...]``, as indices into ``axes``)."""
        _check_name("define_reorder", name)
        # ReorderEntity.apply indexes them: anything with a length and indices will do
        if isinstance(axes, (str, bytes)) or not (
            hasattr(axes, "__len__") and hasattr(axes, "__getitem__")
        ):
            raise TVMTypeError(
                f"define_reorder '{name}': axes must be a list of loop axes, "
                f"got {type(axes).__name__}"
            )
        if policy == "all":
            perms = [list(p) for p in itertools.permutations(range(len(axes)))]
        elif policy == "candidate" and candidate:
            if isinstance(candidate, (str, bytes)) or not isinstance(candidate, Iterable):
                raise TVMTypeError(
                    f"define_reorder '{name}': candidate must be a list of axis orders such as "
                    f"[[1, 0, 2]], got {candidate!r}"
                )
            perms = [_permutation(name, p, len(axes)) for p in candidate]
        else:
            raise TVMValueError(
                f"define_reorder '{name}': policy must be 'all' or 'candidate' with a "
                f"non-empty candidate list, got {policy!r}"
            )
        self._define(name, "reorder", perms)

    def _define(self, name: str, kind: str, candidates: list[Any]) -> None:
        if name in self.knobs and self.knobs[name] != candidates:
            raise TVMValueError(f"knob '{name}' is defined twice with different candidates")
        self.knobs[name] = candidates
        self.kinds[name] = kind

    def __getitem__(self, name: str) -> Any:
        return _entity(self.kinds[name], self.knobs[name][0])

    # searching
    def __len__(self) -> int:
        return math.prod(len(c) for c in self.knobs.values())

    def __repr__(self) -> str:
        # TVM prints a task's config_space this way: its size, then one line per knob
        return _describe_knobs("ConfigSpace", len(self), self.knobs, self.kinds)

    def default(self) -> Config:
        return {name: c[0] for name, c in self.knobs.items()}

    def sample(self, rng: random.Random) -> Config:
        return {name: rng.choice(c) for name, c in self.knobs.items()}

    def mutate(self, config: Config, rng: random.Random) -> Config:
        out = dict(config)
        name = rng.choice(list(self.knobs))
        out[name] = rng.choice(self.knobs[name])
        return out

    def crossover(self, a: Config, b: Config, rng: random.Random) -> Config:
        return {name: (a if rng.random() < 0.5 else b)[name] for name in self.knobs}

    def grid(self) -> Iterator[Config]:
        names = list(self.knobs)
        for values in itertools.product(*(self.knobs[n] for n in names)):
            yield dict(zip(names, values, strict=True))

    def canonical(self, config: Config) -> Config:
        out = {}
        for name, cands in self.knobs.items():
            value = config.get(name, cands[0])
            if value not in cands:
                # Read back from a log: JSON made the candidate's tuples lists.
                text = json.dumps(value, sort_keys=True)
                value = next((c for c in cands if json.dumps(c, sort_keys=True) == text), value)
            if value not in cands:
                raise TVMValueError(
                    f"config: knob '{name}' is {value!r}, not one of {cands[:8]}..."
                )
            out[name] = value
        return out

    def vector(self, config: Config) -> list[float]:
        """Numbers describing the configuration, for the cost model."""
        out: list[float] = []
        for name, value in config.items():
            kind = self.kinds.get(name, "knob")
            if kind == "split":
                out += [math.log2(max(1, v)) for v in value]
            elif kind == "reorder":
                out += [float(p) for p in value]
            else:
                out.append(
                    float(value)
                    if isinstance(value, (int, float))
                    else float(self.knobs[name].index(value))
                )
        return out


class ConfigEntity(ConfigSpace):
    """A point of a template's space: ``cfg[name]`` is the chosen entity; ``define_*`` only
    check that the knob exists (a template defines its knobs the same way every run)."""

    def __init__(self, space: ConfigSpace, config: Config) -> None:
        super().__init__()
        self.knobs, self.kinds = space.knobs, space.kinds
        self.config = space.canonical(config)

    def _define(self, name: str, kind: str, candidates: list[Any]) -> None:
        if name not in self.knobs:
            raise TVMValueError(f"template defines knob '{name}', which its space does not have")

    def __getitem__(self, name: str) -> Any:
        return _entity(self.kinds[name], self.config[name])

    def __repr__(self) -> str:
        return f"ConfigEntity({self.config!r})"


def _describe_knobs(
    title: str, size: int, knobs: dict[str, list[Any]], kinds: dict[str, str] | None = None
) -> str:
    lines = [f"{title} (len={size}, space_map="]
    for k, (name, cands) in enumerate(knobs.items()):
        kind = (kinds or {}).get(name, "knob")
        shown = ", ".join(json.dumps(c) for c in cands[:6]) + (", ..." if len(cands) > 6 else "")
        lines.append(f"  {k:3d} {name}: {kind} [{shown}] len={len(cands)}")
    return "\n".join(lines) + "\n)"


def _entity(kind: str, value: Any) -> Any:
    if kind == "split":
        return SplitEntity(value)
    if kind == "reorder":
        return ReorderEntity(value)
    return KnobEntity(value)


# --- the automatic scheduler's knobs ----------------------------------------------------------

_REFUSED = re.compile(
    r"stage '([^']+)' knob '([^']+)' is -?\d+, which is not one of its candidates \[([^\]]*)\]"
)
_NO_STAGE = re.compile(r"there is no stage '([^']+)'")
_NO_KNOB = re.compile(r"stage '([^']+)' has no knob '([^']+)'")


class AutoSpace:
    """The automatic scheduler's decisions for one computation, as a search space.

    ``query(config)`` is ``auto_schedule_space`` of the computation (made once by
    ``make_outputs()``) at that point. Knob names are flattened to ``"stage/knob"``.
    """

    def __init__(self, make_outputs: Any, target: str) -> None:
        self.make_outputs = make_outputs
        self.target = target
        self._outputs: Any = None
        first = self.query(None)
        self._default = first["default"]
        # canonical() of each point asked for (JSON key -> the point): the evolutionary
        # tuner breeds the same points again and again (mutations of the same parents), and
        # each answer rebuilds the computation and runs the scheduler's rules (about 0.4 ms
        # for a conv2d: 2.7 s of a 25 s search before this cache).
        self._canonical: dict[str, dict[str, dict[str, int]]] = {}
        # Candidates seen on any path (the default's, and each repaired point's).
        self.knobs: dict[str, list[int]] = {}
        self._learn(first)
        self._keys = list(self.knobs)  # the model's inputs: the default path's knobs

    def query(self, config: dict[str, dict[str, int]] | None) -> dict[str, Any]:
        from ..autoschedule import auto_schedule_space

        # One copy of the computation serves every query: auto_schedule_space schedules it in
        # a schedule of its own and leaves the operations as they were (a fresh copy per
        # query, a conv2d's padding and compute rebuilt, was half of each query's time).
        if self._outputs is None:
            self._outputs = self.make_outputs()
        return auto_schedule_space(self._outputs, target=self.target, config=config)

    def _learn(self, space: dict[str, Any]) -> None:
        for stage, knobs in space["knobs"].items():
            for knob, cands in knobs.items():
                merged = sorted(set(self.knobs.get(f"{stage}/{knob}", [])) | set(cands))
                self.knobs[f"{stage}/{knob}"] = merged

    def __len__(self) -> int:
        return math.prod(len(c) for c in self.knobs.values())

    def __repr__(self) -> str:
        return _describe_knobs("AutoSpace", len(self), self.knobs)

    def default(self) -> dict[str, dict[str, int]]:
        return {st: dict(k) for st, k in self._default.items()}

    @staticmethod
    def flatten(config: dict[str, dict[str, int]]) -> dict[str, int]:
        return {f"{st}/{k}": v for st, knobs in config.items() for k, v in knobs.items()}

    @staticmethod
    def nest(flat: dict[str, int]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for key, v in flat.items():
            st, k = key.rsplit("/", 1)
            out.setdefault(st, {})[k] = v
        return out

    def canonical(self, config: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        """The point the scheduler applies for ``config`` (see ``repair``)."""
        key = json.dumps(config, sort_keys=True)
        point = self._canonical.get(key)
        if point is None:
            space = repair(self.query, config)
            self._learn(space)
            point = self._canonical[key] = space["default"]
        return {st: dict(k) for st, k in point.items()}

    def sample(self, rng: random.Random) -> dict[str, dict[str, int]]:
        return self.nest({k: rng.choice(c) for k, c in self.knobs.items()})

    def mutate(self, config: dict[str, dict[str, int]], rng: random.Random) -> dict[str, Any]:
        flat = self.flatten(config)
        key = rng.choice(list(self.knobs))
        flat[key] = rng.choice(self.knobs[key])
        return self.nest(flat)

    def crossover(self, a: dict[str, Any], b: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        fa, fb = self.flatten(a), self.flatten(b)
        keys = sorted(set(fa) | set(fb))
        return self.nest(
            {k: (fa if (rng.random() < 0.5 and k in fa) or k not in fb else fb)[k] for k in keys}
        )

    def grid(self) -> Iterator[dict[str, dict[str, int]]]:
        keys = list(self.knobs)
        for values in itertools.product(*(self.knobs[k] for k in keys)):
            yield self.nest(dict(zip(keys, values, strict=True)))

    def vector(self, config: dict[str, dict[str, int]]) -> list[float]:
        flat = self.flatten(config)
        return [float(flat.get(k, -1)) for k in self._keys]


def repair(query: Any, config: dict[str, dict[str, int]]) -> dict[str, Any]:
    """``query(point)`` (an ``auto_schedule_space`` call) at the nearest point the scheduler
    accepts: a knob it refuses moves to the nearest candidate it allows, a knob or stage off
    the path is dropped, and knobs left out take their defaults. Returns the space there (its
    ``"default"`` is the repaired point)."""
    flat = AutoSpace.flatten(config)
    for _ in range(4 * max(1, len(flat)) + 4):
        try:
            return query(AutoSpace.nest(flat))
        except ValueError as err:
            text = str(err)
            m = _REFUSED.search(text)
            if m:
                key = f"{m.group(1)}/{m.group(2)}"
                cands = [int(c) for c in m.group(3).split(",") if c.strip()]
                flat[key] = min(cands, key=lambda c: (abs(c - flat[key]), c))
                continue
            m = _NO_KNOB.search(text)
            if m:
                flat.pop(f"{m.group(1)}/{m.group(2)}", None)
                continue
            m = _NO_STAGE.search(text)
            if m:
                flat = {k: v for k, v in flat.items() if not k.startswith(m.group(1) + "/")}
                continue
            raise
    raise TVMValueError(f"auto_schedule config could not be repaired: {config}")
