"""Compiled modules as the torch.library op pytvmbridge::run_module: eager, torch.compile with
dynamic sizes, torch.export save/load and torch.save of a module in fresh processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge.torch_library import TorchModule


def shift_double() -> TorchModule:
    n = tvm.var("n")
    A = tvm.placeholder((n, 4), name="A")
    B = tvm.compute((n - 1, 4), lambda i, j: A[i + 1, j] * 2.0, name="B")
    return TorchModule(tvm.build(tvm.create_schedule(B.op), [A, B], name="shift_double"))


def reference(x: torch.Tensor) -> torch.Tensor:
    return x[1:] * 2.0


class Outer(torch.nn.Module):
    """Pre- and post-processing in PyTorch around the compiled part."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = shift_double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(torch.relu(x) + 1).sum(dim=1)


def outer_reference(x: torch.Tensor) -> torch.Tensor:
    return reference(torch.relu(x) + 1).sum(dim=1)


def run_fresh(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_eager_and_multiple_outputs():
    m = shift_double()
    x = torch.randn(6, 4)
    torch.testing.assert_close(m(x), reference(x))
    A = tvm.placeholder((3,), name="A")
    S = tvm.compute((3,), lambda i: A[i] + 1.0, name="S")
    P = tvm.compute((3,), lambda i: A[i] * 3.0, name="P")
    two = TorchModule(tvm.build(tvm.create_schedule([S.op, P.op]), [A, S, P], name="two"))
    s, p = two(torch.tensor([1.0, 2.0, 3.0]))
    assert s.tolist() == [2.0, 3.0, 4.0] and p.tolist() == [3.0, 6.0, 9.0]
    with pytest.raises(ValueError, match="expected size 4 in dimension 1"):
        m(torch.randn(6, 5))


def test_torch_compile_with_dynamic_sizes():
    model = Outer()
    compiled = torch.compile(model, fullgraph=True, dynamic=True)
    for rows in (5, 9):
        x = torch.randn(rows, 4)
        torch.testing.assert_close(compiled(x), outer_reference(x))


def test_fake_implementation_gives_symbolic_output_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    m = shift_double()
    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        x = mode.from_tensor(torch.empty(10, 4))
        out = torch.ops.pytvmbridge.run_module(mode.from_tensor(m.code), m.key, m.spec, [x])
    assert [tuple(o.shape) for o in out] == [(9, 4)] and out[0].dtype == torch.float32


def test_torch_export_save_and_load_in_a_new_process(tmp_path):
    batch = torch.export.Dim("batch", min=3)
    ep = torch.export.export(Outer(), (torch.randn(5, 4),), dynamic_shapes=({0: batch},))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert "pytvmbridge.run_module.default" in targets
    path = tmp_path / "outer.pt2"
    torch.export.save(ep, str(path))
    out = run_fresh(f"""
        import torch, pytvmbridge
        ep = torch.export.load({str(path)!r})
        torch.manual_seed(0)
        x = torch.randn(11, 4)
        print(repr(ep.module()(x).tolist()))
    """)
    torch.manual_seed(0)
    x = torch.randn(11, 4)
    torch.testing.assert_close(torch.tensor(eval(out)), outer_reference(x))


def test_torch_save_of_a_model_carries_the_code_bytes(tmp_path):
    path = tmp_path / "model.pt"
    # Only PyTorch's and pytvmbridge's classes: the new process has no test module to import.
    torch.save(torch.nn.Sequential(torch.nn.ReLU(), shift_double(), torch.nn.Tanh()), path)
    assert b"PTBMOD" in path.read_bytes()
    out = run_fresh(f"""
        import torch
        model = torch.load({str(path)!r}, weights_only=False)
        x = torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5
        print(repr(model(x).tolist()))
    """)
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5
    torch.testing.assert_close(torch.tensor(eval(out)), torch.tanh(reference(torch.relu(x))))


def test_modified_code_buffer_is_refused():
    from pytvmbridge import torch_library

    m = shift_double()
    torch_library._modules.pop(m.key)
    m.code[200] ^= 0xFF
    with pytest.raises(ValueError, match="does not match its key"):
        m(torch.randn(3, 4))


def test_docstring_examples():
    import doctest

    from pytvmbridge import torch_library

    result = doctest.testmod(torch_library, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_dropped_model_frees_its_loaded_code():
    # Loaded modules were kept by SHA-256 for the life of the process (0.8 MB and 4 memory
    # mappings per compiled model); now the TorchModules that carry them hold them.
    import copy
    import gc
    import io
    import weakref

    from pytvmbridge import torch_library

    m = shift_double()
    x = torch.randn(5, 4)
    want = reference(x)
    ref = weakref.ref(torch_library._modules[m.key])
    copied = copy.deepcopy(m)
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    traced = torch.jit.trace(m, x)
    for f in (m, copied, loaded, traced):
        torch.testing.assert_close(f(x), want)
    del m, copied, loaded, traced
    gc.collect()
    assert ref() is None
    # a code tensor alone (an exported graph's buffer) loads its module and keeps it among
    # the recent ones
    m = shift_double()
    code, key, spec = m.code.clone(), m.key, m.spec
    del m
    gc.collect()
    assert key not in torch_library._modules
    out = torch.ops.pytvmbridge.run_module(code, key, spec, [x])
    torch.testing.assert_close(out[0], want)
    assert key in torch_library._recent
