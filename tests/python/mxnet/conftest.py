"""MXNet tests run in .venv-mxnet (`make test-mxnet`, part of `make test`): MXNet 1.9.1 needs
NumPy < 1.24. In .venv, which has no MXNet, pytest collects nothing here."""

import importlib.util

# tests/python is on sys.path (its conftest.py), where this directory would pass for a namespace
# package named mxnet: only a real module (one with a file) counts.
_spec = importlib.util.find_spec("mxnet")
if _spec is None or _spec.origin is None:
    collect_ignore_glob = ["test_*.py"]


def pytest_configure(config):
    # MXNet 1.9 warns about NumPy and distutils names on import; not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:mxnet.*")
