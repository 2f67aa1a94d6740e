"""Packed and folded weights of the torch.compile backend follow the parameters' updates that
PyTorch counts (optimizer steps, load_state_dict, in-place writes under no_grad), and a model
made under inference_mode (no version counters) runs."""

from __future__ import annotations

import torch

import pytvmbridge.torch  # noqa: F401  (registers the backend)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(8 * 6 * 6, 5),
    ).eval()  # fmt: skip


def test_in_place_parameter_updates_under_no_grad_are_seen():
    model = _model()
    compiled = torch.compile(model, backend="pytvmbridge")
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        model[0].weight.mul_(-2.0)
        model[1].running_var.mul_(4.0)
        model[4].weight.add_(0.5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        state = {k: v * 0.5 for k, v in _model().state_dict().items()}
        state["1.num_batches_tracked"] = torch.tensor(0)
        model.load_state_dict(state)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_a_model_made_under_inference_mode_runs():
    with torch.inference_mode():
        model = _model()
        x = torch.randn(2, 3, 8, 8)
        compiled = torch.compile(model, backend="pytvmbridge")
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_a_kernel_writing_a_weight_in_place_is_seen():
    # A pytvmbridge kernel that updates a parameter in place (a fused optimizer step, say) bumps
    # its version counter as PyTorch's in-place operators do: the compiled model's packed weight
    # is rebuilt
    import pytvmbridge as tvm

    halve = tvm.kernel(lambda w: tvm.compute(w.shape, lambda i, j: w[i, j] * 0.5, name="h"))
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 32).eval().requires_grad_(False)
    compiled = torch.compile(lin, backend="pytvmbridge")
    x = torch.randn(8, 64)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), lin(x), rtol=1e-4, atol=1e-4)
        halve(lin.weight.clone(), out=lin.weight)
        torch.testing.assert_close(compiled(x), lin(x), rtol=1e-4, atol=1e-4)


def test_fused_optimizer_steps_are_seen():
    # PyTorch's fused optimizer kernels write the parameters without bumping their version
    # counters: the compiled model kept its first packed weights (losses 2.36, 2.33, 2.31
    # against eager's 2.36, 2.05, 1.83 with SGD(lr=0.5, fused=True)).
    import copy

    import torch.nn.functional as F

    for make in (
        lambda p: torch.optim.SGD(p, lr=0.5, fused=True),
        lambda p: torch.optim.Adam(p, lr=0.05, fused=True),
    ):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
        )
        eager, mine = copy.deepcopy(model), copy.deepcopy(model)
        compiled = torch.compile(mine, backend="pytvmbridge")
        opt_e, opt_c = make(eager.parameters()), make(mine.parameters())
        x, y = torch.randn(16, 8), torch.randint(0, 10, (16,))
        for _ in range(3):
            loss_e = F.cross_entropy(eager(x), y)
            opt_e.zero_grad()
            loss_e.backward()
            opt_e.step()
            loss_c = F.cross_entropy(compiled(x), y)
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
            torch.testing.assert_close(loss_c, loss_e, rtol=1e-4, atol=1e-5)
        # and in inference afterwards (eval, no grad: the packed weights' path)
        mine.eval()
        eager.eval()
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)


def test_a_dropped_model_is_not_kept_alive_by_its_compiled_graph():
    # Dynamo keeps the compiled graph with the code of forward; its cache of packed weights
    # held the last model's tensors (and their packed copies) until torch._dynamo.reset().
    import gc
    import weakref

    torch._dynamo.reset()

    def run_once():
        model = torch.nn.Sequential(
            torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 64)
        ).eval()
        with torch.no_grad():
            x = torch.randn(4, 256)
            torch.testing.assert_close(
                torch.compile(model, backend="pytvmbridge")(x), model(x), rtol=1e-4, atol=1e-4
            )
        return weakref.ref(model[0].weight)

    ref = run_once()
    gc.collect()
    assert ref() is None
