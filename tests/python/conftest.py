"""Test-session setup shared by every test file.

The compile cache (pytvmbridge/cache.py) writes to a fresh temporary directory for the session,
removed at the end: tests never read or fill the user's own cache (``~/.cache/pytvmbridge`` or
their ``PYTVMBRIDGE_CACHE_DIR``), and subprocesses started by tests inherit the same directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest

_CACHE_DIR = tempfile.mkdtemp(prefix="pytvmbridge-test-cache-")
os.environ["PYTVMBRIDGE_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("PYTVMBRIDGE_CACHE", None)
# TorchInductor compiles in this process rather than in a pool of worker processes that it starts
# (each imports torch: seconds of start-up per test process that calls torch.compile, for kernels
# that are small here). Subprocesses started by tests inherit it too.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts with TorchDynamo's caches empty: what one test compiled (and the sizes
    it saw, which make later compiles of the same code dynamic) does not change the next one's
    graphs, whichever tests a worker process ran before it."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        dynamo.reset()
    yield


def pytest_sessionfinish(session, exitstatus):
    del session, exitstatus
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)
