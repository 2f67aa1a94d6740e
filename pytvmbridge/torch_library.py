"""Compiled modules inside PyTorch as the ``torch.library`` custom op ``pytvmbridge::run_module``.

:class:`TorchModule` wraps a built :class:`~pytvmbridge.Module` as a ``torch.nn.Module`` whose
``forward`` calls the op. The compiled code travels with it as a ``uint8`` buffer (the bytes of
``runtime.module_to_bytes``), so it composes with PyTorch's own machinery:

- ``torch.compile`` and ``torch.export`` see one opaque operator with a fake (meta) implementation
  that computes the output shapes from the input shapes, symbolic sizes included;
- ``torch.save(module)``/``torch.load`` and ``torch.export.save``/``load`` carry the code bytes,
  never a path, and a new process runs them once the op is registered: it is registered on
  ``import pytvmbridge`` when ``torch`` is already imported (``import torch`` first), or by
  importing this module;
- the outputs are allocated by PyTorch and written by the kernel in place (no extra copy).

Example:
    >>> import torch, pytvmbridge as tvm
    >>> from pytvmbridge.torch_library import TorchModule
    >>> n = tvm.var("n")
    >>> A = tvm.placeholder((n,), name="A")
    >>> B = tvm.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    >>> m = TorchModule(tvm.build(tvm.create_schedule(B.op), [A, B], name="affine"))
    >>> m(torch.arange(3.0)).tolist()
    [1.0, 3.0, 5.0]
    >>> torch.compile(m, fullgraph=True)(torch.ones(2)).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch

from .build import Module
from .error import TVMNotImplementedError, TVMValueError
from .runtime import module_from_bytes, module_to_bytes

__all__ = ["TorchModule", "output_spec", "run_module"]

# Modules loaded in this process, by the SHA-256 of their bytes: held by the TorchModules that
# carry them, and the last RECENT loaded from a code tensor alone (an exported program's or a
# scripted model's buffer) by _recent, so a dropped model's code is freed (a strong dict kept
# every compiled model's JIT code for the life of the process: 0.8 MB and 4 mappings each).
_modules: weakref.WeakValueDictionary[str, Module] = weakref.WeakValueDictionary()
_modules_lock = threading.Lock()
RECENT = 32
_recent: OrderedDict[str, Module] = OrderedDict()


def _module_for(key: str, code: torch.Tensor) -> Module:
    module = _modules.get(key)
    if module is not None:
        return module
    data = code.detach().cpu().contiguous().numpy().tobytes()
    if hashlib.sha256(data).hexdigest() != key:
        raise TVMValueError(
            "pytvmbridge::run_module: the code tensor does not match its key (the buffer was "
            "modified after the module was made)"
        )
    module = module_from_bytes(data, f"<pytvmbridge::run_module {key[:12]}>")
    with _modules_lock:
        module = _modules.setdefault(key, module)
        _recent[key] = module
        _recent.move_to_end(key)
        while len(_recent) > RECENT:
            _recent.popitem(last=False)
        return module


def output_spec(module: Module, data: bytes | None = None) -> str:
    """The output shapes and dtypes of ``module`` as functions of its inputs' sizes (JSON):
    each dimension is an int, ``["dim", input, axis]``, or ``["op", name, a, b]``. The fake
    implementation evaluates it on symbolic sizes.

    Example:
        >>> import json, pytvmbridge as tvm
        >>> from pytvmbridge.torch_library import output_spec
        >>> n = tvm.var("n")
        >>> A = tvm.placeholder((n, 3), name="A")
        >>> B = tvm.compute((n - 1, 3), lambda i, j: A[i + 1, j], name="B")
        >>> json.loads(output_spec(tvm.build(tvm.create_schedule(B.op), [A, B])))["outputs"]
        [{'dtype': 'float32', 'shape': [['op', 'sub', ['dim', 0, 0], 1], 3]}]
    """
    manifest = json.loads(_manifest_text(module, data))
    inputs = [a for a in manifest["args"] if not a["output"]]
    where: dict[int, list[int]] = {}
    for i, arg in enumerate(inputs):
        for d, dim in enumerate(arg["shape"]):
            if isinstance(dim, dict) and "var" in dim:
                where.setdefault(dim["var"], ["dim", i, d])

    def convert(e: Any) -> Any:
        if isinstance(e, int):
            return e
        if "int" in e:
            return e["int"]
        if "var" in e:
            if e["var"] not in where:
                raise TVMValueError(
                    f"module {module.entry_name!r}: the output size variable {e.get('name')!r} is "
                    "not a size of any input, so PyTorch cannot know the output shape"
                )
            return where[e["var"]]
        if "expr" in e:
            return convert(e["expr"])
        if e["op"] == "cast":
            return convert(e["a"])
        return ["op", e["op"], convert(e["a"]), convert(e["b"])]

    outputs = [
        {"dtype": a["dtype"], "shape": [convert(d) for d in a["shape"]]}
        for a in manifest["args"]
        if a["output"]
    ]
    return json.dumps({"inputs": len(inputs), "outputs": outputs})


def _manifest_text(module: Module, data: bytes | None = None) -> str:
    """The manifest of ``module``, read from its saved bytes ``data`` when given."""
    from . import _core

    if data is None:
        data = module_to_bytes(module, include_ir=False)
    return _core.read_module_manifest(data, "<module>")


_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "floormod": lambda a, b: a % b,
    # Sizes are not negative, where truncating and floor division agree.
    "div": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "min": lambda a, b: torch.sym_min(a, b),
    "max": lambda a, b: torch.sym_max(a, b),
}


def _eval_dim(dim: Any, inputs: Sequence[torch.Tensor]) -> Any:
    if isinstance(dim, int):
        return dim
    if dim[0] == "dim":
        return inputs[dim[1]].shape[dim[2]]
    return _OPS[dim[1]](_eval_dim(dim[2], inputs), _eval_dim(dim[3], inputs))


def _dtype(name: str) -> torch.dtype:
    return {"bool": torch.bool}.get(name) or getattr(torch, name)


@torch.library.custom_op("pytvmbridge::run_module", mutates_args=())
def run_module(
    code: torch.Tensor, key: str, spec: str, inputs: list[torch.Tensor]
) -> list[torch.Tensor]:
    """Run the compiled module whose saved bytes are ``code`` (SHA-256 ``key``) on ``inputs``;
    returns its outputs, allocated here and written in place by the kernel."""
    module = _module_for(key, code)
    signature = json.loads(spec)
    outs = [
        torch.empty([int(d) for d in shape], dtype=_dtype(o["dtype"]))
        for o, shape in zip(signature["outputs"], module.output_shapes(*inputs), strict=True)
    ]
    module(*inputs, *outs)
    return outs


@run_module.register_fake
def _run_module_fake(
    code: torch.Tensor, key: str, spec: str, inputs: list[torch.Tensor]
) -> list[torch.Tensor]:
    del code, key
    signature = json.loads(spec)
    return [
        inputs[0].new_empty([_eval_dim(d, inputs) for d in o["shape"]], dtype=_dtype(o["dtype"]))
        if inputs
        else torch.empty([_eval_dim(d, inputs) for d in o["shape"]], dtype=_dtype(o["dtype"]))
        for o in signature["outputs"]
    ]


def _run_module_backward(ctx: Any, grads: list[torch.Tensor]) -> Any:
    del ctx, grads
    raise TVMNotImplementedError(
        "pytvmbridge::run_module has no gradient: a model compiled with "
        "pytvmbridge.torch.compile (or a saved module run as a torch op) computes its forward "
        'pass only; train with torch.compile(model, backend="pytvmbridge"), or call the model '
        "under torch.no_grad()"
    )


def _run_module_setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    del ctx, inputs, output


# A gradient formula that says what is missing, instead of PyTorch's generic "no autograd
# formula was registered" naming no pytvmbridge API.
run_module.register_autograd(_run_module_backward, setup_context=_run_module_setup)


class TorchModule(torch.nn.Module):
    """A compiled :class:`~pytvmbridge.Module` as a ``torch.nn.Module``: ``forward(*inputs)``
    returns the outputs (one tensor, or a tuple). The code is the buffer ``code``; pickling,
    ``state_dict`` and ``torch.export`` carry it."""

    def __init__(self, module: Module, data: bytes | None = None) -> None:
        super().__init__()
        # `data`: the module's saved bytes when the caller has them (a loaded file), so that
        # loading a model does not serialize its code again.
        if data is None:
            data = module_to_bytes(module)
        key = hashlib.sha256(data).hexdigest()
        with _modules_lock:
            module = _modules.setdefault(key, module)
        self._module = module  # what keeps it loaded (see _modules)
        self.register_buffer("code", torch.frombuffer(bytearray(data), dtype=torch.uint8))
        self.key = key
        self.spec = output_spec(module, data)
        self.num_outputs = len(json.loads(self.spec)["outputs"])

    # The loaded module is not pickled (the code buffer is its bytes): loaded again, from the
    # buffer, when the model is unpickled or copied.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_module", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._module = _module_for(self.key, self.code)

    def forward(self, *inputs: torch.Tensor) -> Any:
        outs = torch.ops.pytvmbridge.run_module(self.code, self.key, self.spec, list(inputs))
        return outs[0] if self.num_outputs == 1 else tuple(outs)

    def extra_repr(self) -> str:
        return f"key={self.key[:12]}, code={self.code.numel()} bytes"
