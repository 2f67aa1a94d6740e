"""pytvmbridge.torch_compile: PyTorchTVM's compile(model, option) and load(export_dir), with
symbolic input sizes, checked against eager PyTorch, and loaded in a fresh process without
compiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from pytvmbridge import torch_compile as ptc


def mlp() -> torch.nn.Module:
    torch.manual_seed(3)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 16),
        torch.nn.Sigmoid(),
        torch.nn.Linear(16, 3),
        torch.nn.Tanh(),
    )


def test_symbolic_batch_compiles_once_for_every_size(tmp_path):
    model = mlp()
    compiled = ptc.compile(model, {"input_infos": [("x", ("batch", 6))], "num_outputs": 1})
    for batch in (1, 2, 7, 33):
        x = torch.randn(batch, 6)
        torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
    assert isinstance(compiled, torch.nn.Module)


def test_a_named_size_below_the_exported_range_warns_once():
    model = mlp()
    compiled = ptc.compile(model, {"input_infos": [("x", ("batch", 6))]})
    x = torch.randn(1, 6)
    with pytest.warns(
        UserWarning, match=r"size 'batch' is 1, but the model was exported for"
    ) as record:
        got = compiled(x)
    # at the caller's line (it pointed into torch.nn.Module's call machinery)
    assert [w.filename for w in record] == [__file__]
    torch.testing.assert_close(got, model(x), atol=1e-5, rtol=1e-5)  # an MLP does not care
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(x)  # once per model


def test_inputs_on_another_device_and_sizes_export_cannot_keep_are_value_errors():
    compiled = ptc.compile(mlp(), {"input_infos": [("x", ("batch", 6))]})
    with pytest.raises(ValueError, match=r"input 0 \('x'\) is on device 'meta'"):
        compiled(torch.empty(3, 6, device="meta"))
    strided = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, 2, 1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, 2, 1)
    ).eval()
    with pytest.raises(ValueError, match=r"names the size\(s\) .*'h'.*give those dimensions"):
        ptc.compile(strided, {"input_infos": [("x", ("b", 3, "h", "w"))]})
    fixed = ptc.compile(strided, {"input_infos": [("x", ("b", 3, 16, 16))]})
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(fixed(x), strided(x), atol=1e-5, rtol=1e-5)


def test_export_dir_loads_in_a_new_process_without_compiling(tmp_path):
    model = mlp()
    ptc.compile(model, {"input_infos": [("x", ("batch", 6))], "export_dir": str(tmp_path)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["constants.pt", "module.ptb", "plan.json"]
    plan = json.loads((tmp_path / "plan.json").read_text())["plan"]
    assert plan["num_inputs"] == 1 and plan["outputs"] == [0]
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import torch
            from pytvmbridge import _core, torch_compile
            def refuse(*a, **k):
                raise AssertionError("compiled while loading")
            _core.build = _core.lower = refuse
            m = torch_compile.load({str(tmp_path)!r})
            torch.manual_seed(5)
            print(repr(m(torch.randn(9, 6)).tolist()))
        """),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    torch.manual_seed(5)
    x = torch.randn(9, 6)
    torch.testing.assert_close(torch.tensor(eval(out.stdout)), model(x), atol=1e-5, rtol=1e-5)


def test_options_are_checked():
    model = mlp()
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['input_info'\]"):
        ptc.compile(model, {"input_info": [("x", (2, 6))]})
    with pytest.raises(ValueError, match="must list the inputs"):
        ptc.compile(model, {})
    with pytest.raises(ValueError, match="num_outputs is 2, but the model returns 1"):
        ptc.compile(model, {"input_infos": [("x", (2, 6))], "num_outputs": 2})


def test_a_traced_or_scripted_module_compiles():
    # The RFC's compile(module_or_traced, option): TorchScript through PyTorch's converter
    torch.manual_seed(3)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 5),
    ).eval()
    traced = torch.jit.trace(model, torch.randn(2, 3, 8, 8))
    for ts in (traced, torch.jit.script(model)):
        compiled = ptc.compile(ts, {"input_infos": [("x", ("batch", 3, 8, 8))]})
        for batch in (2, 5):
            x = torch.randn(batch, 3, 8, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_default_dtype_and_multiple_outputs():
    class TwoHeads(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(4, 2)
            self.b = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.a(x), torch.relu(self.b(x))

    model = TwoHeads()
    compiled = ptc.compile(model, {"input_infos": [("x", ("n", 4))], "default_dtype": "float32"})
    x = torch.randn(5, 4)
    for got, want in zip(compiled(x), model(x), strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_unsupported_operator_is_named_under_strict_and_runs_in_pytorch_otherwise():
    class LogCumSumExp(torch.nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x, 0)

    with pytest.raises(ptc.UnsupportedOperatorError, match="logcumsumexp") as info:
        ptc.compile(LogCumSumExp(), {"input_infos": [("x", (4, 3))], "strict": True})
    assert isinstance(info.value, NotImplementedError)
    with pytest.warns(UserWarning, match="no operator of this model is compiled"):
        compiled = ptc.compile(LogCumSumExp(), {"input_infos": [("x", (4, 3))]})
    x = torch.randn(4, 3)
    torch.testing.assert_close(compiled(x), torch.logcumsumexp(x, 0))


def test_the_compiled_model_works_under_torch_compile():
    model = mlp()
    compiled = ptc.compile(model, {"input_infos": [("x", ("batch", 6))]})
    wrapped = torch.compile(compiled, fullgraph=True)
    x = torch.randn(4, 6)
    torch.testing.assert_close(wrapped(x), model(x), atol=1e-5, rtol=1e-5)


def test_docstring_examples():
    import doctest

    result = doctest.testmod(ptc, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_small_convolutional_network_with_batch_norm():
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.fc(torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3)))

    torch.manual_seed(1)
    model = Net().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    compiled = ptc.compile(model, {"input_infos": [("x", ("batch", 3, 12, 12))]})
    for batch in (2, 3):
        x = torch.randn(batch, 3, 12, 12)
        torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)


def test_a_damaged_plan_is_a_value_error_at_load(tmp_path):
    # plan.json edited: a constant, a dtype name or a module file that is not there, and a
    # module path outside the export, are ValueErrors naming the export (not a KeyError, an
    # AttributeError at the first call, or a file read elsewhere)
    model = mlp()
    ptc.compile(model, {"input_infos": [("x", (2, 6))], "export_dir": str(tmp_path)})
    plan_path = tmp_path / "plan.json"
    good = json.loads(plan_path.read_text())
    x = torch.randn(2, 6)
    torch.testing.assert_close(ptc.load(tmp_path)(x), model(x), rtol=1e-5, atol=1e-5)

    def damaged(edit):
        record = json.loads(json.dumps(good))
        edit(record["plan"])
        plan_path.write_text(json.dumps(record))
        with pytest.raises(ValueError, match=f"{tmp_path}.*not a valid .* export"):
            ptc.load(tmp_path)

    damaged(lambda p: p["args"].append(["const", 99]))
    damaged(lambda p: p.__setitem__("modules", ["../../etc/passwd"]))
    damaged(lambda p: p.pop("num_inputs"))
    damaged(lambda p: p.__setitem__("num_inputs", "1"))
    damaged(lambda p: p.__setitem__("outputs", [7]))
    damaged(lambda p: p.__setitem__("outputs", [-1]))
    damaged(lambda p: p["args"].__setitem__(0, ["input", -1]))
    damaged(
        lambda p: p.__setitem__(
            "views",
            {"0": [{"op": "aten::view.default", "args": [{"dtype": "load"}], "kwargs": {}}]},
        )
    )
    plan_path.write_text("[" * 100000)
    with pytest.raises(ValueError, match="not a valid"):
        ptc.load(tmp_path)


def test_a_named_size_too_small_for_the_model_is_a_value_error_naming_input_infos():
    """Export traces named sizes at an example of 8: a model whose pooling brings 8 below 1
    raised PyTorch's RuntimeError from inside export."""
    model = torch.nn.Sequential(
        torch.nn.Conv1d(8, 16, 7, stride=2, padding=3), torch.nn.MaxPool1d(2),
        torch.nn.MaxPool1d(2), torch.nn.MaxPool1d(2), torch.nn.AdaptiveAvgPool1d(1),
    ).eval()  # fmt: skip
    with pytest.raises(ValueError, match=r"input_infos \('b', 'L'\) at 8 .*max_pool1d"):
        ptc.compile(model, {"input_infos": [("x", ("b", 8, "L"))]})
    compiled = ptc.compile(model, {"input_infos": [("x", ("b", 8, 64))]})
    x = torch.randn(3, 8, 64)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


_OUTPUT_CONTAINER = """
import dataclasses
import torch
import torch.utils._pytree as pytree


@dataclasses.dataclass
class Encoded:  # as a Hugging Face model's ModelOutput: a dataclass registered with pytree
    hidden: torch.Tensor
    pooled: torch.Tensor


pytree.register_dataclass(Encoded, serialized_type_name="ptb_test_outputs.Encoded")


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        hidden = torch.tanh(self.lin(x))
        return Encoded(hidden=hidden, pooled=hidden.mean(1))
"""


def test_outputs_in_a_registered_container_load_in_a_new_process(tmp_path):
    """The new process has not imported the container's module, which registers it with
    pytree: load imports it (named in the plan), or says which module it cannot import."""
    (tmp_path / "ptb_test_outputs.py").write_text(_OUTPUT_CONTAINER)
    export = tmp_path / "export"

    def fresh(code: str, path: str | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if path:
            env["PYTHONPATH"] = path
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=str(tmp_path.parent),  # where the module is not importable unless on the path
        )

    saved = fresh(
        f"""
        import torch, ptb_test_outputs
        from pytvmbridge import torch_compile
        model = ptb_test_outputs.Encoder().eval()
        option = {{"input_infos": [("x", (2, 4))], "export_dir": {str(export)!r}}}
        torch_compile.compile(model, option)
        x = torch.linspace(-1, 1, 8).reshape(2, 4)
        print(repr(model(x).pooled.tolist()))
        """,
        str(tmp_path),
    )
    assert saved.returncode == 0, saved.stderr
    load = f"""
        import torch
        from pytvmbridge import torch_compile
        out = torch_compile.load({str(export)!r})(torch.linspace(-1, 1, 8).reshape(2, 4))
        print(type(out).__name__, repr(out.pooled.tolist()))
        """
    loaded = fresh(load, str(tmp_path))
    assert loaded.returncode == 0, loaded.stderr
    name, values = loaded.stdout.split(" ", 1)
    assert name == "Encoded"
    torch.testing.assert_close(torch.tensor(eval(values)), torch.tensor(eval(saved.stdout)))
    missing = fresh(load, None)
    assert "ModuleNotFoundError" in missing.stderr and "'ptb_test_outputs'" in missing.stderr
