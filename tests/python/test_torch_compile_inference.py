"""pytvmbridge.torch.compile (PyTorchTVM's compile) compiles for inference: a model left in
training mode is compiled as in eval mode with a warning, and a backward through the outputs
raises an error that names the way to train, not PyTorch's generic message."""

import warnings

import pytest
import torch

import pytvmbridge.torch_compile as ptc
from pytvmbridge.error import TVMNotImplementedError


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5), torch.nn.Tanh())
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    return model


def test_training_mode_model_is_compiled_as_eval_with_a_warning():
    model = _model()  # training mode
    with pytest.warns(UserWarning, match="training mode"):
        compiled = ptc.compile(model, {"input_infos": [("x", (6, 4))]})
    assert model.training  # left as it was
    x = torch.randn(6, 4)
    with torch.no_grad():
        expected = model.eval()(x)  # the running statistics, not the batch's
    torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-5)


def test_eval_model_compiles_without_that_warning():
    model = _model().eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ptc.compile(model, {"input_infos": [("x", (6, 4))]})
    assert not [w for w in caught if "training mode" in str(w.message)]


def test_backward_through_a_compiled_model_says_how_to_train():
    compiled = ptc.compile(_model().eval(), {"input_infos": [("x", (6, 4))]})
    x = torch.randn(6, 4, requires_grad=True)
    y = compiled(x)
    with pytest.raises(TVMNotImplementedError, match='backend="pytvmbridge"'):
        y.sum().backward()
    with torch.no_grad():  # the forward pass itself is fine
        torch.testing.assert_close(compiled(x), _model().eval()(x), rtol=1e-5, atol=1e-5)
