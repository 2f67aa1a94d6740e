"""Makes the working tree's pytvmbridge importable in .venv-mxnet without building it again.

MXNet 1.9.1 needs NumPy < 1.24, so its tests run in their own virtual environment. That
environment uses the same interpreter as .venv, hence the same compiled extension: `make
.venv-mxnet/.linked` copies this file into its site-packages as ``_pytvmbridge_tree.py`` and adds
a ``.pth`` line calling ``install(package_dir, core_path)``. The finder below then serves
``pytvmbridge`` from the tree and ``pytvmbridge._core`` from .venv's build, and nothing else.

Example (what the .pth line does):
    >>> import _pytvmbridge_tree  # doctest: +SKIP
    >>> _pytvmbridge_tree.install("/repo/pytvmbridge", "/repo/.venv/.../_core.so")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


class TreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``pytvmbridge`` in the working tree and its ``_core`` extension in .venv."""

    def __init__(self, package_dir: str, core_path: str) -> None:
        self.package_dir = package_dir
        self.core_path = core_path

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pytvmbridge":
            return importlib.util.spec_from_file_location(
                fullname,
                os.path.join(self.package_dir, "__init__.py"),
                submodule_search_locations=[self.package_dir],
            )
        if fullname == "pytvmbridge._core":
            return importlib.util.spec_from_file_location(fullname, self.core_path)
        return None


def install(package_dir: str, core_path: str) -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, TreeFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TreeFinder(package_dir, core_path))
