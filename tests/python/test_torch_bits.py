"""A PyTorch tensor's lazy negative bit and requires_grad, read on every call (python/torch_bits.h).

Both are read directly from the tensor when the check against PyTorch's own answers passed, and
through PyTorch's Python API otherwise; every test here runs both ways and compares the results
with PyTorch: a negated view is refused with the same error, a tensor that requires grad gets a
grad_fn and PyTorch's gradients, a plain tensor gives torch's values.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import _core
from pytvmbridge.bridges import to_pytorch


@tvm.kernel
def mul_add(A, B):
    return tvm.compute(A.shape, lambda i: A[i] * B[i] + A[i], name="C")


def build_mul_add():
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute((n,), lambda i: A[i] * B[i] + A[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="mul_add")


@pytest.fixture(params=["direct", "python"])
def bits_route(request):
    """Each test runs with the direct reads and with PyTorch's Python API."""
    _core._set_torch_bits_enabled(request.param == "direct")
    yield request.param
    _core._set_torch_bits_enabled(True)


def test_direct_reads_are_used_with_this_torch():
    # The torch this project pins (Makefile) has the layout and functions the reads need: were
    # they refused, every call would pay the Python route (about 170 ns per input).
    torch.zeros(1)
    assert _core._torch_bits_ready()


def negated_views(x):
    """Tensors whose memory holds -x, each made its own way."""
    return {
        "_neg_view": torch._neg_view(x),
        "conj().imag": torch.complex(torch.zeros_like(x), x).conj().imag,
        "detached": torch._neg_view(x).detach(),
        "a view of one": torch._neg_view(torch.stack([x, x]))[1],
        "a Parameter": torch.nn.Parameter(torch._neg_view(x.clone()), requires_grad=False),
        "requires grad": torch._neg_view(x.clone()).requires_grad_(),
    }


def test_negated_inputs_are_refused_on_every_path(bits_route):
    m = build_mul_add()
    f = to_pytorch(m)
    x = torch.tensor([-1.5, 2.0, 3.25, 4.0])
    for name, view in negated_views(x).items():
        assert view.is_neg(), name
        np.testing.assert_array_equal(view.detach().resolve_neg(), -x)
        for call in (
            lambda v=view: mul_add(v, torch.ones(4)),
            lambda v=view: f(v, torch.ones(4)),
            lambda v=view: m(v, torch.ones(4), torch.zeros(4)),
            lambda v=view: f(v, torch.ones(4), torch.zeros(4)),
        ):
            with pytest.raises(ValueError, match=r"argument 0 \('A'\).*negative bit"):
                call()
        with pytest.raises(ValueError, match=r"argument 1 \('B'\).*negative bit"):
            mul_add(torch.ones(4), view)
    out = torch._neg_view(torch.zeros(4))
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*negative bit"):
        m(torch.ones(4), torch.ones(4), out)
    np.testing.assert_array_equal(out.resolve_neg(), np.zeros(4))  # nothing written


def test_plain_tensors_give_torch_values(bits_route):
    m = build_mul_add()
    f = to_pytorch(m)
    a = torch.tensor([1.0, -2.0, 3.5, 0.25])
    b = torch.tensor([0.5, 4.0, -1.0, 2.0])
    want = a * b + a
    # A tensor that had the bit and was resolved, a clone of a negated view (clone resolves),
    # a Parameter that needs no grad: all plain memory.
    resolved = torch._neg_view(-a).resolve_neg()
    cloned = torch._neg_view(-a).clone()
    param = torch.nn.Parameter(a.clone(), requires_grad=False)
    for left in (a, resolved, cloned, param):
        assert not left.is_neg()
        torch.testing.assert_close(mul_add(left, b), want, rtol=0, atol=0)
        torch.testing.assert_close(f(left, b), want, rtol=0, atol=0)
        c = torch.zeros(4)
        m(left, b, c)
        torch.testing.assert_close(c, want, rtol=0, atol=0)


def test_requires_grad_routes_to_autograd(bits_route):
    f = to_pytorch(build_mul_add())
    # float32 (the bridge's dtype); every product and sum here is exact.
    a0 = torch.tensor([1.0, -2.0, 3.5, 0.25])
    b0 = torch.tensor([0.5, 4.0, -1.0, 2.0])
    for call in (mul_add, f):
        for grad_a, grad_b in ((True, False), (False, True), (True, True)):
            a = a0.clone().requires_grad_(grad_a)
            b = b0.clone().requires_grad_(grad_b)
            out = call(a, b)
            assert out.grad_fn is not None
            out.backward(torch.tensor([1.0, 2.0, -1.0, 0.5]))
            ra = a0.clone().requires_grad_(grad_a)
            rb = b0.clone().requires_grad_(grad_b)
            (ra * rb + ra).backward(torch.tensor([1.0, 2.0, -1.0, 0.5]))
            for mine, ref in ((a, ra), (b, rb)):
                if ref.grad is None:
                    assert mine.grad is None
                else:
                    torch.testing.assert_close(mine.grad, ref.grad, rtol=0, atol=0)
        # A Parameter requires grad by default, like a model's weight.
        w = torch.nn.Parameter(b0.clone())
        out = call(a0, w)
        assert out.grad_fn is not None
        out.sum().backward()
        torch.testing.assert_close(w.grad, a0, rtol=0, atol=0)
        # Without grad mode, or with inputs that need none, no graph is recorded.
        with torch.no_grad():
            assert call(a0.clone().requires_grad_(), b0).grad_fn is None
        assert call(a0, b0).grad_fn is None


def test_an_output_that_requires_grad_is_refused(bits_route):
    m = build_mul_add()
    out = torch.zeros(4, requires_grad=True)
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*requires grad"):
        m(torch.ones(4), torch.ones(4), out)
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*requires grad"):
        to_pytorch(m)(torch.ones(4), torch.ones(4), torch.nn.Parameter(torch.zeros(4)))
    assert torch.count_nonzero(out.detach()) == 0


def test_a_tensor_subclass_keeps_the_python_route(bits_route):
    # A subclass may answer through __torch_function__ (and a call with one goes through
    # Python's autodiff routing, which hands the kernel resolved memory): its values are
    # torch's, negated view or not.
    class Logged(torch.Tensor):
        pass

    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    b = torch.tensor([0.5, -1.0, 2.0, 3.0])
    f = to_pytorch(build_mul_add())
    for left in (x.as_subclass(Logged), torch._neg_view(x).as_subclass(Logged)):
        assert type(left) is Logged
        want = left.as_subclass(torch.Tensor).resolve_neg() * b + left.resolve_neg()
        for call in (mul_add, f):
            got = torch.as_tensor(call(left, b)).as_subclass(torch.Tensor)
            torch.testing.assert_close(got, want.as_subclass(torch.Tensor), rtol=0, atol=0)


def test_first_use_under_a_fake_mode_waits_for_real_tensors():
    # Under FakeTensorMode PyTorch's factories make FakeTensors, which cannot check the
    # layout: the reads stay off until a later call builds real probes, then come on.
    code = (
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from pytvmbridge import _core\n"
        "with FakeTensorMode():\n"
        "    print(_core._torch_bits_ready())\n"
        "print(_core._torch_bits_ready())\n"
        "import pytvmbridge as tvm\n"
        "x = torch.tensor([1.0, 2.0])\n"
        "try:\n"
        "    tvm.nd.from_dlpack(torch._neg_view(x))\n"
        "except ValueError as e:\n"
        "    print('negative bit' in str(e))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert out.stdout.split() == ["False", "True", "True"]
