"""The PyTorchTVM RFC's workflow end to end: compile a model with `compile(model, option)`, use
it inside a larger nn.Module with pre- and post-processing, export it, then load and serve it in
a fresh process, checking the results against eager PyTorch.

The RFC compiles a ResNet; here the model is a residual MLP (blocks of Linear/ReLU with skip
connections), which the converter of pytvmbridge.torch_compile handles on its own; with the graph
compiler (pytvmbridge.graph) installed, convolutional ResNets go through the same calls.

    .venv/bin/python examples/pytorchtvm.py
"""

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import torch

import pytvmbridge  # noqa: F401  (registers the pytvmbridge::run_module op with torch)
from pytvmbridge import torch_compile


class ResidualBlock(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(width, width)
        self.fc2 = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.fc2(torch.relu(self.fc1(x))))


class ResidualMLP(torch.nn.Module):
    def __init__(self, features: int = 32, width: int = 64, classes: int = 10) -> None:
        super().__init__()
        self.stem = torch.nn.Linear(features, width)
        self.blocks = torch.nn.Sequential(ResidualBlock(width), ResidualBlock(width))
        self.head = torch.nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(torch.relu(self.stem(x))))


class Pipeline(torch.nn.Module):
    """Pre-processing and post-processing in PyTorch around the compiled model."""

    def __init__(self, compiled: torch.nn.Module) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, raw: torch.Tensor) -> torch.Tensor:
        x = (raw - raw.mean(dim=1, keepdim=True)) / (raw.std(dim=1, keepdim=True) + 1e-5)
        return torch.softmax(self.compiled(x), dim=1)


def main() -> None:
    torch.manual_seed(0)
    model = ResidualMLP().eval()
    export_dir = Path(tempfile.mkdtemp(prefix="pytorchtvm-"))
    option = {
        "input_infos": [("x", ("batch", 32))],  # "batch": one kernel for every batch size
        "default_dtype": "float32",
        "export_dir": str(export_dir / "model"),
        "num_outputs": 1,
        "tuning_n_trials": 0,  # no tuning in this example
        "tuning_log_file": None,
    }
    compiled = torch_compile.compile(model, option)
    pipeline = Pipeline(compiled)
    eager = Pipeline(model)
    raw = torch.randn(16, 32) * 3 + 1
    torch.testing.assert_close(pipeline(raw), eager(raw), atol=1e-5, rtol=1e-5)
    print("compiled pipeline matches eager on a batch of 16")

    # The whole pipeline as a torch.export program: the compiled part is the custom op, its code a
    # constant of the program; a batch dimension stays symbolic.
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(pipeline, (raw,), dynamic_shapes=({0: batch},))
    torch.export.save(program, str(export_dir / "pipeline.pt2"))
    x5 = torch.randn(5, 32)
    torch.save(
        {"raw": raw, "expected": eager(raw), "x": x5, "model_expected": model(x5).detach()},
        export_dir / "check.pt",
    )

    # Serving in a fresh process: load the exported model directory (no compiler runs) and the
    # exported pipeline program, and compare with the eager results computed here.
    serve = textwrap.dedent(f"""
        import torch
        import pytvmbridge
        from pytvmbridge import _core, torch_compile
        def refuse(*args, **kwargs):
            raise AssertionError("compiled while loading")
        _core.build = _core.lower = refuse
        check = torch.load({str(export_dir / "check.pt")!r})
        program = torch.export.load({str(export_dir / "pipeline.pt2")!r}).module()
        torch.testing.assert_close(program(check["raw"]), check["expected"], atol=1e-5, rtol=1e-5)
        model = torch_compile.load({str(export_dir / "model")!r})
        out = model(check["x"])
        torch.testing.assert_close(out, check["model_expected"], atol=1e-5, rtol=1e-5)
        print("loaded model matches eager for a batch of", out.shape[0])
    """)
    result = subprocess.run([sys.executable, "-c", serve], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    print(result.stdout.strip())
    print("fresh process: exported pipeline matches eager; model loaded without compiling")


if __name__ == "__main__":
    main()
