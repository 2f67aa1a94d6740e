"""Every notebook in examples/notebooks runs top to bottom in a Jupyter kernel (nbclient and
ipykernel, on this virtual environment's Python) and checks its own results; the rich displays
reach the notebook as HTML."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).parents[2]
NOTEBOOKS = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))
KERNEL = "pytvmbridge-test"


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_notebooks", ROOT / "tools" / "make_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """A kernel spec for this interpreter (the venv's python), found through JUPYTER_PATH, so
    the notebooks run against the pytvmbridge under test whatever kernels the user has."""
    root = tmp_path_factory.mktemp("jupyter")
    spec_dir = root / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "pytvmbridge (test)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    mp = pytest.MonkeyPatch()
    mp.setenv("JUPYTER_PATH", str(root))
    mp.setenv("JUPYTER_PLATFORM_DIRS", "1")
    yield
    mp.undo()


def test_there_are_notebooks():
    names = {p.name for p in NOTEBOOKS}
    assert {"01_dlpack_bridge_tour.ipynb", "02_gemm_schedules.ipynb"} <= names
    assert any("tensor_comprehensions" in n for n in names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_generated_and_clean(path):
    """The files are what tools/make_notebooks.py writes: no stored outputs."""
    assert path.read_text() == _generator().render(path.name)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def _outputs(nb, mime):
    return [
        out["data"][mime]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.get("output_type") in ("execute_result", "display_data") and mime in out["data"]
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_env):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, kernel_name=KERNEL, timeout=300, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError on any failing cell not tagged raises-exception

    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" in cell.metadata.get("tags", []):
            # The TCError is shown by its _render_traceback_: the source line and a caret.
            assert len(errors) == 1 and errors[0].ename == "TCError"
            shown = "\n".join(errors[0].traceback)
            assert "B(i) = A(i) +* 2" in shown and "^" in shown and "Traceback" not in shown
        else:
            assert errors == []

    html = "\n".join(_outputs(nb, "text/html"))
    # Every displayed object reached the notebook through _repr_html_, not as a plain repr.
    assert "<details>" in html or "Tensor" in html
    if path.stem.startswith("02_"):
        assert "Schedule" in html and "parallel" in html and "Module" in html
        assert _outputs(nb, "image/png"), "the GFLOPS bar chart"
    if path.stem.startswith("01_"):
        assert "Tensor Z" in html and "Module fmm" in html
    if "tensor_comprehensions" in path.stem:
        assert "TC def matmul" in html and "TC def fcrelu" in html
