"""Operators pytvmbridge does not compile (``torch.logcumsumexp``, ``torch.erfinv``,
``torch.topk``) run in PyTorch, the rest compiled, in ``pytvmbridge.torch.compile`` as in the
``torch.compile`` backend, unless ``strict`` asks for an error; and compiled models return what
eager returns (dicts, nested tuples and lists). Values are checked against eager PyTorch, also after
``load`` in a new process, under ``torch.compile`` and ``torch.export``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import pytvmbridge.graph as graph
import pytvmbridge.graph.partition as partition
import pytvmbridge.torch as ptt
import pytvmbridge.torch_compile as ptc
from pytvmbridge.error import TVMError


class Tagger(torch.nn.Module):
    """Token embeddings, a cumulative log-sum-exp and an inverse error function (both left to
    PyTorch), a constant and linear layers; returns a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, tokens: torch.Tensor, x: torch.Tensor) -> dict:
        h = torch.relu(self.lin(self.embed(tokens))).sum(1) + x
        c = torch.logcumsumexp(h, 1) * 0.5
        parts = [c + torch.full((4,), 2.0) + torch.erfinv(torch.tanh(h) * 0.5)]
        return {"out": torch.tanh(c), "parts": (h, parts)}


OPTION = {"input_infos": [("tokens", ("b", 5), "int64"), ("x", ("b", 4))]}


def _inputs(batch: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 10, (batch, 5), generator=g), torch.randn(batch, 4, generator=g)


def _assert_same(got, want):
    """Same nesting (types and keys) and values."""
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            _assert_same(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def tagger():
    torch.manual_seed(0)
    model = Tagger().eval()
    return model, ptt.compile(model, OPTION)


def test_unsupported_operators_run_in_pytorch_the_rest_compiled(tagger):
    model, compiled = tagger
    assert set(compiled.plan["fallback_ops"]) == {
        "aten::logcumsumexp.default",
        "aten::erfinv.default",
    }
    assert len(compiled.kernels) >= 1
    for batch in (1, 3, 7):
        tokens, x = _inputs(batch, seed=batch)
        with torch.no_grad():
            _assert_same(compiled(tokens, x), model(tokens, x))


def test_strict_names_the_first_unsupported_operator():
    with pytest.raises(ptc.UnsupportedOperatorError, match="strict=True: operator logcumsumexp"):
        ptt.compile(Tagger().eval(), {**OPTION, "strict": True})


def test_partitioned_model_under_torch_compile_and_export(tagger):
    model, compiled = tagger
    tokens, x = _inputs(4)
    with torch.no_grad():
        want = model(tokens, x)
        torch._dynamo.reset()
        compiled_again = torch.compile(compiled, fullgraph=True, backend="aot_eager")
        _assert_same(compiled_again(tokens, x), want)
        _assert_same(torch.export.export(compiled, (tokens, x)).module()(tokens, x), want)
    with pytest.raises(NotImplementedError, match="runs operators in PyTorch"):
        torch.jit.script(compiled)


def test_partitioned_model_pickles(tagger, tmp_path):
    """torch.save/torch.load of the module itself (its recorded operators are named, not
    pickled)."""
    model, compiled = tagger
    torch.save(compiled, tmp_path / "model.pt")
    copy = torch.load(tmp_path / "model.pt", weights_only=False)
    tokens, x = _inputs(2, seed=2)
    with torch.no_grad():
        _assert_same(copy(tokens, x), model(tokens, x))


def test_partitioned_model_loads_in_a_new_process_without_compiling(tmp_path):
    torch.manual_seed(0)
    model = Tagger().eval()
    ptt.compile(model, {**OPTION, "export_dir": str(tmp_path)})
    code = textwrap.dedent(f"""
        import torch
        from pytvmbridge import _core, torch_compile
        def refuse(*a, **k):
            raise AssertionError("compiled while loading")
        _core.build = _core.lower = refuse
        m = torch_compile.load({str(tmp_path)!r})
        g = torch.Generator().manual_seed(6)
        tokens, x = torch.randint(0, 10, (6, 5), generator=g), torch.randn(6, 4, generator=g)
        out = m(tokens, x)
        assert isinstance(out, dict) and isinstance(out["parts"][1], list), out
        torch.save(out, {str(tmp_path / "out.pt")!r})
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    with torch.no_grad():
        _assert_same(torch.load(tmp_path / "out.pt"), model(*_inputs(6, seed=6)))


def test_a_partition_that_fails_to_compile_runs_in_pytorch(monkeypatch):
    """A compile error in one node (here, made up for tanh) leaves that node to PyTorch, with a
    warning naming it; the rest still compiles."""
    real = graph.compile_graph

    def failing(gm, *args, **kwargs):
        for node in gm.graph.nodes:
            if node.target is torch.ops.aten.tanh.default:
                err = ValueError("made-up compile error")
                err.fx_node = node.name  # as import_graph marks the node it was converting
                raise err
        return real(gm, *args, **kwargs)

    monkeypatch.setattr(graph, "compile_graph", failing)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    model = model.eval()
    with pytest.warns(UserWarning, match=r"aten\.tanh\.default run in PyTorch \(made-up"):
        compiled = ptt.compile(model, {"input_infos": [("x", ("b", 4))]})
    assert compiled.plan["fallback_ops"] == ["aten::tanh.default"]
    assert len(compiled.kernels) == 2
    x = torch.randn(3, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(graph, "compile_graph", failing)
    with pytest.raises(ValueError, match="made-up"):
        ptt.compile(model, {"input_infos": [("x", ("b", 4))], "strict": True})


@pytest.mark.parametrize(
    "structure",
    [
        lambda y, z: {"a": y, "b": (z, [y + 1.0, z * 2.0])},
        lambda y, z: (y,),
        lambda y, z: [y, (z,)],
        lambda y, z: y,
    ],
    ids=["dict", "one-tuple", "list", "tensor"],
)
def test_output_structure_is_eagers(structure, tmp_path):
    class Model(torch.nn.Module):
        def forward(self, x):
            return structure(torch.relu(x), torch.tanh(x))

    model = Model().eval()
    x = torch.randn(3, 4)
    compiled = ptt.compile(model, {"input_infos": [("x", (3, 4))], "export_dir": str(tmp_path)})
    _assert_same(compiled(x), model(x))
    _assert_same(ptt.load(tmp_path)(x), model(x))
    torch._dynamo.reset()
    _assert_same(torch.compile(model, backend="pytvmbridge")(x), model(x))


@pytest.mark.parametrize("op", ["erfinv", "topk", "logcumsumexp"])
def test_backend_runs_unsupported_operators_in_pytorch_unless_strict(op):
    torch.manual_seed(0)
    table = torch.randn(10, 4)

    def f(x, i):
        y = torch.relu(x) * 2.0
        y = y + torch.nn.functional.embedding(i, table).sum(0)  # compiled
        if op == "erfinv":
            y = y + torch.erfinv(torch.tanh(y) * 0.5)
        elif op == "topk":
            y = y + torch.topk(y, 2, dim=1).values.sum(1, keepdim=True)
        else:
            y = torch.logcumsumexp(y, 1)
        return torch.tanh(y)

    x, i = torch.randn(3, 4), torch.randint(0, 10, (5,))
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no partition fails: only the operator runs in PyTorch
        torch.testing.assert_close(torch.compile(f, backend="pytvmbridge")(x, i), f(x, i))
    torch._dynamo.reset()
    with pytest.raises(Exception, match=op) as info:
        torch.compile(f, backend="pytvmbridge", options={"strict": True})(x, i)
    assert isinstance(info.value.inner_exception, partition.UnsupportedOperatorError)


def test_one_exception_hierarchy():
    assert ptc.UnsupportedOperatorError is graph.UnsupportedOperatorError
    assert partition.UnsupportedOperatorError is graph.UnsupportedOperatorError
    assert issubclass(graph.UnsupportedGraphError, graph.UnsupportedOperatorError)
    for cls in (graph.UnsupportedGraphError, graph.UnsupportedOperatorError):
        assert issubclass(cls, NotImplementedError) and issubclass(cls, TVMError)
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.logcumsumexp(x, 0))(torch.ones(3))
    with pytest.raises(graph.UnsupportedOperatorError, match="logcumsumexp"):
        graph.compile_graph(gm, [torch.ones(3)])
