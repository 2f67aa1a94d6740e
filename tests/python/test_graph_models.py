"""torch.compile(backend="pytvmbridge") on whole models (small sizes) against eager PyTorch."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pytvmbridge as tvm
from benchmarks.models import MODELS, build
from pytvmbridge.graph import partition


@pytest.fixture
def count_fallbacks(monkeypatch):
    """Records the operators left to PyTorch in every graph the backend compiles."""
    left: list[str] = []
    original = partition.check_strict

    def spy(gm, strict):
        # every graph partition_and_compile sees, strict or not (unsupported_nodes alone is
        # only asked under strict)
        left.extend(str(n.target) for n in partition.unsupported_nodes(gm))
        return original(gm, strict)

    monkeypatch.setattr(partition, "check_strict", spy)
    return left


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_eager(name, count_fallbacks):
    torch._dynamo.reset()
    model, x = build(name, batch=2, small=True)
    with torch.no_grad():
        expected = model(x)
        compiled = torch.compile(model, backend="pytvmbridge")
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-4)
        # Another input through the same compiled model (no stale state between calls).
        x2 = build(name, batch=2, small=True, seed=1)[1]  # token ids for the GPT
        torch.testing.assert_close(compiled(x2), model(x2), rtol=1e-4, atol=1e-4)
    # Inference graphs of these models are compiled whole: nothing stays in PyTorch, not even
    # the gated model's branch condition (a bool comparison feeding Python's `if`).
    assert count_fallbacks == []


def test_graph_break_model_takes_both_branches():
    torch._dynamo.reset()
    model, x = build("gated", batch=4, small=True)
    with torch.no_grad():
        compiled = torch.compile(model, backend="pytvmbridge")
        seen = set()
        for scale in (0.0, 10.0):  # mean(relu(...)) small for one, large for the other
            xs = x * scale
            seen.add(bool(torch.relu(model.encode(xs)).mean() > 0.2))
            torch.testing.assert_close(compiled(xs), model(xs), rtol=1e-4, atol=1e-4)
    assert seen == {True, False}


def test_bert_pieces_add_up_to_the_layer():
    """benchmarks/model_pieces.py cuts the BERT layer at its tensors: chained in eager, the
    pieces give the layer's output, and compiled alone each matches its eager self."""
    from benchmarks.model_pieces import WHOLE, bert_pieces

    torch._dynamo.reset()
    layer, x = build("bert_layer", batch=2, small=True)
    with torch.no_grad():
        pieces = bert_pieces(layer, x)
        p = {name: pieces[name][0] for name in WHOLE}
        ctx = p["attention"](p["qkv"](x))
        x1 = p["out_proj_norm"](ctx, x)
        out = p["ffn2_norm"](p["ffn1_gelu"](x1), x1)
        torch.testing.assert_close(out, layer(x), rtol=1e-5, atol=1e-5)
        for name in ("attention", "ffn2_norm"):
            module, args = pieces[name]
            torch._dynamo.reset()
            compiled = torch.compile(module, backend="pytvmbridge")
            torch.testing.assert_close(compiled(*args), module(*args), rtol=1e-4, atol=1e-4)


def test_bert_stage_prefixes_compute_the_layers_intermediates():
    """benchmarks/model_stages.py cuts the layer's one kernel at the stages it writes: the
    prefix kernels give the layer's own intermediates (against eager PyTorch), with and without
    a scheduler knob changed."""
    import math

    from benchmarks.model_stages import build_prefixes, capture_kernel, cuts, with_knobs
    from pytvmbridge.te import PlaceholderOp

    layer, x = build("bert_layer", batch=2, small=True)
    with torch.no_grad():
        args, values, _ = capture_kernel(layer, x)
        b, s, h = x.shape
        q, k, _ = layer.qkv(x).split(h, dim=-1)
        heads = lambda t: t.reshape(b, s, layer.heads, layer.head_dim).transpose(1, 2)  # noqa: E731
        scores = heads(q) @ heads(k).transpose(-1, -2) / math.sqrt(layer.head_dim)
        expected = {
            "T_dense_pack": torch.nn.functional.linear(x, layer.qkv.weight),
            "T_softmax_norm": torch.softmax(scores, dim=-1).reshape(-1, s, s),
            "T_layer_norm#2": layer(x),
        }
    inputs = [a for a in args if isinstance(a.op, PlaceholderOp)]
    outputs = [a for a in args if not isinstance(a.op, PlaceholderOp)]
    stages = cuts(outputs)
    keys = [key for key, _, _ in stages]
    assert keys[0] == "T_dense_pack" and keys[-1] == "T_layer_norm#2"
    assert [key for key, rule, _ in stages if rule == "tiled_reduction"] == [
        "T_dense_pack", "T_batch_matmul", "T_batch_matmul#2", "T_dense_pack#2", "T_dense_pack#3",
        "T_dense_pack#4",
    ]  # fmt: skip
    default = tvm.auto_schedule_space(outputs)["default"]
    knobbed = with_knobs(default, [("T_dense_pack", "parallel_depth", 2)])
    assert knobbed["T_dense_pack#4"]["parallel_depth"] == 2
    for config in (None, knobbed):
        kernels = build_prefixes(inputs, outputs, stages, values[: len(inputs)], config)
        for key, want in expected.items():
            module, tensors = kernels[keys.index(key)]
            module(*tensors)
            torch.testing.assert_close(tensors[-1].reshape(want.shape), want, rtol=1e-4, atol=1e-4)


def test_model_names_take_unambiguous_prefixes():
    """benchmarks/models.py --models: a prefix names the one model it starts (``bert``)."""
    from benchmarks.models import model_names

    assert model_names("bert,mlp") == ["bert_layer", "mlp"]
    assert model_names("resnet18") == ["resnet18"]
    for bad in ("resnet", "vgg"):
        with pytest.raises(ValueError, match="the models are"):
            model_names(bad)
