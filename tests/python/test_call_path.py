"""The C++ call path (_core.Caller, issue 16 B): every framework's read and allocation route,
the kernel's variant dispatch, and the fallbacks, checked against NumPy."""

import gc
import sys
import threading

import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import _core, nd
from pytvmbridge.bridges import to_jax, to_numpy, to_pytorch


def build_shift():
    """C[i] = A[i + 2] - B[i] over n - 2 elements: an output size that is an expression."""
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute((n - 2,), lambda i: A[i + 2] - B[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="shift")


def build_two_outputs():
    n, m = tvm.var("n"), tvm.var("m")
    A = tvm.placeholder((n, m), name="A")
    S = tvm.compute((n, m), lambda i, j: A[i, j] * 2.0, name="S")
    T = tvm.compute((m, 3), lambda j, k: A[0, j] + k.astype("float32"), name="T")
    return tvm.build(tvm.create_schedule([S.op, T.op]), [A, S, T], name="two")


@tvm.kernel
def axpy(X, Y):
    return tvm.compute(X.shape, lambda i: 2.0 * X[i] + Y[i], name="Z")


def test_each_framework_allocates_its_own_outputs():
    m = build_shift()
    a = np.arange(10, dtype="float32")
    b = np.linspace(0, 1, 10, dtype="float32")
    want = a[2:] - b[:8]
    cases = [
        (to_pytorch(m), torch.from_numpy(a), torch.from_numpy(b), torch.Tensor),
        (to_numpy(m), a, b, np.ndarray),
        (to_jax(m), jnp.asarray(a), jnp.asarray(b), type(jnp.zeros(1))),
        (tvm.bridges.bridge(m, "nd"), nd.array(a), nd.array(b), nd.NDArray),
    ]
    for f, x, y, kind in cases:
        z = f(x, y)
        assert type(z) is kind, f.framework
        np.testing.assert_array_equal(np.asarray(z.numpy() if kind is nd.NDArray else z), want)


def test_allocated_torch_tensor_is_an_ordinary_tensor():
    z = to_pytorch(build_shift())(torch.arange(6.0), torch.ones(6))
    assert z.dtype == torch.float32 and z.shape == (4,) and z.is_contiguous()
    w = z.clone().requires_grad_()
    (w * w).sum().backward()
    torch.testing.assert_close(w.grad, 2 * z)
    z.add_(1)  # writable, owned by torch
    torch.testing.assert_close(z, torch.tensor([2.0, 3.0, 4.0, 5.0]))


def test_several_outputs_and_constant_dimensions():
    f = to_numpy(build_two_outputs())
    a = np.arange(12, dtype="float32").reshape(3, 4)
    s, t = f(a)
    np.testing.assert_array_equal(s, 2 * a)
    np.testing.assert_array_equal(t, a[0][:, None] + np.arange(3, dtype="float32"))
    ts, tt = to_pytorch(build_two_outputs())(torch.from_numpy(a))
    np.testing.assert_array_equal(ts, s)
    np.testing.assert_array_equal(tt, t)


def test_numpy_arrays_the_c_api_does_not_take_go_through_dlpack():
    m = build_shift()
    f = to_numpy(m)
    b = np.zeros(6, "float32")
    # Strided, negative strides, an unaligned view, a non-native byte order (refused, named).
    base = np.arange(12, dtype="float32")
    for x in (base[::2], base[::-2], np.frombuffer(b"\0" + base.tobytes()[:24], "float32", 6, 1)):
        np.testing.assert_array_equal(f(x, b), np.asarray(x)[2:] - b[:4])
    with pytest.raises(BufferError, match=r"argument 0 \('A'\)"):
        f(np.arange(6, dtype=">f4"), b)
    # A read-only output is refused by the in-place form.
    out = np.zeros(4, "float32")
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*read-only"):
        f(base[:6], b, out)


def test_jax_inputs_the_buffer_protocol_does_not_serve_go_through_dlpack():
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A", dtype="bfloat16")
    B = tvm.compute((n,), lambda i: A[i].astype("float32") * 2.0, name="B")
    f = to_jax(tvm.build(tvm.create_schedule(B.op), [A, B], name="widen"))
    x = jnp.arange(5, dtype=jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(f(x)), np.arange(5, dtype="float32") * 2)


def test_kernel_dispatch_compiles_once_per_layout_class():
    k = tvm.kernel(lambda A, B: tvm.compute(A.shape, lambda i: A[i] * B[i], name="C"))
    for size in (3, 7, 100):
        a, b = np.arange(size, dtype="float32"), np.full(size, 3, "float32")
        np.testing.assert_array_equal(k(a, b), a * 3)
        np.testing.assert_array_equal(k(torch.from_numpy(a), torch.from_numpy(b)), a * 3)
    assert k.compilations == 1
    np.testing.assert_array_equal(k(np.ones(4, "float64"), np.ones(4, "float64")), np.ones(4))
    assert k.compilations == 2  # a new dtype: a new variant
    k.cache_clear()
    np.testing.assert_array_equal(k(np.ones(2, "float32"), np.ones(2, "float32")), np.ones(2))
    assert k.compilations == 3


def test_kernel_reads_out_of_range_are_refused_before_running():
    k = tvm.kernel(lambda A, B: tvm.compute(A.shape, lambda i: A[i] + B[i], name="C"))
    np.testing.assert_array_equal(k(np.ones(4, "float32"), np.ones(5, "float32")), np.full(4, 2))
    with pytest.raises(ValueError, match=r"reads argument 1 \('B'\) up to index 4"):
        k(np.ones(5, "float32"), np.ones(4, "float32"))


def test_kernel_out_and_mixed_frameworks():
    x, y = torch.arange(4.0), np.ones(4, "float32")
    z = axpy(x, y)  # the first input's framework
    assert isinstance(z, torch.Tensor)
    np.testing.assert_array_equal(z, 2 * np.arange(4) + 1)
    out = np.empty(4, "float32")
    assert axpy(jnp.arange(4.0, dtype="float32"), y, out=out) is out
    np.testing.assert_array_equal(out, 2 * np.arange(4) + 1)
    with pytest.raises(TypeError, match="has 1 output"):
        axpy(x, y, out=(out, out))
    with pytest.raises(TypeError, match="unexpected keyword argument 'outs'"):
        axpy(x, y, outs=out)
    with pytest.raises(TypeError, match="takes 2 input"):
        axpy(x)


def test_kernel_takes_capsules_and_returns_ndarrays_for_them():
    a = np.arange(4, dtype="float32")
    z = axpy(a.__dlpack__(), np.ones(4, "float32").__dlpack__())
    assert isinstance(z, nd.NDArray)
    np.testing.assert_array_equal(z.numpy(), 2 * a + 1)


def test_large_calls_release_the_gil_and_run_concurrently():
    # Above the small-call threshold the GIL is released; threads still get correct results.
    size = 1 << 16
    x = np.random.default_rng(0).random(size, dtype="float32")
    results, errors = {}, []

    def work(t):
        try:
            for _ in range(20):
                results[t] = axpy(x, np.full(size, t, "float32"))
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t in range(4):
        np.testing.assert_allclose(results[t], 2 * x + t, rtol=1e-6)


@pytest.mark.parametrize("framework", ["torch", "numpy", "jax"])
def test_allocating_calls_do_not_leak(framework):
    make = {
        "torch": torch.ones,
        "numpy": lambda n: np.ones(n, "float32"),
        "jax": lambda n: jnp.ones(n, "float32"),
    }[framework]
    f = {"torch": to_pytorch, "numpy": to_numpy, "jax": to_jax}[framework](build_shift())
    x, y = make(8), make(8)
    f(x, y), axpy(x, y)
    gc.collect()
    before = sys.getrefcount(x), sys.getrefcount(y)
    for _ in range(3000):
        f(x, y)
        axpy(x, y)
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(y)) == before


def test_a_caller_is_collected_with_its_module():
    m = build_shift()
    gc.collect()
    before = sys.getrefcount(m)
    for _ in range(200):
        f = to_numpy(m)
        f.self = f  # a cycle through the instance dict
    del f
    gc.collect()
    assert sys.getrefcount(m) == before
    assert isinstance(to_numpy(m), _core.Caller)


def test_kernel_picks_the_int64_variant_after_a_small_call():
    # A small call caches the int32-size variant; a later call with 2**31 elements or more in
    # one input must compile and run the int64 one, not raise (the layout key says "wide").
    # Broadcast views (stride 0) make the huge inputs cost no memory.
    @tvm.kernel
    def tail_plus(A, B):
        n = A.shape[0]
        return tvm.compute((4,), lambda i: A[n - 4 + i.astype(n.dtype)] + B[i], name="T")

    small_a = np.arange(10, dtype="int8")
    b = np.array([1, 2, 3, 4], dtype="int8")
    np.testing.assert_array_equal(tail_plus(small_a, b), small_a[-4:] + b)
    huge_a = np.broadcast_to(np.int8(5), (2**31 + 7,))
    np.testing.assert_array_equal(tail_plus(huge_a, b), np.int8(5) + b)
    np.testing.assert_array_equal(tail_plus(torch.from_numpy(small_a), b).numpy(), small_a[-4:] + b)
    assert tail_plus.compilations == 2

    # 2-D: 65537 x 32768 elements, each dimension within int32, the product past it.
    @tvm.kernel
    def corner(A):
        return tvm.compute((1,), lambda i: A[A.shape[0] - 1, A.shape[1] - 1] * 2, name="C")

    np.testing.assert_array_equal(corner(np.full((3, 3), 7, "int8")), [14])
    huge_2d = np.broadcast_to(np.int8(9), (65537, 32768))
    np.testing.assert_array_equal(corner(huge_2d), [18])
    assert corner.compilations == 2


def test_more_than_sixteen_arrays_in_every_calling_form():
    # 20 inputs and their sum: the Module, a bridge (both forms) and @kernel, against NumPy.
    n = tvm.var("n")
    xs = [tvm.placeholder((n,), name=f"X{k}") for k in range(20)]
    total = tvm.compute((n,), lambda i: sum((x[i] for x in xs[1:]), xs[0][i]), name="S")
    m = tvm.build(tvm.create_schedule(total.op), [*xs, total], name="sum20")
    arrays = [np.full(5, k, "float32") for k in range(20)]
    expect = np.sum(arrays, axis=0)
    out = np.zeros(5, "float32")
    m(*arrays, out)
    np.testing.assert_array_equal(out, expect)
    f = to_pytorch(m)
    np.testing.assert_array_equal(f(*map(torch.from_numpy, arrays)).numpy(), expect)
    t_out = torch.zeros(5)
    f(*map(torch.from_numpy, arrays), t_out)
    np.testing.assert_array_equal(t_out.numpy(), expect)

    @tvm.kernel
    def many(*xs):
        return tvm.compute(xs[0].shape, lambda i: sum((x[i] for x in xs[1:]), xs[0][i]), name="S")

    np.testing.assert_array_equal(many(*arrays), expect)
    with pytest.raises(TypeError, match="takes 21 array"):
        m(*arrays)


def test_module_call_reads_torch_and_refuses_bad_outputs():
    m = build_shift()
    a, b = torch.arange(6.0), torch.ones(6)
    c = torch.empty(4)
    assert m(a, b, c) is None
    np.testing.assert_array_equal(c.numpy(), a.numpy()[2:] - 1)
    with pytest.raises(ValueError, match="requires grad"):
        m(a, b, torch.empty(4, requires_grad=True))
    with pytest.raises(ValueError, match="negative bit"):
        m(torch._neg_view(a), b, c)
    with pytest.raises(TypeError, match="positional"):
        m(a, b, out=c)


def test_kernel_calls_stay_in_cpp_and_route_autograd_only_when_needed():
    # Kernel's Python __call__ is for torch.compile's tracer only: calls take the C++
    # vectorcall (a Python __call__ would cost microseconds on every call); the C++ call asks
    # Kernel._autodiff_call only for tensors that require grad (or traced ones).
    import torch

    from pytvmbridge.kernel import Kernel

    k = tvm.kernel(
        lambda a: tvm.compute(a.shape, lambda i: a[i] * a[i], name="sq"), name="sq_route"
    )
    have_vectorcall = 1 << 11  # Py_TPFLAGS_HAVE_VECTORCALL
    assert Kernel.__flags__ & have_vectorcall
    torch.testing.assert_close(Kernel.__call__(k, torch.arange(3.0)), torch.arange(3.0) ** 2)
    x = torch.arange(4.0, requires_grad=True)
    y = k(x)
    assert y.grad_fn is not None
    y.sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())
    with torch.no_grad():
        z = k(x)
    assert z.grad_fn is None
    torch.testing.assert_close(z, x.detach() ** 2)
    plain = k(torch.arange(3.0))
    assert plain.grad_fn is None
    torch.testing.assert_close(plain, torch.arange(3.0) ** 2)


def test_kernel_inside_torch_compile_fullgraph_forward_and_backward():
    # No graph break: the traced call is the kernel's custom op (registered while tracing).
    import torch

    k = tvm.kernel(
        lambda a, b: tvm.compute(a.shape, lambda i: a[i] * b[i] + a[i], name="fma"),
        name="fma_compiled",
    )

    def f(a, b):
        return (k(a, b) * 2.0).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    a = torch.arange(1.0, 5.0, requires_grad=True)
    b = torch.tensor([0.5, -1.0, 2.0, 3.0])
    out = compiled(a, b)
    torch.testing.assert_close(out, ((a.detach() * b + a.detach()) * 2.0).sum())
    out.backward()
    torch.testing.assert_close(a.grad, 2.0 * (b + 1.0))
    # (torch.compile reports the ValueError raised while tracing under an error type of its own)
    with pytest.raises(Exception, match=r"out= cannot be used inside torch\.compile"):
        torch.compile(lambda p, q: k(p, q, out=torch.empty(4)), fullgraph=True)(b, b)


def test_tc_def_and_bridge_inside_torch_compile_fullgraph_on_first_use():
    # Both reach the trace as their custom op, registered at trace time (not through
    # torch.compiler.disable, which fullgraph refuses), with no eager call before
    import torch

    from pytvmbridge import tc

    square = tc.define("def sq_fullgraph(float(N) A) -> (B) { B(i) = A(i) * A(i) }")
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * 3.0 + 1.0, name="B")
    triple = tvm.to_pytorch(tvm.build(tvm.create_schedule(B.op), [A, B], name="triple_fg"))

    def f(x):
        return (square(x) + triple(x)).sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    out = compiled(x)
    torch.testing.assert_close(out, (x.detach() ** 2 + 3 * x.detach() + 1).sum())
    out.backward()
    torch.testing.assert_close(x.grad, 2 * x.detach() + 3)
    # the all-arrays (in place) form of a bridge still runs outside a trace
    y = torch.empty(3)
    triple(x.detach(), y)
    torch.testing.assert_close(y, 3 * x.detach() + 1)
