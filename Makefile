# Two commands on a fresh machine: `make demo` and `make test`. Both are idempotent: every step
# leaves a stamp and is skipped when its inputs have not changed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := llvm-19-dev libdlpack-dev libgtest-dev clang-format-19 cmake g++ python3-venv
PY_DEPS := numpy torch==2.13.0 jax pytest hypothesis pybind11 scikit-build-core ninja ruff mpmath \
	tqdm matplotlib nbclient nbformat ipykernel xgboost-cpu ray pytest-xdist
BUILD_DIR := build/dev
SOURCES := $(shell find csrc tests/cpp -name '*.cc' -o -name '*.h' 2>/dev/null) \
	$(shell find pytvmbridge -name '*.py' 2>/dev/null) CMakeLists.txt pyproject.toml

.PHONY: demo test build setup test-cpp test-python test-mxnet test-asan lint format bench clean kernel notebooks

demo: build
	$(PY) examples/quickstart.py

test: build test-cpp test-python test-mxnet

setup: $(VENV)/.deps

build: $(BUILD_DIR)/.installed

# System packages: installed with apt-get only when one is missing.
build/.apt:
	@mkdir -p build
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  echo "installing $(APT_PACKAGES)"; \
	  SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES); \
	fi
	@touch $@

$(VENV)/.deps: build/.apt Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PY_DEPS)
	@touch $@

# An editable install: Python files are used from the tree, the extension and the C++ tests are
# built once, incrementally, in $(BUILD_DIR). flock keeps concurrent builds from colliding.
$(BUILD_DIR)/.installed: $(VENV)/.deps $(SOURCES)
	@mkdir -p $(BUILD_DIR)
	flock build/.lock $(PY) -m pip install -q --no-build-isolation --no-deps -e . \
	  -Cbuild-dir=$(BUILD_DIR) -Ccmake.define.PYTVMBRIDGE_BUILD_TESTS=ON
	@touch $@

test-cpp: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j2

# The Python suite runs in PYTEST_WORKERS processes (pytest-xdist), one test file per process at
# a time (--dist loadfile: a file's module fixtures are made once, its tests keep their order). Its
# tests are CPU-bound and single-threaded for most of their time, so two workers on two cores take
# about half the wall time of one; PYTEST_WORKERS=0 runs them in this process.
PYTEST_WORKERS ?= 2
test-python: build
	$(VENV)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile tests/python

# MXNet 1.9.1 (the last on PyPI) needs NumPy < 1.24, so its tests run in a virtual environment
# of their own. It uses the extension built for .venv (same interpreter): a small import hook,
# tests/python/mxnet/_venv_hook.py, serves pytvmbridge from the tree, and nothing is built twice.
MXNET_VENV := .venv-mxnet
MXNET_PY := $(MXNET_VENV)/bin/python
MXNET_DEPS := mxnet==1.9.1 'numpy<1.24' pytest

# Made from .venv's own interpreter: the extension built for .venv must load in it.
$(MXNET_VENV)/.deps: $(VENV)/.deps Makefile
	@test -x $(MXNET_PY) || $$($(PY) -c 'import sys; print(sys._base_executable)') -m venv $(MXNET_VENV)
	$(MXNET_PY) -m pip install -q --upgrade pip
	$(MXNET_PY) -m pip install -q $(MXNET_DEPS)
	@touch $@

$(MXNET_VENV)/.linked: $(MXNET_VENV)/.deps $(BUILD_DIR)/.installed tests/python/mxnet/_venv_hook.py
	@site=$$($(MXNET_PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	core=$$($(PY) -c 'import importlib.util as u; print(u.find_spec("pytvmbridge._core").origin)') && \
	cp tests/python/mxnet/_venv_hook.py "$$site/_pytvmbridge_tree.py" && \
	echo "import _pytvmbridge_tree; _pytvmbridge_tree.install('$(CURDIR)/pytvmbridge', '$$core')" \
	  > "$$site/pytvmbridge_tree.pth"
	$(MXNET_PY) -c 'import pytvmbridge, mxnet'
	@touch $@

test-mxnet: build $(MXNET_VENV)/.linked
	$(MXNET_VENV)/bin/pytest -q -p no:cacheprovider --confcutdir=tests/python/mxnet tests/python/mxnet

# AddressSanitizer + UBSan (not part of `make test`: slow). The extension and the C++ tests are
# built in their own directory; the Python tests load that extension through a sitecustomize
# hook, in an interpreter with libasan preloaded. Leak detection is off: CPython and PyTorch
# keep allocations alive until exit by design, which would drown real reports.
ASAN_DIR := build/asan
ASAN_PYTESTS := tests/python/test_te.py tests/python/test_schedule.py \
	tests/python/test_schedule_errors.py tests/python/test_schedule_sizes.py \
	tests/python/test_build.py tests/python/test_kernel.py tests/python/test_tc.py \
	tests/python/test_tc_errors.py tests/python/test_nd.py
ASAN_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:detect_odr_violation=0:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

test-asan: setup
	@mkdir -p $(ASAN_DIR)/site
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DPYTVMBRIDGE_SANITIZE=ON -DPYTVMBRIDGE_BUILD_TESTS=ON \
	  -DPython_EXECUTABLE=$(CURDIR)/$(PY) \
	  -Dpybind11_DIR=$$($(PY) -c 'import pybind11; print(pybind11.get_cmake_dir())')
	flock build/.asan.lock cmake --build $(ASAN_DIR)
	$(ASAN_ENV) ctest --test-dir $(ASAN_DIR) --output-on-failure -j2
	@core=$$(ls $(CURDIR)/$(ASAN_DIR)/_core*.so) && printf '%s\n' \
	  'import importlib.util, sys' \
	  "spec = importlib.util.spec_from_file_location('_ptb_hook', '$(CURDIR)/tests/python/mxnet/_venv_hook.py')" \
	  'hook = importlib.util.module_from_spec(spec); spec.loader.exec_module(hook)' \
	  "hook.install('$(CURDIR)/pytvmbridge', '$$core')" > $(ASAN_DIR)/site/sitecustomize.py
	$(ASAN_ENV) PYTHONPATH=$(CURDIR)/$(ASAN_DIR)/site \
	  LD_PRELOAD="$$($(CXX) -print-file-name=libasan.so) $$($(CXX) -print-file-name=libstdc++.so)" \
	  $(VENV)/bin/pytest -q -p no:cacheprovider -x $(ASAN_PYTESTS)

lint: setup
	$(VENV)/bin/ruff check pytvmbridge tests benchmarks examples
	clang-format-19 --dry-run -Werror $$(find csrc tests/cpp -name '*.cc' -o -name '*.h')

format: setup
	$(VENV)/bin/ruff format pytvmbridge tests benchmarks examples
	clang-format-19 -i $$(find csrc tests/cpp -name '*.cc' -o -name '*.h')

bench: build
	$(PY) benchmarks/compile_and_call.py

# A Jupyter kernel named "pytvmbridge" running .venv's Python, for examples/notebooks.
kernel: build
	$(PY) -m ipykernel install --user --name pytvmbridge --display-name "Python (pytvmbridge)"

# Rewrites examples/notebooks/*.ipynb from tools/make_notebooks.py (outputs are never stored).
notebooks: setup
	$(PY) tools/make_notebooks.py

clean:
	rm -rf build $(VENV) .venv-mxnet
