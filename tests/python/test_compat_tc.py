"""Tensor Comprehensions' calling conventions (issue 10, item 9): TC v0.1.1's constants and
options, TC's later define(lang, factory) / T.<def> API, outputs=, autotune; values checked
against PyTorch."""

import json
import warnings

import numpy as np
import pytest
import torch

from pytvmbridge import autotvm, tc
from pytvmbridge.autotvm import record

MATMUL = "def matmul(float(M, K) A, float(K, N) B) -> (C) { C(m, n) +=! A(m, r_k) * B(r_k, n) }"


def test_constants_are_substituted_as_tc_v011_did():
    lang = """
    def avgpool(float(B, C, H, W) input) -> (output) {{
        output(b, c, h, w) +=! input(b, c, h * {sH} + r_kh, w * {sW} + r_kw) / ({kH} * {kW})
            where r_kh in 0:{kH}, r_kw in 0:{kW}
    }}
    """
    pool = tc.define(lang, name="avgpool", constants={"sH": 2, "sW": 2, "kH": 2, "kW": 2})
    x = torch.randn(2, 3, 8, 6)
    torch.testing.assert_close(pool(x), torch.nn.functional.avg_pool2d(x, 2))
    with pytest.raises(ValueError, match="constant"):
        tc.define(lang, name="avgpool", constants={"sH": 2})
    with pytest.raises(ValueError, match="doubled"):
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) * {k} }", constants={"k": 2})
    # a body in single braces with no {name} in it reads as a constant named by the body
    with pytest.raises(ValueError, match=r"doubled .*\{B\(i\) = A\(i\) \* k\} was read"):
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) * k }", constants={"k": 2})


def test_options_factory_and_def_attributes():
    T = tc.define(MATMUL, tc.make_naive_options_factory())
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    torch.testing.assert_close(T.matmul(a, b), a @ b)  # T.<def> on a one-def source
    two = tc.define(
        MATMUL + "\ndef add(float(N) A, float(N) B) -> (C) { C(i) = A(i) + B(i) }",
        tc.make_load_from_cache_options_factory("cache.options"),
    )
    x, y = torch.randn(7), torch.randn(7)
    torch.testing.assert_close(two.add(x, y), x + y)
    with pytest.raises(AttributeError):
        _ = T.convolution
    with pytest.raises(TypeError, match="options factory"):
        tc.define(MATMUL, 3)


def test_call_keywords_outputs_and_options():
    matmul = tc.define(MATMUL, name="matmul")
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    out = torch.empty(3, 5)
    result = matmul(a, b, outputs=[out], options=tc.Options("mlp"), cache=True)
    torch.testing.assert_close(out, a @ b)
    assert result[0] is out
    out2 = torch.empty(3, 5)
    assert matmul(a, b, outputs=out2, unchecked=True) is out2
    torch.testing.assert_close(out2, a @ b)
    with pytest.raises(TypeError, match="both out= and outputs="):
        matmul(a, b, out=out, outputs=out2)
    with pytest.raises(TypeError, match="unexpected keyword"):
        matmul(a, b, optoins=None)


def test_mapping_options_chain_and_have_no_effect():
    opts = tc.MappingOptions("naive").tile(4, 4).mapToThreads([32]).unroll(8)
    assert isinstance(opts, tc.MappingOptions) and opts.serialize() == b"naive"
    cfg = tc.TunerConfig().threads(2).generations(1).pop_size(2)
    assert isinstance(cfg, tc.TunerConfig)
    matmul = tc.define(MATMUL, name="matmul")
    a, b = torch.randn(6, 2), torch.randn(2, 3)
    torch.testing.assert_close(matmul(a, b, options=opts), a @ b)


def test_autotune_tunes_and_returns_the_definition():
    matmul = tc.define(MATMUL, name="matmul")
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    # TC's form: generations * pop_size trials of pytvmbridge.autotvm at these sizes
    best = matmul.autotune(a, b, cache=True, options=tc.Options("mlp"), generations=1, pop_size=2)
    assert best is matmul and matmul.tuned_record["error"] == 0
    torch.testing.assert_close(matmul(a, b, options=best), a @ b)
    with pytest.warns(UserWarning, match="not tuned"):  # nothing to measure without inputs
        assert matmul.autotune() is matmul
    with pytest.warns(UserWarning, match="not tuned"):
        assert tc.autotune(MATMUL, "matmul").kind == "naive"
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_trails'"):
        matmul.autotune(a, b, n_trails=3)  # a typo is not ignored


def _key(config):
    return json.dumps(config, sort_keys=True)


def test_module_level_autotune_and_its_options_build_the_def(tmp_path):
    # TC's later API: tc.autotune returns options carrying the best configuration found;
    # tc.compile, a call's options=, the cache factory and apply_history_best build with it.
    a, b = torch.randn(6, 16), torch.randn(16, 24)
    log = tmp_path / "mm.json"
    settings = tc.TunerConfig().generations(1).pop_size(2).threads(8)  # 2 trials
    opts = tc.autotune(
        MATMUL, "matmul", a, b, tuner_config=settings, cache_filename=str(log), progress=False
    )
    assert opts.kind == "tuned" and opts.tuned["name"] == "matmul"
    assert len(list(record.load(log, verified=False))) == 2
    [chosen] = record.best_records(record.load(log)).values()
    assert opts.tuned["config"] == chosen["config"]
    key = _key(chosen["config"])

    compiled = tc.compile(MATMUL, "matmul", opts)
    torch.testing.assert_close(compiled(a, b), a @ b)

    g = tc.define(MATMUL, name="matmul")
    torch.testing.assert_close(g(a, b, options=opts), a @ b)
    assert list(g._tuned) == [key]  # the call ran the def built with the tuned configuration
    other = tc.define(MATMUL.replace("matmul", "mm2"), name="mm2")
    torch.testing.assert_close(other(a, b, options=opts), a @ b)
    assert not other._tuned  # options tuned for another def do not apply

    T = tc.define(MATMUL, tc.make_load_from_cache_options_factory(str(log)))
    torch.testing.assert_close(T.matmul(a, b), a @ b)
    assert list(T.matmul._tuned) == [key]

    k = tc.define(MATMUL, name="matmul")
    with autotvm.apply_history_best(log):
        torch.testing.assert_close(k(a, b), a @ b)
    assert list(k._tuned) == [key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no record at these sizes: the default build
        with autotvm.apply_history_best(log):
            c, d = torch.randn(3, 5), torch.randn(5, 2)
            torch.testing.assert_close(k(c, d), c @ d)
    assert list(k._tuned) == [key]


def test_autotuned_options_factory_tunes_at_the_first_call(tmp_path):
    log = tmp_path / "factory.json"
    factory = tc.make_autotuned_options_factory(
        tuner_config=tc.TunerConfig().generations(1).pop_size(2),
        cache_filename=str(log),
        progress=False,
    )
    T = tc.define(MATMUL, factory)
    a, b = torch.randn(5, 8), torch.randn(8, 7)
    torch.testing.assert_close(T.matmul(a, b), a @ b)
    assert len(list(record.load(log, verified=False))) == 2
    [chosen] = record.best_records(record.load(log)).values()
    assert list(T.matmul._tuned) == [_key(chosen["config"])]
    torch.testing.assert_close(T.matmul(a, b), a @ b)  # the same sizes: not tuned again
    assert len(list(record.load(log, verified=False))) == 2


def test_compile_and_assert_almost_equal():
    add = tc.compile("def add(float(N) A) -> (B) { B(i) = A(i) + 1 }", "add", tc.MappingOptions())
    x = np.arange(4, dtype="float32")
    out = add(x)
    tc.assert_almost_equal(out, x + 1, x)
    with pytest.raises(AssertionError):
        tc.assert_almost_equal(out, x + 1.01, x)


def test_naive_factory_defs_ask_nothing_per_call():
    T = tc.define(MATMUL, tc.make_naive_options_factory())
    assert T.matmul._factory is None  # the call path checks no options per call
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    torch.testing.assert_close(T.matmul(a, b), a @ b)
