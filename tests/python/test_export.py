"""Saving and loading compiled modules (API.md section 9): round trips in fresh processes,
refusal of code for CPU features the host lacks, and clear errors for damaged files."""

from __future__ import annotations

import json
import math
import pickle
import platform
import struct
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytvmbridge as tvm
from pytvmbridge import _core

HEADER = 16  # magic, version, reserved


def build_shift_erfc() -> tvm.Module:
    """A kernel with a symbolic size, an output size expression and a libm/libmvec call."""
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    # erfc: float32 exp and tanh are inline code (no import), erfc a libm/libmvec call.
    B = tvm.compute((n - 1,), lambda i: tvm.erfc(A[i]) * 2.0 + A[i + 1], name="B")
    return tvm.build(tvm.create_schedule(B.op), [A, B], name="shift_erfc")


def reference(a: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erfc)(a[:-1].astype("float64")) * 2.0 + a[1:]


def split(data: bytes) -> tuple[dict, list[bytes], bytes]:
    """The file's sections, read independently of the C++ parser (the layout of
    csrc/runtime/module_file.h): manifest, objects, IR."""
    pos = HEADER

    def section() -> bytes:
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + n
        return data[pos - n : pos]

    manifest = json.loads(section())
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    objects = [section() for _ in range(count)]
    ir = section()
    assert pos + 4 == len(data)
    return manifest, objects, ir


def pack(manifest: dict, objects: list[bytes], ir: bytes, version: int = 1) -> bytes:
    text = json.dumps(manifest).encode()
    body = b"PTBMOD\r\n" + struct.pack("<II", version, 0)
    body += struct.pack("<Q", len(text)) + text + struct.pack("<I", len(objects))
    for section in (*objects, ir):
        body += struct.pack("<Q", len(section)) + section
    return body + struct.pack("<I", zlib.crc32(body))


def run_fresh(code: str, timeout: float = 120) -> str:
    """Runs code in a new interpreter (nothing compiled in this process is visible there)."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_round_trip_in_a_fresh_process_needs_no_compiler(tmp_path):
    path = tmp_path / "shift_erfc.so"
    build_shift_erfc().export_library(str(path))
    a = np.random.default_rng(0).random(37, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    out = run_fresh(f"""
        import numpy as np, pytvmbridge as tvm
        from pytvmbridge import _core
        # Loading must not lower or build: make both fail loudly in this process.
        def refuse(*args, **kwargs):
            raise AssertionError("compiled while loading")
        _core.build = _core.lower = refuse
        f = tvm.runtime.load_module({str(path)!r})
        a = np.load({str(tmp_path / "a.npy")!r})
        b = np.empty(36, "float32")
        f(a, b)
        np.save({str(tmp_path / "b.npy")!r}, b)
        print(f.entry_name, f.arg_shapes)
    """)
    assert out.strip() == "shift_erfc [('n',), ('(n - 1)',)]"
    np.testing.assert_allclose(np.load(tmp_path / "b.npy"), reference(a), rtol=1e-5)


def test_loaded_module_keeps_signature_checks_and_source(tmp_path):
    path = tmp_path / "k.ptb"
    f = build_shift_erfc()
    f.save(str(path))
    g = tvm.runtime.load_module(path)
    assert g.arg_names == f.arg_names and g.arg_dtypes == f.arg_dtypes
    assert g.is_output == f.is_output
    assert g.get_source("ll") == f.get_source("ll")
    assert "shift_erfc" in g.get_source("asm")
    a = np.arange(5, dtype="float32")
    with pytest.raises(ValueError, match=r"expected size 4 \(\(n - 1\)\) in dimension 0, got 3"):
        g(a, np.empty(3, "float32"))
    with pytest.raises(TypeError, match="expected dtype float32, got float64"):
        g(a.astype("float64"), np.empty(4, "float32"))
    # The output shape expression is evaluated from the inputs as before.
    assert g.output_shapes(a) == [[4]]


def test_saved_without_ir_says_why_there_is_no_source(tmp_path):
    path = tmp_path / "k.ptb"
    build_shift_erfc().export_library(path, include_ir=False)
    g = tvm.runtime.load_module(path)
    with pytest.raises(ValueError, match="saved without its LLVM IR"):
        g.get_source("ll")
    b = np.empty(2, "float32")
    a = np.array([0.0, 1.0, 2.0], "float32")
    g(a, b)
    np.testing.assert_allclose(b, reference(a), rtol=1e-6)


def test_manifest_records_versions_target_features_signature_and_imports(tmp_path):
    path = tmp_path / "k.ptb"
    build_shift_erfc().export_library(path)
    m = tvm.runtime.read_manifest(path)
    assert m["format_version"] == 1 and m["pytvmbridge_version"] == tvm.__version__
    assert m["llvm_version"].startswith("19.")
    assert m["triple"].startswith(("x86_64", "aarch64"))
    host = _core.host_cpu_features()
    assert m["cpu_features"] and all(host[f] for f in m["cpu_features"])
    assert m["args"][0]["shape"] == [{"var": 0, "name": "n", "dtype": "int32"}]
    assert m["args"][1]["shape"][0]["text"] == "(n - 1)"
    assert [a["output"] for a in m["args"]] == [False, True]
    assert "erfcf" in m["imports"]  # the scalar tail of erfc(); the vector body may use libmvec


def test_a_feature_the_host_lacks_is_refused_before_anything_runs(tmp_path):
    data = tvm.runtime.module_to_bytes(build_shift_erfc())
    manifest, obj, ir = split(data)
    lacking = sorted(name for name, present in _core.host_cpu_features().items() if not present)
    feature = lacking[0] if lacking else "ptb-imaginary-feature"
    manifest["cpu_features"].append(feature)
    manifest["cpu"] = "some-future-cpu"
    path = tmp_path / "future.so"
    path.write_bytes(pack(manifest, obj, ir))
    with pytest.raises(ValueError, match=rf"CPU 'some-future-cpu'.*lacks: {feature}"):
        tvm.runtime.load_module(path)


# Vector-ISA features LLVM accepts in -mattr= for any x86-64 CPU; no CPU has all of them.
_VECTOR_FEATURES = ["xop", "fma4", "avx512fp16", "avx512vp2intersect", "amx-tile", "avx512f"]


def _a_vector_feature_the_host_lacks() -> str:
    host = _core.host_cpu_features()
    return next(f for f in _VECTOR_FEATURES if not host.get(f, False))


def test_a_build_for_features_the_host_lacks_refuses_to_run_but_exports(tmp_path):
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the feature names are x86's")
    feature = _a_vector_feature_the_host_lacks()
    A = tvm.placeholder((8,), name="A")
    B = tvm.compute((8,), lambda i: A[i] * 2.0, name="B")
    f = tvm.build(tvm.create_schedule(B.op), [A, B], target=f"llvm -mattr=+{feature}", name="dbl")
    b = np.full(8, -1.0, "float32")
    with pytest.raises(ValueError, match=rf"kernel 'dbl' was built for .*lacks: [^;]*{feature}"):
        f(np.ones(8, "float32"), b)
    assert (b == -1.0).all()  # nothing ran
    path = tmp_path / "dbl.so"
    f.export_library(path)  # for the machine that has it
    assert feature in tvm.runtime.read_manifest(path)["cpu_features"]
    with pytest.raises(ValueError, match=rf"lacks: [^;]*{feature}"):
        tvm.runtime.load_module(path)
    k = tvm.kernel(
        lambda a: tvm.compute(a.shape, lambda i: a[i] + 1.0), target=f"llvm -mattr=+{feature}"
    )
    with pytest.raises(ValueError, match=rf"lacks: [^;]*{feature}"):
        k(np.ones(4, "float32"))


def test_system_features_a_virtual_machine_hides_are_not_required(tmp_path):
    # "-mcpu=<this CPU>": the CPU model implies features such as protection keys (pku) or
    # MWAITX that virtual machines often hide; generated code never uses them, so the build runs
    # here, and its export records and loads without them.
    A = tvm.placeholder((8,), name="A")
    B = tvm.compute((8,), lambda i: A[i] + 1.0, name="B")
    f = tvm.build(tvm.create_schedule(B.op), [A, B], target=f"llvm -mcpu={_core.host_cpu_name()}")
    a, b = np.arange(8, dtype="float32"), np.empty(8, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)
    path = tmp_path / "inc.so"
    f.export_library(path)
    features = tvm.runtime.read_manifest(path)["cpu_features"]
    assert not {"pku", "mwaitx", "rdpru", "wbnoinvd", "sgx", "rdrnd"} & set(features)
    host = _core.host_cpu_features()
    assert all(host[name] for name in features)
    g = tvm.runtime.load_module(path)
    g(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_another_format_version_is_refused(tmp_path):
    manifest, obj, ir = split(tvm.runtime.module_to_bytes(build_shift_erfc()))
    path = tmp_path / "v2.so"
    path.write_bytes(pack(manifest, obj, ir, version=2))
    with pytest.raises(ValueError, match=r"format version 2 is not supported.*reads version 1"):
        tvm.runtime.load_module(path)


def test_not_a_module_file(tmp_path):
    path = tmp_path / "x.so"
    path.write_bytes(b"\x7fELF" + bytes(100))
    with pytest.raises(ValueError, match="not a pytvmbridge module file"):
        tvm.runtime.load_module(path)
    with pytest.raises(FileNotFoundError):
        tvm.runtime.load_module(tmp_path / "missing.so")


def test_a_manifest_that_does_not_describe_a_module_is_a_clear_error(tmp_path):
    manifest, obj, ir = split(tvm.runtime.module_to_bytes(build_shift_erfc()))
    manifest["args"][1]["stride_slots"] = [99]
    path = tmp_path / "bad.so"
    path.write_bytes(pack(manifest, obj, ir))
    with pytest.raises(ValueError, match="invalid module manifest: slot 99 is out of range"):
        tvm.runtime.load_module(path)
    del manifest["args"]
    path.write_bytes(pack(manifest, obj, ir))
    with pytest.raises(ValueError, match="missing field 'args'"):
        tvm.runtime.load_module(path)


DATA = None


def saved_bytes() -> bytes:
    global DATA
    if DATA is None:
        DATA = tvm.runtime.module_to_bytes(build_shift_erfc())
    return DATA


def test_every_truncation_is_a_clear_error():
    data = saved_bytes()
    for n in sorted({*range(0, 40), *range(40, len(data), 997), len(data) - 1}):
        with pytest.raises(ValueError, match=r"truncated|corrupted|not a pytvmbridge"):
            tvm.runtime.module_from_bytes(data[:n], "cut")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_bytes_are_a_clear_error(draw):
    data = bytearray(saved_bytes())
    flips = draw.draw(st.lists(st.integers(0, len(data) - 1), min_size=1, max_size=4))
    for i in flips:
        data[i] ^= draw.draw(st.integers(1, 255))
    if bytes(data) == saved_bytes():
        return
    with pytest.raises(ValueError, match=r"truncated|corrupted|not a pytvmbridge|not supported"):
        tvm.runtime.module_from_bytes(bytes(data), "flipped")


def test_pickle_carries_the_code_not_a_path(tmp_path):
    f = build_shift_erfc()
    blob = pickle.dumps(f)
    assert b"PTBMOD" in blob and str(tmp_path).encode() not in blob
    out = run_fresh(f"""
        import pickle, numpy as np
        g = pickle.loads({blob!r})
        a = np.linspace(0, 1, 9, dtype="float32"); b = np.empty(8, "float32")
        g(a, b)
        print(repr(b.tolist()))
    """)
    a = np.linspace(0, 1, 9, dtype="float32")
    np.testing.assert_allclose(eval(out), reference(a), rtol=1e-5)


def test_torch_save_of_a_module_round_trips(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "m.pt"
    torch.save({"kernel": build_shift_erfc()}, path)
    out = run_fresh(f"""
        import torch
        import pytvmbridge
        g = torch.load({str(path)!r}, weights_only=False)["kernel"]
        a = torch.arange(6, dtype=torch.float32) / 5; b = torch.empty(5)
        g(a, b)
        print(repr(b.tolist()))
    """)
    a = (np.arange(6, dtype=np.float32) / 5).astype(np.float32)
    np.testing.assert_allclose(eval(out), reference(a), rtol=1e-5)


def test_two_function_kernels_with_matmul_and_parallel_loops(tmp_path):
    n = tvm.var("n")
    A = tvm.placeholder((n, 16), name="A")
    W = tvm.placeholder((16, 8), name="W")
    k = tvm.reduce_axis((0, 16), name="k")
    C = tvm.compute((n, 8), lambda i, j: tvm.sum(A[i, k] * W[k, j], axis=k), name="C")
    s = tvm.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    path = tmp_path / "mm.so"
    tvm.build(s, [A, W, C], name="mm").export_library(path)
    g = tvm.runtime.load_module(path)
    rng = np.random.default_rng(1)
    a, w = rng.random((200, 16), np.float32), rng.random((16, 8), np.float32)
    c = np.empty((200, 8), np.float32)
    g(a, w, c)
    np.testing.assert_allclose(c, a @ w, rtol=1e-5)
    # A strided (non-compact) output takes the generic function.
    big = np.zeros((200, 16), np.float32)
    g(a, w, big[:, ::2])
    np.testing.assert_allclose(big[:, ::2], a @ w, rtol=1e-5)


def test_saved_files_hold_the_strided_variant_unless_asked_not_to(tmp_path):
    f = build_shift_erfc()
    roles = {fn["role"] for fn in split(tvm.runtime.module_to_bytes(f))[0]["functions"]}
    assert roles == {"compact", "generic"}
    g = tvm.runtime.module_from_bytes(tvm.runtime.module_to_bytes(f))
    a = np.linspace(0, 1, 20, dtype="float32")
    out = np.zeros(36, "float32")
    g(a[::2], out[::4])  # strided input and output: the generic variant
    np.testing.assert_allclose(out[::4], reference(a[::2]), rtol=1e-5)
    compact_only = build_shift_erfc()
    data = tvm.runtime.module_to_bytes(compact_only, include_generic=False)
    assert [fn["role"] for fn in split(data)[0]["functions"]] == ["compact"]
    h = tvm.runtime.module_from_bytes(data, "compact.ptb")
    b = np.empty(9, "float32")
    h(a[:10], b)
    np.testing.assert_allclose(b, reference(a[:10]), rtol=1e-5)
    with pytest.raises(ValueError, match="saved without its variant for strided arrays"):
        h(a[::2], b)


def test_export_to_a_bad_path_names_that_path_and_leaves_nothing_behind(tmp_path):
    f = build_shift_erfc()
    missing = tmp_path / "no_such_folder" / "k.so"
    with pytest.raises(
        FileNotFoundError, match=r"no folder .*no_such_folder.* to write into"
    ) as err:
        f.export_library(missing)
    assert err.value.filename == str(missing)
    with pytest.raises(IsADirectoryError, match="is a directory") as err:
        f.export_library(tmp_path)
    assert err.value.filename == str(tmp_path)
    with pytest.raises(ValueError, match="the file name is empty"):
        f.save("")
    assert list(tmp_path.iterdir()) == []  # no temporary file left


# ---- files edited on purpose (the CRC recomputed): errors, never a crash ----


def pack_text(manifest_text: bytes, objects: list[bytes], ir: bytes) -> bytes:
    """pack() with the manifest's bytes as given (not necessarily JSON of a dict)."""
    body = b"PTBMOD\r\n" + struct.pack("<II", 1, 0)
    body += struct.pack("<Q", len(manifest_text)) + manifest_text
    body += struct.pack("<I", len(objects))
    for section in (*objects, ir):
        body += struct.pack("<Q", len(section)) + section
    return body + struct.pack("<I", zlib.crc32(body))


def test_edited_files_are_value_errors_not_crashes(tmp_path):
    data = tvm.runtime.module_to_bytes(build_shift_erfc())
    manifest, objects, ir = split(data)
    # A manifest nested past any module's depth (LLVM's JSON parser recursed until the stack
    # overflowed), in a fresh interpreter so that a regression cannot take the suite with it
    deep = tmp_path / "deep.ptb"
    deep.write_bytes(pack_text(b"[" * 100000 + b"]" * 100000, objects, ir))
    out = run_fresh(
        f"""
        import pytvmbridge as tvm
        try:
            tvm.runtime.load_module({str(deep)!r})
        except ValueError as err:
            print(err)
        """
    )
    assert "nests too deeply" in out
    # An integer size of a float dtype
    text = json.dumps(manifest)
    assert '{"dtype": "int32", "int": 1}' in text
    edited = json.loads(
        text.replace('{"dtype": "int32", "int": 1}', '{"dtype": "float32", "int": 1}')
    )
    with pytest.raises(ValueError, match="an integer size has dtype float32"):
        tvm.runtime.module_from_bytes(pack(edited, objects, ir))
    # IR that parses but is not valid (a phi missing an incoming edge): assembly is refused
    bad_ir = (
        b"define i32 @f(i1 %c) {\nentry:\n  br i1 %c, label %a, label %b\na:\n  br label %m\n"
        b"b:\n  br label %m\nm:\n  %x = phi i32 [1, %a]\n  ret i32 %x\n}\n"
    )
    loaded = tvm.runtime.module_from_bytes(pack(manifest, objects, bad_ir))
    with pytest.raises(ValueError, match="IR is not valid"):
        loaded.get_source("asm")
    with pytest.raises(ValueError, match="does not parse"):
        tvm.runtime.module_from_bytes(pack(manifest, objects, b"not IR")).get_source("asm")


def test_a_file_that_is_no_module_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.so"
    with open(path, "wb") as f:
        f.write(b"\x7fELF")
        f.truncate(1 << 30)  # a sparse gigabyte: only its first bytes are read
    with pytest.raises(ValueError, match=r"not a pytvmbridge module file .* does not begin"):
        tvm.runtime.load_module(path)
    with pytest.raises(ValueError, match="read_manifest: not a pytvmbridge module file"):
        tvm.runtime.read_manifest(path)
    with pytest.raises(TypeError, match=r"load_module: path must be a str or os\.PathLike"):
        tvm.runtime.load_module(None)
