"""Options are checked, each wrong value refused with a ValueError (TypeError for an option
argument that is no dict) that names the option, what it takes and what it was given: the
``torch.compile`` backend's options, ``pytvmbridge.torch.enable``'s and
``pytvmbridge.torch.compile``'s (PyTorchTVM's)."""

from __future__ import annotations

import pytest
import torch

import pytvmbridge.torch as ptt
from pytvmbridge.graph.backend import BackendOptions


@pytest.mark.parametrize(
    "options, message",
    [
        ({"opt_level": 7}, r"options\['opt_level'\] must be an int in 0\.\.3, found 7 \(int\)"),
        ({"opt_level": "3"}, r"options\['opt_level'\] must be an int in 0\.\.3, found '3' \(str\)"),
        ({"opt_level": True}, r"options\['opt_level'\] must be an int .* found True \(bool\)"),
        ({"strict": 1}, r"options\['strict'\] must be True or False, found 1 \(int\)"),
        ({"strict": "yes"}, r"options\['strict'\] must be True or False, found 'yes'"),
        ({"num_threads": True}, r"options\['num_threads'\] must be an int >= 1 .*True \(bool\)"),
        ({"num_threads": 0}, r"options\['num_threads'\] must be an int >= 1 .*found 0"),
        ({"tuning_log_file": 3}, r"options\['tuning_log_file'\] must be a path .*found 3 \(int\)"),
        ({"target": "cuda"}, r"options\['target'\] must be an llvm target .*found 'cuda'"),
        ({"target": "bogus"}, r"options\['target'\] must be an llvm target .*found 'bogus'"),
        ({"target": "llvm -mcpu=nosuchcpu"}, r"options\['target'\] .*unknown CPU 'nosuchcpu'"),
        ({"target": 3}, r"options\['target'\] must be an llvm target string .*found 3 \(int\)"),
        ({"winograd": "yes"}, r"options\['winograd'\] must be True or False, found 'yes'"),
    ],
)
def test_backend_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        BackendOptions.parse(options)


def test_good_backend_options_pass():
    parsed = BackendOptions.parse(
        {"strict": True, "num_threads": 2, "opt_level": 0, "target": "llvm", "winograd": False}
    )
    assert (parsed.strict, parsed.num_threads, parsed.opt_level) == (True, 2, 0)


def test_a_bad_target_is_an_error_not_a_fallback():
    """An unknown target used to warn and run every partition in PyTorch."""
    torch._dynamo.reset()
    f = torch.compile(lambda x: x + 1, backend="pytvmbridge", options={"target": "bogus"})
    with pytest.raises(Exception, match=r"options\['target'\]") as info:
        f(torch.ones(2))
    assert isinstance(info.value.inner_exception, ValueError)  # (Dynamo wraps it)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"opt_level": True}, r"opt_level must be an int in 0\.\.3, found True \(bool\)"),
        ({"opt_level": 9}, r"opt_level must be an int in 0\.\.3, found 9"),
        ({"strict": "no"}, r"options\['strict'\] must be True or False, found 'no'"),
        ({"num_threads": True}, r"options\['num_threads'\] must be an int >= 1"),
        ({"target": "cuda"}, r"options\['target'\]"),
    ],
)
def test_enable_checks_its_options_at_once(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ptt.enable(**kwargs)
    assert not ptt.is_enabled()


def _model():
    return torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU()).eval()


@pytest.mark.parametrize(
    "option, message",
    [
        ({"num_outputs": "1"}, r"option 'num_outputs' must be an int >= 1, found '1' \(str\)"),
        ({"num_outputs": True}, r"option 'num_outputs' must be an int >= 1, found True \(bool\)"),
        ({"num_outputs": 0}, r"option 'num_outputs' must be an int >= 1, found 0"),
        ({"tuning_n_trials": "5"}, r"option 'tuning_n_trials' must be an int >= 0, found '5'"),
        ({"export_dir": 3}, r"option 'export_dir' must be a path .*found 3 \(int\)"),
        ({"tuning_log_file": 2.5}, r"option 'tuning_log_file' must be a path .*found 2\.5"),
        ({"strict": "yes"}, r"option 'strict' must be True or False, found 'yes' \(str\)"),
        ({"default_dtype": "bogus"}, r"option 'default_dtype' must be one of \[.*'bogus'"),
        (
            {"input_infos": [("x", (2, 4)), ("y", (2, 4))]},
            r"option 'input_infos' lists 2 input\(s\), but Sequential\.forward takes 1 "
            r"input\(s\) \('input',\)",
        ),
        ({"input_infos": [("x", (-2, 4))]}, r"input_infos\[0\] must be .* ints >= 0"),
        ({"input_infos": [("x", ("2 rows", 4))]}, r"input_infos\[0\] must be .*identifiers"),
    ],
)
def test_pytorchtvm_options_are_checked(option, message):
    option = {"input_infos": [("x", (2, 4))], **option}
    with pytest.raises(ValueError, match=message):
        ptt.compile(_model(), option)


def test_pytorchtvm_too_few_inputs_and_a_non_dict_option():
    bilinear = torch.nn.Bilinear(2, 2, 3).eval()
    with pytest.raises(ValueError, match=r"lists 1 input\(s\), but Bilinear\.forward takes 2"):
        ptt.compile(bilinear, {"input_infos": [("x", (2, 2))]})
    with pytest.raises(TypeError, match=r"option must be a dict .* found list"):
        ptt.compile(_model(), [("x", (2, 4))])


def test_pytorchtvm_good_options_still_compile():
    model = _model()
    compiled = ptt.compile(
        model, {"input_infos": [("x", ("n", 4))], "num_outputs": 1, "strict": True}
    )
    x = torch.randn(5, 4)
    torch.testing.assert_close(compiled(x), model(x))


def test_pytorchtvm_inputs_are_checked_under_the_users_names(tmp_path):
    # The kernel's own checks would name its arguments, weights included ("argument 1
    # ('input_1')"); the compiled model names the input as input_infos did
    torch.manual_seed(0)
    bilinear = torch.nn.Bilinear(4, 3, 2).eval()
    option = {"input_infos": [("a", ("n", 4)), ("b", ("n", 3))], "export_dir": str(tmp_path)}
    compiled = ptt.compile(bilinear, option)
    a, b = torch.randn(5, 4), torch.randn(5, 3)
    for model in (compiled, ptt.load(tmp_path)):
        torch.testing.assert_close(model(a, b), bilinear(a, b), rtol=1e-5, atol=1e-5)
        with pytest.raises(ValueError, match=r"input 1 \('b'\): expected size 3 in dimension 1"):
            model(a, torch.randn(5, 4))
        with pytest.raises(ValueError, match=r"input 1 \('b'\): size 'n' is 5 \(from input 0"):
            model(a, torch.randn(6, 3))
        with pytest.raises(TypeError, match=r"input 0 \('a'\) must be a torch.Tensor, found nd"):
            model(a.numpy(), b)
        with pytest.raises(TypeError, match=r"input 0 \('a'\) must be float32, found torch.fl"):
            model(a.double(), b)
        with pytest.raises(ValueError, match=r"input 1 \('b'\) must have 2 dimension"):
            model(a, b[0])
