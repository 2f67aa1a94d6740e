"""Issue 10 item 7: every user error is a ``tvm.error.TVMError`` and keeps its standard class.

Errors raised by the C++ core were TVMErrors already; these cases are the ones raised from Python
(bridges, ``@kernel``, ``nd``, the framework adapters, packed functions, reducers, extern stages,
export), each checked for both classes and for a message naming what was wrong.
"""

import ast
import pathlib

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
import pytvmbridge.autotvm
import pytvmbridge.topi
import pytvmbridge.torch
from pytvmbridge import te
from pytvmbridge.error import (
    TVMError,
    TVMNotImplementedError,
    TVMTypeError,
    TVMValueError,
)


def _vadd():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    return A, B, tvm.build(te.create_schedule(B.op), [A, B])


def _kernel_returning_input():
    @tvm.kernel
    def k(a):
        return a

    return k(np.zeros(3, "float32"))


def _extern_with_foreign_tensor():
    A = te.placeholder((4,), name="A")
    other = te.placeholder((4,), name="other")
    return te.extern(
        (4,), [A], lambda ins, outs: tvm.tir.call_packed("f", other, outs[0]), name="E"
    )


def _reducer_of_mismatched_identity():
    argmax = te.comm_reducer(lambda x, y: x, lambda t: (t, t), name="bad")
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), name="k")
    return te.compute((1,), lambda i: argmax(A[k], axis=k))


def _torch_output_requiring_grad():
    _, _, f = _vadd()
    f(torch.zeros(8), torch.zeros(8, requires_grad=True))


def _numpy_read_only_output():
    _, _, f = _vadd()
    out = np.zeros(8, "float32")
    out.flags.writeable = False
    f(np.zeros(8, "float32"), out)


def _graph_backend_options(options):
    from pytvmbridge.graph.backend import BackendOptions

    return BackendOptions.parse(options)


def _torch_switch():
    from pytvmbridge.torch import switch

    return switch


def _autotvm_space():
    from pytvmbridge.autotvm.space import ConfigSpace

    return ConfigSpace()


# (description, call, standard class, words the message must contain)
def _load_foreign_file():
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(b"\x7fELF" + bytes(64))
        f.flush()
        tvm.runtime.load_module(f.name)


CASES = [
    ("nd.array of complex", lambda: tvm.nd.array(np.zeros(3, "complex64")), TypeError, "dtype"),
    ("nd.empty bad dtype", lambda: tvm.nd.empty((2,), "float7"), TypeError, "float7"),
    ("device cuda", lambda: tvm.device("cuda"), ValueError, "CPU"),
    (
        "nd.array on cuda",
        lambda: tvm.nd.array(np.zeros(2, "float32"), device=("cuda", 0)),
        ValueError,
        "CPU",
    ),
    (
        "copyfrom shape",
        lambda: tvm.nd.empty((3,)).copyfrom(np.zeros(4, "float32")),
        ValueError,
        "shape",
    ),
    (
        "asnumpy no-copy dtype",
        lambda: tvm.nd.array(np.zeros(2, "float32")).__array__("float64", copy=False),
        ValueError,
        "without a copy",
    ),
    ("@kernel of an int", lambda: tvm.kernel(5), TypeError, "@kernel"),
    ("@kernel bad schedule", lambda: tvm.kernel(lambda a: a, schedule=3), TypeError, "schedule"),
    ("@kernel returns input", _kernel_returning_input, ValueError, "returns its input"),
    ("kernel call with a str", lambda: tvm.kernel(lambda a: a)("x"), TypeError, "array"),
    ("framework unknown", lambda: tvm.frameworks.get("tensorflow"), ValueError, "tensorflow"),
    ("torch output needs grad", _torch_output_requiring_grad, ValueError, "requires grad"),
    ("numpy read-only output", _numpy_read_only_output, ValueError, "read-only"),
    ("register_func no name", lambda: tvm.register_func(3), TypeError, "name"),
    ("get_global_func missing", lambda: tvm.get_global_func("no.such"), ValueError, "no.such"),
    ("call_packed no name", lambda: tvm.tir.call_packed(3), TypeError, "name"),
    ("extern foreign tensor", _extern_with_foreign_tensor, ValueError, "does not take"),
    (
        "extern non-packed body",
        lambda: te.extern((4,), [], lambda ins, outs: 0, name="E"),
        NotImplementedError,
        "call_packed",
    ),
    (
        "comm_reducer non-callables",
        lambda: te.comm_reducer(1, 2),
        TypeError,
        "callables",
    ),
    ("reducer mismatched identity", _reducer_of_mismatched_identity, ValueError, "fidentity"),
    ("lower of a non-schedule", lambda: tvm.lower(5, []), TypeError, "schedule"),
    ("build of a non-schedule", lambda: tvm.build("s", []), TypeError, "schedule"),
    (
        "export_library fcompile",
        lambda: _vadd()[2].export_library("f.so", fcompile=print),
        NotImplementedError,
        "fcompile",
    ),
    ("load_module foreign file", lambda: _load_foreign_file(), ValueError, "not a pytvmbridge"),
    ("compute tag not str", lambda: te.compute((2,), lambda i: i, tag=3), TypeError, "tag"),
    # the subpackages: topi, graph, torch, autotvm, autodiff
    (
        "topi reshape two -1",
        lambda: tvm.topi.reshape(te.placeholder((4, 4)), (-1, -1)),
        ValueError,
        "only one dimension",
    ),
    (
        "topi take float indices",
        lambda: tvm.topi.take(te.placeholder((4,)), te.placeholder((2,), "float32")),
        TypeError,
        "integers",
    ),
    (
        "graph unknown option",
        lambda: _graph_backend_options({"speed": 1}),
        ValueError,
        "unknown key",
    ),
    (
        "torch.enable opt_level",
        lambda: _torch_switch().enable(opt_level=9),
        ValueError,
        "opt_level",
    ),
    ("torch.to_graph inputs", lambda: tvm.torch.to_graph(abs, 3), TypeError, "example_inputs"),
    (
        "autotvm get_config outside",
        lambda: tvm.autotvm.get_config(),
        RuntimeError,
        "only valid inside a template",
    ),
    (
        "autotvm empty knob",
        lambda: _autotvm_space().define_knob("k", []),
        ValueError,
        "must not be empty",
    ),
    ("te.gradient of a non-tensor", lambda: te.gradient(3, []), TypeError, "must be a Tensor"),
]


@pytest.mark.parametrize("call,std,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_python_raised_errors_are_tvm_errors_of_their_standard_class(call, std, words):
    with pytest.raises(TVMError) as info:
        call()
    assert isinstance(info.value, std), type(info.value).__mro__
    assert isinstance(info.value, RuntimeError)  # TVMError is a RuntimeError, as in TVM
    assert words in str(info.value)


def test_the_kind_classes_derive_from_tvm_error_and_the_standard_class():
    for cls, std in [
        (TVMTypeError, TypeError),
        (TVMValueError, ValueError),
        (TVMNotImplementedError, NotImplementedError),
        (tvm.error.TVMBufferError, BufferError),
        (tvm.error.TVMIndexError, IndexError),
        (tvm.error.TVMMemoryError, MemoryError),
    ]:
        assert issubclass(cls, TVMError) and issubclass(cls, std)
    # code written against the standard classes keeps catching the Python-raised errors
    try:
        tvm.nd.empty((2,), "float7")
    except TypeError as err:
        assert type(err) is TVMTypeError
    else:
        pytest.fail("no error")


def test_no_python_module_raises_a_plain_standard_error():
    """Every ``raise TypeError(...)``-style statement in the package uses the TVM classes.

    All modules: the top level, the framework adapters, ``contrib`` and the subpackages
    (``topi``, ``graph``, ``torch``, ``autotvm``, ``autodiff``).
    """
    root = pathlib.Path(tvm.__file__).parent
    plain = {
        "TypeError",
        "ValueError",
        "NotImplementedError",
        "BufferError",
        "IndexError",
        "RuntimeError",
    }
    found = []
    paths = list(root.rglob("*.py"))
    assert any(p.parent.name == "topi" for p in paths)
    for path in sorted(paths):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                if isinstance(func, ast.Name) and func.id in plain:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {func.id}")
    assert found == []
