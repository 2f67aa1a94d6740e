"""Bad arrays on the call path (issue 9, items 6 and 10-18): each is refused with an exception
that names the argument, on every way a kernel is called, and nothing is written."""

import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import _core
from pytvmbridge.bridges import to_numpy, to_pytorch


def build_inc(shape=None):
    n = tvm.var("n")
    A = tvm.placeholder(shape or (n,), name="A")
    B = tvm.compute(A.shape, lambda *i: A[i] + 1.0, name="B")
    return tvm.build(tvm.create_schedule(B.op), [A, B], name="inc")


@tvm.kernel
def inc(A):
    return tvm.compute(A.shape, lambda i: A[i] + 1.0, name="B")


@pytest.fixture(params=["exchange", "dlpack"])
def import_route(request):
    """Every test using it runs through PyTorch's C exchange table and through __dlpack__."""
    enabled = request.param == "exchange"
    _core._set_exchange_api_enabled(enabled)
    yield request.param
    _core._set_exchange_api_enabled(True)


# Item 6: a negated view's memory holds -x: reading or writing it as plain memory is wrong.
def test_negative_bit_views_are_refused_on_every_path(import_route):
    m = build_inc()
    f = to_pytorch(m)
    x = torch.tensor([-1.0, 1.0, 3.0, 5.0])
    neg = torch._neg_view(x)
    imag = torch.complex(torch.zeros(4), x).conj().imag  # the z.conj().imag
    for view in (neg, imag):
        assert view.is_neg()
        np.testing.assert_array_equal(view.resolve_neg(), -x)
        calls = [
            lambda v=view: m(v, torch.zeros(4)),
            lambda v=view: f(v, torch.zeros(4)),
            lambda v=view: f(v, torch.zeros(4)),  # again: the C++ fast path knows the types now
            lambda v=view: f(v),
            lambda v=view: inc(v),
            lambda v=view: inc(v, out=torch.zeros(4)),
        ]
        for call in calls:
            with pytest.raises(ValueError, match=r"argument 0 \('A'\).*negative bit"):
                call()
    out = torch._neg_view(torch.zeros(4))
    for call in (
        lambda: m(torch.ones(4), out),
        lambda: f(torch.ones(4), out),
        lambda: f(torch.ones(4), out),
        lambda: inc(torch.ones(4), out=out),
    ):
        with pytest.raises(ValueError, match=r"argument 1 \('B'\).*negative bit"):
            call()
    np.testing.assert_array_equal(out.resolve_neg(), np.zeros(4))  # nothing written
    # Resolved, the same values are read and written correctly.
    b = torch.zeros(4)
    m(neg.resolve_neg(), b)
    np.testing.assert_array_equal(b, -x.numpy() + 1)


# Item 10: the module path has the bridges' rules for outputs.
def test_module_refuses_jax_and_grad_outputs():
    m = build_inc()
    j = jnp.zeros(4, "float32")
    with pytest.raises(TypeError, match=r"argument 1 \('B'\).*JAX arrays are immutable"):
        m(np.ones(4, "float32"), j)
    np.testing.assert_array_equal(np.asarray(j), np.zeros(4))
    g = torch.zeros(4, requires_grad=True)
    with pytest.raises(ValueError, match=r"argument 1 \('B'\).*requires grad"):
        m(torch.ones(4), g)
    np.testing.assert_array_equal(g.detach(), np.zeros(4))
    # An input that requires grad is read (as x.detach() would be).
    b = torch.zeros(4)
    m(torch.arange(4.0, requires_grad=True), b)
    np.testing.assert_array_equal(b, [1, 2, 3, 4])


# Item 11: an output whose elements share memory.
@pytest.mark.parametrize(
    "shape, strides", [((3, 3), (1, 1)), ((4, 2), (1, 2)), ((3, 3), (0, 1)), ((2, 3), (2, 1))]
)
def test_self_overlapping_outputs_are_refused(shape, strides):
    m = build_inc((tvm.var("n"), tvm.var("m")))
    base = torch.zeros(20)
    out = torch.as_strided(base, shape, strides, storage_offset=2)
    for f in (m, to_pytorch(m)):
        with pytest.raises(ValueError, match=r"argument 1 \('B'\).*share memory"):
            f(torch.ones(shape), out)
    np.testing.assert_array_equal(base, np.zeros(20))


def test_distinct_strided_outputs_are_accepted():
    # Interleaved but distinct (a transposed view, every other element): written correctly.
    m = build_inc((tvm.var("n"), tvm.var("m")))
    base = torch.zeros(24)
    out = torch.as_strided(base, (3, 4), (1, 6))
    x = torch.arange(12.0).reshape(3, 4)
    m(x, out)
    np.testing.assert_array_equal(out, x + 1)
    assert base.count_nonzero() == 12


# Item 12: a capsule is consumed once; its error is the first one, not "already consumed".
def test_wrong_capsule_reports_the_first_error():
    m = build_inc()
    for f in (to_numpy(m), to_pytorch(m)):
        for _ in range(2):  # the first call on a type goes through Python, the next through C++
            out = np.zeros(4, "float32") if f.framework == "numpy" else torch.zeros(4)
            cap = np.ones((2, 2), "float32").__dlpack__()
            with pytest.raises(ValueError, match=r"argument 0 \('A'\): expected 1 dimension"):
                f(cap, out)
            np.testing.assert_array_equal(out, np.zeros(4))


# Item 13: meta and sparse tensors passed to a Module directly.
@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: torch.ones(4, device="meta"), "device 'meta'.*a meta tensor has no data"),
        (lambda: torch.ones(4).to_sparse(), "torch.sparse_coo.*: use .to_dense.. *$"),
        (lambda: torch.ones(4, 4).to_sparse_csr(), "torch.sparse_csr.*: use .to_dense.. *$"),
    ],
)
@pytest.mark.filterwarnings("ignore:Sparse CSR")
def test_meta_and_sparse_tensors_name_argument_and_layout(make, words, import_route):
    m = build_inc()
    with pytest.raises(ValueError, match=rf"argument 0 \('A'\).*{words}") as info:
        m(make(), torch.zeros(4))
    assert "frame #" not in str(info.value)  # no C++ stack trace
    out = torch.zeros(4)
    with pytest.raises(ValueError, match=r"argument 1 \('B'\)"):
        m(torch.ones(4), torch.zeros(4, device="meta"))
    np.testing.assert_array_equal(out, np.zeros(4))


# Item 14: a big-endian NumPy array.
def test_big_endian_array_names_the_argument():
    m = build_inc()
    out = np.zeros(4, "float32")
    with pytest.raises(BufferError, match=r"argument 0 \('A'\).*byte order"):
        m(np.ones(4, ">f4"), out)
    with pytest.raises((BufferError, ValueError), match=r"argument 0 \('A'\).*byte order"):
        to_numpy(m)(np.ones(4, ">f4"))
    np.testing.assert_array_equal(out, np.zeros(4))


# Item 15: a NUL in the kernel's name.
def test_nul_in_build_name_is_a_value_error():
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    with pytest.raises(ValueError, match="NUL"):
        tvm.build(s, [A, B], name="x\0y")
    # The same schedule still builds under a proper name.
    out = np.zeros(4, "float32")
    tvm.build(s, [A, B], name="x_y")(np.arange(4, dtype="float32"), out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])


# Item 16: an output whose size is negative for the given inputs.
def test_negative_output_size_names_the_output():
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    C = tvm.compute((n - 2,), lambda i: A[i] + A[i + 2], name="C")
    m = tvm.build(tvm.create_schedule(C.op), [A, C], name="shrink")
    for x in (torch.ones(1), np.ones(1, "float32"), jnp.ones(1, "float32")):
        f = {torch.Tensor: to_pytorch, np.ndarray: to_numpy}.get(type(x), tvm.bridges.to_jax)(m)
        with pytest.raises(ValueError, match=r"argument 1 \('C'\), an output.*-1"):
            f(x)
    np.testing.assert_array_equal(to_numpy(m)(np.arange(5, dtype="float32")), [2, 4, 6])


class RaisingProducer:
    """A DLPack producer whose __dlpack__ raises ``error`` and counts its calls."""

    def __init__(self, error):
        self.error, self.calls = error, 0

    def __dlpack__(self, **kwargs):
        self.calls += 1
        raise self.error

    def __dlpack_device__(self):
        return (1, 0)


# Item 17: the producer is asked once, its error goes through, named.
def test_raising_producer_is_called_once_and_its_error_named():
    m = build_inc()
    for f in (m, to_numpy(m), to_numpy(m), to_pytorch(m)):
        p = RaisingProducer(RuntimeError("producer broke"))
        with pytest.raises(RuntimeError, match=r"argument 0 \('A'\): producer broke") as info:
            f(p, np.zeros(4, "float32"))
        assert p.calls == 1
        assert isinstance(info.value.__cause__, RuntimeError)
    for f in (to_numpy(m), inc):
        p = RaisingProducer(ValueError("no"))
        with pytest.raises(ValueError, match=r"argument 0 \('A'\): no"):
            f(p)
        assert p.calls == 1


def test_keyboard_interrupt_in_a_producer_is_untouched():
    m = build_inc()
    for f in (m, to_numpy(m), to_numpy(m)):
        p = RaisingProducer(KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt) as info:
            f(p, np.zeros(4, "float32"))
        assert p.calls == 1
        assert info.value.args == ()


def test_producer_exception_of_its_own_class_gets_a_note():
    class Custom(Exception):
        def __init__(self, code):
            super().__init__(code)
            self.code = code

    p = RaisingProducer(Custom(7))
    with pytest.raises(Custom) as info:
        build_inc()(p, np.zeros(4, "float32"))
    assert info.value.code == 7 and p.calls == 1
    assert any("argument 0 ('A')" in note for note in info.value.__notes__)


# Item 18: a dimension that does not fit 64 bits.
def test_huge_placeholder_dimension_is_a_value_error():
    with pytest.raises(ValueError, match=r"dimension 1 of the shape.*1180591620717411303424"):
        tvm.placeholder((4, 2**70), name="A")
    with pytest.raises(ValueError, match="dimension 0"):
        tvm.placeholder((-(2**70),), name="A")


def test_bad_arrays_do_not_crash_the_interpreter():
    # The refusals above, in a fresh interpreter with a timeout: a clean exit, never a signal.
    code = (
        "import torch, numpy as np, pytvmbridge as tvm\n"
        "from pytvmbridge.bridges import to_pytorch\n"
        "n = tvm.var('n'); A = tvm.placeholder((n, n), name='A')\n"
        "B = tvm.compute(A.shape, lambda i, j: A[i, j] + 1.0, name='B')\n"
        "m = tvm.build(tvm.create_schedule(B.op), [A, B], target='llvm')\n"
        "f = to_pytorch(m)\n"
        "for out in [torch.as_strided(torch.zeros(9), (3, 3), (1, 1)),\n"
        "            torch._neg_view(torch.zeros(3, 3)), torch.zeros(3, 3, device='meta')]:\n"
        "    for g in (m, f, f):\n"
        "        try: g(torch.ones(3, 3), out)\n"
        "        except ValueError: pass\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
