"""TorchScript (deprecated, still present): ``torch.jit.trace`` and ``torch.jit.script`` of a model
compiled by ``pytvmbridge.torch.compile`` run the same custom op, match eager, and survive
``torch.jit.save``/``load`` into a new process (which imports pytvmbridge to register the op)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

from pytvmbridge import torch_compile as ptc  # noqa: E402


class TwoInputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x, y):
        return torch.relu(self.lin(x)) + y, torch.tanh(y)


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    model = model.eval()
    return model, ptc.compile(model, {"input_infos": [("x", ("batch", 4))]})


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit's own deprecation
        return fn(*args)


def test_trace_and_script_match_eager_for_every_batch(mlp):
    model, compiled = mlp
    traced = quiet(torch.jit.trace, compiled, (torch.randn(3, 4),))
    scripted = quiet(torch.jit.script, compiled)
    assert isinstance(scripted, torch.jit.ScriptModule)
    assert "pytvmbridge::run_module" in str(scripted.run.graph)  # the op, not Python
    for batch in (1, 3, 7):
        x = torch.randn(batch, 4)
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(traced(x), expected, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(scripted(x), expected, atol=1e-5, rtol=1e-5)


def test_a_scripted_model_of_several_inputs_takes_a_list():
    torch.manual_seed(1)
    model = TwoInputs().eval()
    compiled = ptc.compile(model, {"input_infos": [("x", (2, 4)), ("y", (2, 3))]})
    scripted = quiet(torch.jit.script, compiled)
    x, y = torch.randn(2, 4), torch.randn(2, 3)
    got = scripted([x, y])
    with torch.no_grad():
        expected = model(x, y)
    assert len(got) == 2
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)
    with pytest.raises(Exception, match="takes 2 input"):
        scripted([x])


def test_jit_save_and_load_in_a_new_process(mlp, tmp_path):
    model, compiled = mlp
    x = torch.randn(5, 4)
    with torch.no_grad():
        expected = model(x)
    torch.save({"x": x, "expected": expected}, tmp_path / "data.pt")
    torch.jit.save(quiet(torch.jit.script, compiled), str(tmp_path / "scripted.pt"))
    torch.jit.save(
        quiet(torch.jit.trace, compiled, (torch.randn(2, 4),)), str(tmp_path / "traced.pt")
    )
    script = f"""
        import torch, pytvmbridge  # registers pytvmbridge::run_module
        data = torch.load({str(tmp_path / "data.pt")!r})
        for name in ("scripted", "traced"):
            m = torch.jit.load({str(tmp_path)!r} + "/" + name + ".pt")
            torch.testing.assert_close(m(data["x"]), data["expected"], atol=1e-5, rtol=1e-5)
        print("ok")
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTVMBRIDGE_CACHE": "0"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
