"""The graph backend: fallback, strict, options, dynamic shapes, gradients, entry point."""

import doctest
import importlib
import subprocess
import sys
import textwrap

import pytest
import torch

import pytvmbridge.torch as ptt
from pytvmbridge.graph import UnsupportedOperatorError, backend, compile_graph


def _compile(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pytvmbridge", options=options or None)


def test_unsupported_op_falls_back_to_pytorch():
    def f(x):
        y = torch.relu(x) * 2.0
        z = torch.logcumsumexp(y, dim=1)  # not in the operator table: stays in PyTorch
        return torch.tanh(z) + 1.0

    x = torch.randn(4, 5)
    torch.testing.assert_close(_compile(f)(x), f(x))


def test_strict_names_the_first_unsupported_op():
    def f(x):
        return torch.logcumsumexp(torch.relu(x), dim=0)

    with pytest.raises(Exception, match="logcumsumexp") as info:
        _compile(f, strict=True)(torch.randn(3))
    chain = [info.value, info.value.__cause__]
    assert any(isinstance(e, UnsupportedOperatorError) for e in chain) or "strict" in str(
        info.value
    )


def test_unknown_option_is_a_value_error():
    with pytest.raises(Exception, match="unknown key"):
        _compile(lambda x: x + 1, bogus=1)(torch.ones(2))


def test_options_are_accepted():
    f = _compile(lambda x: torch.sigmoid(x), num_threads=2, tuning_log_file="none.json")
    x = torch.randn(5)
    torch.testing.assert_close(f(x), torch.sigmoid(x))


def test_num_threads_limits_this_model_only(monkeypatch):
    # options={"num_threads": 1}: this model's kernels run under a thread limit of 1 (the C++
    # side is tests/cpp/test_thread_pool.cc); the pool, and other models, keep their threads
    import pytvmbridge as tvm
    from pytvmbridge import _core

    entered = []
    real = _core.ThreadLimit

    class Recording:
        def __init__(self, n):
            self.inner = real(n)
            entered.append((n, tvm.get_num_threads()))

        def __enter__(self):
            return self.inner.__enter__()

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

    before = tvm.get_num_threads()
    monkeypatch.setattr(_core, "ThreadLimit", Recording)
    limited = _compile(lambda x: torch.sigmoid(x) * 2, num_threads=1)
    x = torch.randn(64, 33)
    torch.testing.assert_close(limited(x), torch.sigmoid(x) * 2)
    assert entered == [(1, before)] and tvm.get_num_threads() == before
    torch.testing.assert_close(limited(x + 1), torch.sigmoid(x + 1) * 2)
    assert len(entered) == 2
    other = torch.compile(lambda x: torch.tanh(x), backend="pytvmbridge")
    torch.testing.assert_close(other(x), torch.tanh(x))
    assert len(entered) == 2 and tvm.get_num_threads() == before
    with pytest.raises(ValueError, match=">= 1"):
        real(0)


def test_dynamic_batch_compiles_once():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    torch._dynamo.reset()
    before = backend.compile_count
    compiled = torch.compile(model, backend="pytvmbridge", dynamic=True)
    with torch.no_grad():
        for batch in (2, 5, 11):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert backend.compile_count - before == 1


def test_mark_dynamic_conv_compiles_once():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU()).eval()
    torch._dynamo.reset()
    before = backend.compile_count
    compiled = torch.compile(model, backend="pytvmbridge")
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 3, 6, 6)
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert backend.compile_count - before == 1


def test_mark_dynamic_conv_then_flatten_compiles_once_in_strict_mode():
    # flatten(x, 1) of a symbolic batch reads the batch with sym_size: the partition then has a
    # symbolic-size input beside its tensors (it used to fail and run in PyTorch).
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(1),
        torch.nn.Linear(8 * 5 * 5, 4),
    ).eval()
    torch._dynamo.reset()
    before = backend.compile_count
    compiled = torch.compile(model, backend="pytvmbridge", options={"strict": True})
    with torch.no_grad():
        for batch in (2, 3, 7):
            x = torch.randn(batch, 3, 5, 5)
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert backend.compile_count - before == 1


def test_dynamic_conv_then_flatten_compiles_in_strict_mode():
    # dynamic=True makes the image size symbolic too: the convolution's output, handed to the
    # next partition, has (s - 2) rows and columns and no input carries s itself ("sizes
    # ['s69'] cannot be bound from the inputs", the partition ran in PyTorch); the kernel
    # binds s - 2 from that dimension now
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(256, 10)
    ).eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pytvmbridge", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for batch in (4, 5, 9):
            x = torch.randn(batch, 3, 6, 6)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_dynamic_residual_block_compiles_in_strict_mode():
    # A "same" convolution's output size was floordiv(s + 2 - 3, 1) + 1, which could not be
    # shown equal to s: x + conv(x) (and a stride-1 pool beside it) ran in PyTorch under
    # dynamic sizes, with a warning. topi now gives s itself.
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(4, 4, 3, padding=1).eval()
    pool = torch.nn.MaxPool2d(3, 1, 1)

    def block(x):
        return x + conv(x) + pool(x)

    torch._dynamo.reset()
    compiled = torch.compile(block, backend="pytvmbridge", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for size in (16, 13, 20):
            x = torch.randn(2, 4, size, size + 1)
            torch.testing.assert_close(compiled(x), block(x), rtol=1e-4, atol=1e-4)


def _grads(model, x):
    model.zero_grad()
    x = x.clone().requires_grad_(True)
    out = model(x)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()] + [x.grad]


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_gradients_match_eager(kind):
    torch.manual_seed(0)
    if kind == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 4), torch.nn.Softmax(-1)
        )
        x = torch.randn(5, 6)
    else:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 6, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(6, 4, 3),
            torch.nn.Flatten(),
            torch.nn.Linear(4 * 2 * 2, 3),
        )
        x = torch.randn(2, 3, 8, 8)
    expected_out, expected = _grads(model, x)
    torch._dynamo.reset()
    out, grads = _grads(torch.compile(model, backend="pytvmbridge"), x)
    torch.testing.assert_close(out, expected_out, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_parameters_changed_after_compile_are_used():
    model = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pytvmbridge")
    with torch.no_grad():
        compiled(x)
        model.weight.mul_(-2.0)
        model.bias.add_(1.0)
        torch.testing.assert_close(compiled(x), model(x))


def test_enable_makes_default_torch_compile_use_pytvmbridge():
    seen = []
    ptt.enable(opt_level=3, strict=True)
    try:
        original = backend.partition_and_compile

        def spy(gm, **kw):
            seen.append(kw)
            return original(gm, **kw)

        backend.partition_and_compile = spy
        torch._dynamo.reset()
        x = torch.randn(3)
        torch.testing.assert_close(torch.compile(lambda t: torch.exp(t) - 1)(x), torch.exp(x) - 1)
    finally:
        backend.partition_and_compile = original
        ptt.disable()
    assert seen and seen[0]["strict"] is True
    assert not ptt.is_enabled()
    with pytest.raises(ValueError, match="opt_level"):
        ptt.enable(opt_level=7)


def test_enable_ignores_inductor_modes_with_a_warning():
    ptt.enable()
    try:
        torch._dynamo.reset()
        x = torch.randn(4)
        with pytest.warns(UserWarning, match=r"mode='max-autotune-no-cudagraphs'.*ignored"):
            f = torch.compile(lambda t: t * 2 + 1, mode="max-autotune-no-cudagraphs")
        torch.testing.assert_close(f(x), x * 2 + 1)
    finally:
        ptt.disable()


@pytest.mark.parametrize(
    "f, args",
    [
        (lambda x: (x * 2).sum(0) + (x * 3).amax(-1) + x.mean(0), (torch.tensor(3.0),)),
        (lambda x: torch.softmax(x * 2, 0) + torch.log_softmax(x, -1), (torch.tensor(3.0),)),
        (lambda x: (x * 2).squeeze(0) + 1, (torch.tensor(3.0),)),
        (lambda a, b: torch.cat([a * 2, b]), (torch.ones(2, 3), torch.empty(0))),
    ],
)
def test_0d_reductions_and_legacy_empty_cat_compile(f, args):
    # PyTorch takes dim 0 or -1 of a 0-d tensor, and skips 1-d empty tensors in a cat
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="pytvmbridge", options={"strict": True})
    torch.testing.assert_close(compiled(*args), f(*args))


def test_to_graph_lists_operators():
    g = ptt.to_graph(lambda x: torch.logcumsumexp(torch.relu(x), 0), [torch.ones(3)])
    assert "aten.relu.default" in g.supported
    assert g.unsupported == ["aten.logcumsumexp.default"]
    assert "# pytorch" in str(g)
    x = torch.tensor([-1.0, 2.0, 3.0])
    torch.testing.assert_close(g(x), torch.log(torch.cumsum(torch.exp(torch.relu(x)), 0)))
    layer = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    torch.testing.assert_close(ptt.to_graph(layer, [x])(x), layer(x))  # parameters bound


def test_compile_graph_directly():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(a, b):
        return torch.softmax(a @ b, -1), torch.relu(a).sum(0)

    a, b = torch.randn(3, 4), torch.randn(4, 5)
    cg = compile_graph(make_fx(f)(a, b), [a, b])
    for got, want in zip(cg(a, b), f(a, b), strict=True):
        torch.testing.assert_close(got, want)


def test_backend_found_by_name_in_fresh_interpreter():
    code = textwrap.dedent(
        """
        import sys, torch
        f = torch.compile(lambda x: torch.relu(x) + 1, backend="pytvmbridge")
        y = f(torch.tensor([-2.0, 3.0]))
        assert y.tolist() == [1.0, 4.0], y
        assert "torch._dynamo" in sys.modules
        print("loaded", "pytvmbridge" in sys.modules)
        """
    )
    assert "pytvmbridge" not in code.split("backend=")[0]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "loaded True" in out.stdout


@pytest.mark.parametrize(
    "module",
    [
        "pytvmbridge.graph",
        "pytvmbridge.graph.compiler",
        "pytvmbridge.graph.partition",
        "pytvmbridge.graph.backend",
        "pytvmbridge.graph.prepack",
        "pytvmbridge.graph.fold",
        "pytvmbridge.graph.views",
        "pytvmbridge.graph.linear",
        "pytvmbridge.graph.read_through",
        "pytvmbridge.graph.replay",
        "pytvmbridge.torch",
        "pytvmbridge.torch.switch",
        "pytvmbridge.torch.graph",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_prepacked_conv_weights_follow_changes():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w, b):
        return torch.relu(torch.nn.functional.conv2d(x, w, b, padding=1))

    x, w, b = torch.randn(1, 8, 6, 6), torch.randn(64, 8, 3, 3), torch.randn(64)
    cg = compile_graph(make_fx(f)(x, w, b), [x, w, b])
    kinds = [d.kind for d in cg.derived_inputs]
    assert kinds == ["conv_pack"], "the weight should be passed packed"
    torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)
    w.mul_(-0.5)  # in place: same object, new version
    torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)
    w2 = torch.randn(64, 8, 3, 3)  # another tensor
    torch.testing.assert_close(cg(x, w2, b), f(x, w2, b), rtol=1e-4, atol=1e-4)


def _derived_kinds(cg):
    def kinds(d):
        return [d.kind] + [k for s in d.sources if hasattr(s, "kind") for k in kinds(s)]

    return sorted(k for d in cg.derived_inputs for k in kinds(d))


def test_linear_weights_are_packed_once_and_follow_changes():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w1, b1, w2):
        h = torch.relu(torch.nn.functional.linear(x, w1, b1))
        return torch.nn.functional.linear(h, w2)  # no bias: aten.mm

    x, w1, b1, w2 = torch.randn(5, 24), torch.randn(64, 24), torch.randn(64), torch.randn(32, 64)
    cg = compile_graph(make_fx(f)(x, w1, b1, w2), [x, w1, b1, w2])
    assert _derived_kinds(cg) == ["dense_pack", "dense_pack"]
    # The raw weights are not kernel arguments any more: only x and the bias are.
    assert cg.tensor_inputs == [0, 2]
    torch.testing.assert_close(cg(x, w1, b1, w2), f(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    w1.mul_(-0.5)  # in place: same object, new version
    torch.testing.assert_close(cg(x, w1, b1, w2), f(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    w2b = torch.randn(32, 64)  # another tensor
    torch.testing.assert_close(cg(x, w1, b1, w2b), f(x, w1, b1, w2b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bias", [False, True])
def test_linear_with_odd_width_reads_its_weight_transposed_once(bias):
    """A width that is no multiple of the 32-wide panels (a 10- or 1000-class classifier): the
    weight is passed transposed, computed once and again when it changes."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w, b):
        return torch.nn.functional.linear(x, w, b if bias else None)

    for m, k, n in ((3, 8, 10), (8, 40, 1000)):
        x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        cg = compile_graph(make_fx(f)(x, w, b), [x, w, b])
        assert _derived_kinds(cg) == ["transpose"]
        assert 1 not in cg.tensor_inputs  # the raw weight is not a kernel argument
        torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)
        w.mul_(-0.5)  # in place: same object, new version
        torch.testing.assert_close(cg(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups", [1, 4])
def test_batch_norm_is_folded_into_the_convolution(groups):
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w, b, gamma, beta, mean, var):
        y = torch.nn.functional.conv2d(x, w, b, padding=1, groups=groups)
        # What inference batch norm becomes under AOT autograd's core ATen decompositions.
        y = torch.ops.aten._native_batch_norm_legit_no_training(
            y, gamma, beta, mean, var, 0.1, 1e-5
        )
        return torch.relu(y[0])

    c = 32
    x = torch.randn(2, 8, 6, 6)
    w, b = torch.randn(c, 8 // groups, 3, 3), torch.randn(c)
    gamma, beta = torch.rand(c) + 0.5, torch.randn(c)
    mean, var = torch.randn(c) * 0.2, torch.rand(c) + 0.5
    args = [x, w, b, gamma, beta, mean, var]
    cg = compile_graph(make_fx(f)(*args), args)
    kinds = _derived_kinds(cg)
    assert "bn_weight" in kinds and "bn_bias" in kinds
    assert ("conv_pack" in kinds) == (groups == 1)
    assert cg.tensor_inputs == [0]  # every parameter reaches the kernel folded
    torch.testing.assert_close(cg(*args), f(*args), rtol=1e-4, atol=1e-4)
    var.mul_(2.0)  # a running statistic changed in place
    beta.add_(1.0)
    torch.testing.assert_close(cg(*args), f(*args), rtol=1e-4, atol=1e-4)


def test_symbolic_batch_convolution_packs_the_weight_not_the_data():
    """With a symbolic batch, the weight (constant size) is the operand streamed in panels and
    passed packed; vectorizing the batch would repack the activations on every call."""
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.ReLU()).eval()
    graphs = []
    original = backend.partition_and_compile

    def spy(gm, **options):
        fused = original(gm, **options)
        graphs.extend(m.compiled for m in fused.modules() if hasattr(m, "compiled"))
        return fused

    backend.partition_and_compile = spy
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="pytvmbridge")
        with torch.no_grad():
            for batch in (2, 3):
                x = torch.randn(batch, 8, 6, 6)
                torch._dynamo.mark_dynamic(x, 0)
                torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    finally:
        backend.partition_and_compile = original
    assert len(graphs) == 1 and graphs[0].size_bindings, "one compilation, symbolic batch"
    assert [d.kind for d in graphs[0].derived_inputs] == ["conv_pack"]


def test_comparisons_run_in_the_kernel_with_eager_semantics():
    """Comparisons of float32 tensors give bool results from the compiled kernel (strict: none
    stays in PyTorch), NaN included: every ordered comparison with NaN is False, != is True."""

    def f(x, y):
        return (x > y, x < 0.5, x >= y, x <= 0.0, x == y, x != y, (torch.relu(x) * 2 > 1.0))

    x = torch.tensor([[0.0, 1.0, float("nan"), -2.0], [0.5, 0.25, 3.0, float("nan")]])
    y = torch.tensor([0.0, 2.0, 1.0, float("nan")])
    got = _compile(f, strict=True)(x, y)
    for g, e in zip(got, f(x, y), strict=True):
        assert g.dtype == torch.bool
        torch.testing.assert_close(g, e)


def test_graph_break_condition_is_computed_with_its_operand():
    """The gated model's branch condition (h.mean() > 0.2) comes from the kernel that computes
    h; the right branch is taken for both outcomes, and again after a weight changes."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks.models import build

    model, x = build("gated", batch=3, small=True)
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(model, backend="pytvmbridge", options={"strict": False})
        for scale in (0.0, 10.0, 10.0):
            xs = x * scale
            torch.testing.assert_close(compiled(xs), model(xs), rtol=1e-4, atol=1e-4)
            model.encode.bias.add_(-0.05)  # in place: the next call sees the new bias


def test_activation_between_3d_linear_layers_matches_eager():
    """view -> GELU -> view around a linear layer's product is rewritten to GELU of the product
    (pytvmbridge.graph.views); values match eager for a static batch, after the weights change,
    and for a dynamic batch (one compilation)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from pytvmbridge.graph.views import cancel_view_pairs

    model = torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 16), torch.nn.Tanh()
    ).eval()
    x = torch.randn(3, 5, 16)

    def f(x, w1, b1, w2, b2):
        h = torch.nn.functional.gelu(torch.nn.functional.linear(x, w1, b1))
        return torch.tanh(torch.nn.functional.linear(h, w2, b2))

    params = [p.detach() for p in model.parameters()]
    gm = make_fx(f, decomposition_table=torch._decomp.core_aten_decompositions())(x, *params)
    assert cancel_view_pairs(gm) == 1
    torch.testing.assert_close(gm(x, *params), f(x, *params))

    torch._dynamo.reset()
    before = backend.compile_count
    with torch.no_grad():
        compiled = torch.compile(model, backend="pytvmbridge")
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.mul_(0.5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="pytvmbridge", dynamic=True)
        for batch in (2, 4, 7):
            xb = torch.randn(batch, 5, 16)
            torch.testing.assert_close(compiled(xb), model(xb), rtol=1e-4, atol=1e-4)
    assert backend.compile_count - before == 2  # one static, one dynamic compilation


def test_attention_scores_softmax_run_on_the_batched_product():
    """view -> scale -> softmax -> expand -> view between attention's two batched products is
    rewritten to act on the first product directly (pytvmbridge.graph.views); a softmax whose
    views regroup its rows is left alone. Values match eager, compiled and as rewritten."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from pytvmbridge.graph.views import cancel_view_pairs

    def attention(qkv, log):
        b, s, _ = qkv.shape
        q, k, v = (t.reshape(b, s, 2, 4).transpose(1, 2) for t in qkv.split(8, dim=-1))
        scores = q @ k.transpose(-1, -2) / 2.0
        probs = torch.log_softmax(scores, -1) if log else torch.softmax(scores, -1)
        return (probs @ v).transpose(1, 2).reshape(b, s, 8)

    def regrouped(m):  # the softmax's rows are 12 wide, the product's 4
        return torch.softmax(m.view(2, 12), -1).view(2, 3, 4)

    qkv, m = torch.randn(3, 5, 24), torch.randn(2, 3, 4)

    def bound(log):
        return lambda t: attention(t, log)

    for log in (False, True):
        gm = make_fx(bound(log), decomposition_table=torch._decomp.core_aten_decompositions())(qkv)
        assert cancel_view_pairs(gm) == 1
        torch.testing.assert_close(gm(qkv), attention(qkv, log))
        torch._dynamo.reset()
        with torch.no_grad():
            compiled = torch.compile(bound(log), backend="pytvmbridge")
            torch.testing.assert_close(compiled(qkv), attention(qkv, log), rtol=1e-4, atol=1e-4)
    gm = make_fx(regrouped, decomposition_table=torch._decomp.core_aten_decompositions())(m)
    assert cancel_view_pairs(gm) == 0
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(regrouped, backend="pytvmbridge")
        torch.testing.assert_close(compiled(m), regrouped(m), rtol=1e-5, atol=1e-5)


def test_view_pairs_cancel_under_symbolic_sizes():
    """The same rewrite on a graph traced with symbolic sizes (dynamic=True): the views compare
    by their sizes' expressions, so attention's softmax runs on the batched product with the
    batch, heads and sequence length all symbolic, and a regrouping view is still left alone."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from pytvmbridge.graph.views import cancel_view_pairs

    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.5, -1) @ v

    def regrouped(m):
        return torch.softmax(m.view(m.shape[0], -1), -1).view(m.shape)

    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    m = torch.randn(2, 3, 4)
    trace = make_fx(attention, tracing_mode="symbolic")
    gm = trace(q, k, v)
    assert cancel_view_pairs(gm) == 1
    q2, k2, v2 = (torch.randn(3, 2, 7, 4) for _ in range(3))
    torch.testing.assert_close(gm(q2, k2, v2), attention(q2, k2, v2))
    assert cancel_view_pairs(make_fx(regrouped, tracing_mode="symbolic")(m)) == 0
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(attention, backend="pytvmbridge", dynamic=True)
        for shape in ((2, 3, 5, 4), (1, 4, 17, 4), (3, 2, 1, 4)):
            args = [torch.randn(shape) for _ in range(3)]
            torch.testing.assert_close(compiled(*args), attention(*args), rtol=1e-4, atol=1e-5)


def test_compiled_graph_pickles_after_it_ran():
    """The C++ call path a CompiledGraph makes on its first call is not part of its state: it
    pickles before and after running, and the copy computes the same values."""
    import pickle

    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w):
        return torch.relu(torch.nn.functional.linear(x, w)) + 1.0

    x, w = torch.randn(3, 8), torch.randn(32, 8)
    cg = compile_graph(make_fx(f)(x, w), [x, w])
    torch.testing.assert_close(cg(x, w), f(x, w), rtol=1e-5, atol=1e-5)
    copy = pickle.loads(pickle.dumps(cg))
    x2 = torch.randn(3, 8)
    torch.testing.assert_close(copy(x2, w), f(x2, w), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cg(x2, w), f(x2, w), rtol=1e-5, atol=1e-5)


def test_core_decompositions_are_torchs_and_built_once():
    # The backend's table is torch's core ATen decompositions, materialized once per process
    # (torch's lazy table cost 20-70 ms per compiled subgraph); a graph that needs one of them
    # (hardswish, decomposed into core operators) still matches eager.
    from torch._decomp import core_aten_decompositions

    from pytvmbridge.graph.backend import core_decompositions

    table = core_decompositions()

    def aten_ops(keys):
        # Other namespaces join torch's table when their modules are imported (Inductor adds
        # quantized_decomposed's), possibly after the backend built its copy in this process.
        return {k for k in keys if getattr(k, "namespace", None) == "aten"}

    # all of torch's, with export's flash-attention rule (wrong gradients) replaced by ours and
    # the encoder layer's fast path added (graph/decompositions.py)
    from pytvmbridge.graph.decompositions import extra_decompositions

    ours = extra_decompositions()
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    assert table[flash] is ours[flash]
    # less nearest upsampling, converted whole where a graph keeps it so (ops_spatial.py)
    whole = {
        getattr(op, overload)
        for op in (torch.ops.aten.upsample_nearest2d, torch.ops.aten._upsample_nearest_exact2d)
        for overload in ("default", "vec")
    }
    torch_ops = aten_ops(core_aten_decompositions().keys())
    assert aten_ops(table) == (torch_ops - whole) | set(ours)
    assert set(table) <= set(core_aten_decompositions().keys()) | set(ours)
    assert torch.ops.aten.hardswish.default in table
    assert core_decompositions() is table
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.nn.functional.hardswish(x) * 2, backend="pytvmbridge")
    x = torch.linspace(-5, 5, 41)
    torch.testing.assert_close(f(x), torch.nn.functional.hardswish(x) * 2)


def test_addmm_with_beta_zero_ignores_its_input():
    # PyTorch: with beta = 0 the input is ignored, its NaN and inf do not spread
    f = _compile(lambda c, a, b: torch.addmm(c, a, b, beta=0, alpha=2.0), strict=True)
    c = torch.full((2, 3), float("nan"))
    a, b = torch.randn(2, 4), torch.randn(4, 3)
    torch.testing.assert_close(f(c, a, b), torch.addmm(c, a, b, beta=0, alpha=2.0))
    assert torch.isfinite(f(c, a, b)).all()


def test_a_model_moved_to_meta_runs_in_pytorch():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    compiled = torch.compile(model, backend="pytvmbridge")
    x = torch.randn(2, 4)
    torch.testing.assert_close(compiled(x), model(x))
    model.to("meta")
    out = compiled(torch.empty(2, 4, device="meta"))  # shape inference, as eager does it
    assert out.device.type == "meta" and out.shape == (2, 8)


def test_operators_left_to_pytorch_are_logged_with_why(caplog):
    # strict=True raises on the first; the logger lists them all without raising
    import logging

    def fn(x):
        return torch.relu(x).logcumsumexp(0) * 2 + 1

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pytvmbridge")
    x = torch.linspace(-1.0, 1.0, 5)
    with caplog.at_level(logging.INFO, logger="pytvmbridge.graph"):
        got = compiled(x)
    torch.testing.assert_close(got, fn(x))
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "pytvmbridge.graph")
    assert "1 operators stay in PyTorch" in text, text
    assert "logcumsumexp.default: the operator is not in pytvmbridge's table" in text, text
