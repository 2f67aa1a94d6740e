"""One buffer, four frameworks: PyTorch, NumPy, JAX and pytvmbridge view the same memory.

pytvmbridge allocates a 64-byte aligned array; PyTorch, NumPy and JAX import it through DLPack
without copying (same data pointer), and a write through PyTorch or NumPy is seen by all of them.
A PyTorch view with a storage offset travels back into pytvmbridge the same way. JAX arrays are
immutable by contract, so JAX only reads.

Run: python examples/shared_buffer.py
"""

import jax
import jax.numpy as jnp
import numpy as np
import torch

import pytvmbridge as tvm


def main() -> None:
    buf = tvm.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    as_torch = torch.from_dlpack(buf)
    as_numpy = np.from_dlpack(buf)
    as_jax = jax.dlpack.from_dlpack(buf)

    pointers = {
        "pytvmbridge": buf.data_ptr,
        "torch": as_torch.data_ptr(),
        "numpy": as_numpy.ctypes.data,
        "jax": as_jax.unsafe_buffer_pointer(),
    }
    for name, ptr in pointers.items():
        print(f"{name:12s} data pointer 0x{ptr:x}")
    assert len(set(pointers.values())) == 1, "every framework must see the same memory"
    assert buf.data_ptr % 64 == 0

    as_torch[0, 0] = 100.0  # a write through PyTorch...
    as_numpy[2, 3] = -7.0  # ...and one through NumPy
    print("after writes through torch and numpy:")
    print("  pytvmbridge:", buf.numpy().tolist())
    print("  jax reads:  ", np.asarray(as_jax).tolist())
    for seen in (buf.numpy(), as_numpy, as_torch.numpy(), np.asarray(as_jax)):
        assert seen[0, 0] == 100.0 and seen[2, 3] == -7.0
    assert float(jnp.sum(as_jax)) == float(as_torch.sum())

    # And back: a strided PyTorch view (storage offset 5, row stride 4) into pytvmbridge.
    window = as_torch[1:, 1:]
    view = tvm.nd.from_dlpack(window)
    print(
        f"torch view t[1:, 1:]: shape={view.shape} strides={view.strides} "
        f"offset={(view.data_ptr - buf.data_ptr) // 4} elements"
    )
    assert view.data_ptr == window.data_ptr() == buf.data_ptr + 5 * 4
    assert view.strides == (4, 1)
    np.testing.assert_array_equal(view.numpy(), as_numpy[1:, 1:])
    print("ok: one buffer, four frameworks, no copies")


if __name__ == "__main__":
    main()
