"""Every docstring example in the package runs and prints what it says (`help(...)` is where
many users first meet an API). Run by pytest's doctest collector in a fresh interpreter, so that
the examples' global settings (a cache switched off, a thread count) stay out of other tests.
The MXNet adapter is left out: MXNet lives in its own virtual environment (tests/python/mxnet)."""

import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "pytvmbridge"


def test_every_docstring_example_runs():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--doctest-modules",
            str(PACKAGE),
            f"--ignore={PACKAGE / 'frameworks' / 'mxnet.py'}",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=PACKAGE.parent,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
