"""enable()/disable(): make ``torch.compile(model)`` without a backend use pytvmbridge.

``torch.compile``'s default backend is a default argument, so ``enable()`` installs a thin
wrapper as ``torch.compile`` that fills in ``backend="pytvmbridge"`` (and the options) when the
caller gives no backend; ``disable()`` puts the original back.

Example:
    >>> import torch, pytvmbridge.torch as ptt
    >>> ptt.enable(strict=False); ptt.is_enabled()
    True
    >>> torch.compile(lambda x: x * 3)(torch.ones(2))
    tensor([3., 3.])
    >>> ptt.disable(); ptt.is_enabled()
    False
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import torch

from ..error import TVMValueError

_original_compile: Any = None


def enable(opt_level: int = 3, strict: bool = False, **options: Any) -> None:
    """Make ``torch.compile(model)`` (no ``backend``) compile with pytvmbridge.

    ``opt_level`` (0-3) is kept for the seed's API: every level compiles with the same LLVM
    pipeline (O2's function passes; see docs/architecture.md).
    ``strict=True`` raises on the first operator that would stay in PyTorch. Other keyword
    arguments are backend options (``num_threads``, ``tuning_log_file``). Every value is
    checked here: a wrong one raises ``ValueError`` naming it.

    Example:
        >>> import pytvmbridge.torch as ptt
        >>> ptt.enable(opt_level=2); ptt.disable()
    """
    global _original_compile
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or not 0 <= opt_level <= 3:
        raise TVMValueError(
            f"opt_level must be an int in 0..3, found {opt_level!r} ({type(opt_level).__name__})"
        )
    from ..graph.backend import BackendOptions

    defaults = {"strict": strict, "opt_level": opt_level, **options}
    BackendOptions.parse(defaults)  # bad keys and values raise here, not at the first compile
    if _original_compile is None:
        _original_compile = torch.compile
    original = _original_compile

    @functools.wraps(original)
    def compile_with_pytvmbridge(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "backend" not in kwargs and len(args) < 2:
            kwargs["backend"] = "pytvmbridge"
            kwargs["options"] = {**defaults, **(kwargs.get("options") or {})}
            mode = kwargs.pop("mode", None)
            if mode not in (None, "default"):
                # Inductor's presets: code written for Inductor keeps running (torch.compile
                # refuses mode and options together), with a word that mode has no effect here
                warnings.warn(
                    f"torch.compile(mode={mode!r}) selects Inductor's presets; the pytvmbridge "
                    "backend (pytvmbridge.torch.enable) has none, so mode is ignored",
                    UserWarning,
                    stacklevel=2,
                )
        return original(model, *args, **kwargs)

    torch.compile = compile_with_pytvmbridge


def disable() -> None:
    """Restore ``torch.compile`` as it was before :func:`enable` (no effect if not enabled).

    Example:
        >>> import pytvmbridge.torch as ptt
        >>> ptt.disable(); ptt.is_enabled()
        False
    """
    global _original_compile
    if _original_compile is not None:
        torch.compile = _original_compile
        _original_compile = None


def is_enabled() -> bool:
    """Whether :func:`enable` is in effect.

    Example:
        >>> import pytvmbridge.torch as ptt
        >>> ptt.is_enabled()
        False
    """
    return _original_compile is not None


__all__ = ["disable", "enable", "is_enabled"]
