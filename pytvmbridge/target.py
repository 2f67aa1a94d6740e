"""Targets under TVM's names: ``tvm.target.Target("llvm -mcpu=skylake-avx512")``.

pytvmbridge compiles for CPUs through LLVM, so the one target kind is ``llvm`` (``c`` and
``cpu`` are accepted as aliases of it); ``-mcpu=`` and ``-mattr=`` select the CPU and its
features. A ``Target`` can be passed to ``build(..., target=...)`` wherever a target string
can; ``with Target(...)`` makes it the current one, as in TVM.

Example:
    >>> import pytvmbridge as tvm
    >>> t = tvm.target.Target("llvm -mcpu=haswell", host="llvm")
    >>> t.kind.name, t.mcpu, str(t)
    ('llvm', 'haswell', 'llvm -mcpu=haswell')
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from .error import TVMTypeError, TVMValueError

__all__ = ["Target", "TargetKind", "create"]

_GPU_KINDS = ("cuda", "rocm", "opencl", "vulkan", "metal", "nvptx", "webgpu", "hexagon")
_current = threading.local()


@dataclass(frozen=True)
class TargetKind:
    """The kind of a target (``Target.kind.name``): always ``"llvm"`` here."""

    name: str


class Target:
    """A compilation target: ``"llvm"`` plus options (``-mcpu=NAME``, ``-mattr=+avx2,...``).

    ``host`` is accepted as in TVM (it must be an llvm target too); ``Target(dict)`` takes
    ``{"kind": "llvm", "mcpu": ...}``.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.target.Target("llvm").attrs
        {}
        >>> try:
        ...     tvm.target.Target("cuda")
        ... except ValueError as err:
        ...     print(str(err)[:44])
        target 'cuda': pytvmbridge compiles for CPUs
    """

    def __init__(self, target: Any = "llvm", host: Any = None) -> None:
        if isinstance(target, Target):
            text = str(target)
            host = host if host is not None else target.host
        elif isinstance(target, dict):
            options = dict(target)
            text = str(options.pop("kind", "llvm"))
            text += "".join(f" -{k}={v}" for k, v in options.items() if k not in ("host",))
        elif isinstance(target, str):
            text = target.strip()
        else:
            raise TVMTypeError(
                f"target must be a string such as 'llvm', got {type(target).__name__}"
            )
        words = text.split()
        kind = words[0] if words else "llvm"
        if kind in _GPU_KINDS:
            raise TVMValueError(
                f"target {text!r}: pytvmbridge compiles for CPUs through LLVM only; use 'llvm'"
            )
        if kind in ("c", "cpu"):  # other names of a CPU target in TVM code
            kind = "llvm"
        if kind != "llvm":
            raise TVMValueError(f"target {text!r}: unknown target kind {kind!r}; use 'llvm'")
        self.attrs: dict[str, str] = {}
        for word in words[1:]:
            key, _, value = word.lstrip("-").partition("=")
            self.attrs[key] = value
        self._text = " ".join(["llvm", *words[1:]])
        self.kind = TargetKind("llvm")
        self.keys = ["cpu"]
        self.host = None if host is None else (host if isinstance(host, Target) else Target(host))

    @property
    def mcpu(self) -> str:
        """The ``-mcpu=`` option, or ``""`` (this machine's CPU)."""
        return self.attrs.get("mcpu", "")

    @property
    def mattr(self) -> list[str]:
        """The ``-mattr=`` features, as a list."""
        value = self.attrs.get("mattr", "")
        return value.split(",") if value else []

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The target of the innermost ``with Target(...)`` block, or None."""
        stack = getattr(_current, "stack", [])
        if not stack and not allow_none:
            raise TVMValueError("no target is set: use `with tvm.target.Target('llvm'):`")
        return stack[-1] if stack else None

    def __enter__(self) -> Target:
        _current.stack = [*getattr(_current, "stack", []), self]
        return self

    def __exit__(self, *exc: object) -> None:
        _current.stack.pop()

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Target({self._text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Target, str)):
            return str(self) == str(Target(other) if isinstance(other, str) else other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._text)


def create(target: Any) -> Target:
    """TVM 0.6's ``tvm.target.create``: the same as ``Target(target)``.

    Example:
        >>> import pytvmbridge as tvm
        >>> str(tvm.target.create("llvm"))
        'llvm'
    """
    return Target(target)


def target_string(target: Any, what: str) -> str:
    """``target`` (a string, a ``Target`` or ``None`` for ``"llvm"``, as ``build`` takes it) as
    the string the compiler takes, checked now: errors name ``what`` (the argument).

    Example:
        >>> from pytvmbridge.target import Target, target_string
        >>> target_string(None, "kernel target"), target_string(Target("llvm"), "target")
        ('llvm', 'llvm')
    """
    if target is None:
        return "llvm"
    try:
        return str(Target(target))
    except (TypeError, ValueError) as err:
        raise type(err)(f"{what}: {err}") from None
