"""The PyTorchTVM RFC's workflow end to end: compile a model with `compile(model, option)`, use
it inside a larger nn.Module with pre- and post-processing, export it, then load and serve it in
a fresh process, checking the results against eager PyTorch.

As in the RFC the model is a ResNet: a small one here (basic residual blocks of convolution, batch
norm and ReLU, a strided stage with a projection shortcut, global pooling and a linear head, on
32x32 images) so that the example runs in seconds; `benchmarks/export.py` does the same with a
full ResNet-18 at 224x224. The batch size is symbolic: one compiled kernel serves every batch.

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


class BasicBlock(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.shortcut = torch.nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class SmallResNet(torch.nn.Module):
    def __init__(self, width: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, width, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(width),
            torch.nn.ReLU(),
        )  # fmt: skip
        self.stages = torch.nn.Sequential(
            BasicBlock(width, width, 1), BasicBlock(width, 2 * width, 2)
        )
        self.head = torch.nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Global average pooling as a mean over the image (a flatten of the pooled map would
        # read the symbolic batch size, aten.sym_size, which the graph compiler lacks).
        return self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))


def randomize_batch_norm(model: torch.nn.Module) -> None:
    """Non-trivial running statistics, as a trained model has (fresh ones are 0 and 1)."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)


class Pipeline(torch.nn.Module):
    """Pre-processing and post-processing in PyTorch around the compiled model."""

    def __init__(self, compiled: torch.nn.Module) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, raw: torch.Tensor) -> torch.Tensor:
        # Images in [0, 255] -> per-image standardized floats; logits -> probabilities.
        x = raw / 255.0
        x = (x - x.mean(dim=(1, 2, 3), keepdim=True)) / (x.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
        return torch.softmax(self.compiled(x), dim=1)


def main() -> None:
    torch.manual_seed(0)
    model = SmallResNet().eval()
    randomize_batch_norm(model)
    export_dir = Path(tempfile.mkdtemp(prefix="pytorchtvm-"))
    option = {
        "input_infos": [("x", ("batch", 3, 32, 32))],  # "batch": one kernel for every size
        "default_dtype": "float32",
        "export_dir": str(export_dir / "model"),
        "num_outputs": 1,
        "tuning_n_trials": 0,  # no tuning in this example
        "tuning_log_file": None,
    }
    compiled = torch_compile.compile(model, option)
    pipeline = Pipeline(compiled)
    eager = Pipeline(model)
    raw = torch.rand(16, 3, 32, 32) * 255
    with torch.no_grad():
        torch.testing.assert_close(pipeline(raw), eager(raw), atol=1e-5, rtol=1e-4)
    print("compiled pipeline matches eager on a batch of 16")

    # The whole pipeline as a torch.export program: the compiled part is the custom op, its code a
    # constant of the program; a batch dimension stays symbolic.
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(pipeline, (raw,), dynamic_shapes=({0: batch},))
    torch.export.save(program, str(export_dir / "pipeline.pt2"))
    x5 = torch.randn(5, 3, 32, 32)
    with torch.no_grad():
        check = {"raw": raw, "expected": eager(raw), "x": x5, "model_expected": model(x5)}
    torch.save(check, export_dir / "check.pt")

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
        torch.testing.assert_close(program(check["raw"]), check["expected"], atol=1e-5, rtol=1e-4)
        model = torch_compile.load({str(export_dir / "model")!r})
        out = model(check["x"])
        torch.testing.assert_close(out, check["model_expected"], atol=1e-4, rtol=1e-4)
        print("loaded model matches eager for a batch of", out.shape[0])
    """)
    result = subprocess.run([sys.executable, "-c", serve], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    print(result.stdout.strip())
    print("fresh process: exported pipeline matches eager; model loaded without compiling")


if __name__ == "__main__":
    main()
