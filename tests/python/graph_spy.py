"""The CompiledGraphs that ``torch.compile(..., backend="pytvmbridge")`` makes, for tests that
check what the graph compiler chose (weight layouts, Winograd, sizes)."""

from __future__ import annotations

from typing import Any

import torch

from pytvmbridge.graph import backend


def compiled_graphs(
    model: torch.nn.Module,
    inputs: list[torch.Tensor],
    dynamic: bool = False,
    scale_atol: bool = False,
    **options: Any,
) -> list[Any]:
    """Compile ``model`` with ``options``, run it on each of ``inputs`` (``dynamic``: the batch
    marked dynamic) checking against eager (rtol 1e-4, atol 1e-4, times the largest expected
    value with ``scale_atol``), and return the CompiledGraphs made on the way."""
    graphs: list[Any] = []
    original = backend.partition_and_compile

    def spy(gm: Any, **opts: Any) -> Any:
        fused = original(gm, **opts)
        graphs.extend(m.compiled for m in fused.modules() if hasattr(m, "compiled"))
        return fused

    backend.partition_and_compile = spy
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="pytvmbridge", options=options or None)
        with torch.no_grad():
            for x in inputs:
                if dynamic:
                    torch._dynamo.mark_dynamic(x, 0)
                expected = model(x)
                atol = 1e-4 * (float(expected.abs().max()) if scale_atol else 1.0)
                torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=atol)
    finally:
        backend.partition_and_compile = original
    return graphs
