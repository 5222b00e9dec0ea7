"""Writes into memory that several elements share must raise, whatever the array library says: NumPy marks
broadcast views read-only, CuPy does not, so these tests build NumPy arrays with zero strides that NumPy lets
us write (CuPy's situation) and check that every write path still refuses them."""
import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend

_MSG = "more than one element of the written-to tensor refers to a single memory location"


def _overlapping():
    base = np.arange(6.0)
    return base, np.lib.stride_tricks.as_strided(base, shape=(3, 6), strides=(0, 8), writeable=True)


def test_backend_sees_zero_strides_as_unwritable():
    be = get_backend("cpu")
    _, arr = _overlapping()
    assert arr.flags.writeable and not be.writable(arr)
    assert be.writable(np.zeros((3, 6))) and be.writable(np.zeros((1, 6))[:, :1])
    with pytest.raises(RuntimeError, match=_MSG):
        be.fill(arr, 1.0)
    with pytest.raises(RuntimeError, match=_MSG):
        be.copy_into(arr, np.ones((3, 6)))


@pytest.mark.parametrize("write", [lambda v: v.add_(2), lambda v: v.mul_(2), lambda v: v.fill_(1.0),
                                   lambda v: v.__setitem__(0, 1.0), lambda v: v.__setitem__([0], 1.0)])
def test_every_write_path_refuses_shared_elements(write):
    base, arr = _overlapping()
    v = mt.from_numpy(arr)
    with pytest.raises(RuntimeError, match=_MSG):
        write(v)
    np.testing.assert_array_equal(base, np.arange(6.0))


def test_the_check_works_without_numpys_flag():
    from types import SimpleNamespace

    from minitorch_gpu.backends._types import writable
    cupy_like = SimpleNamespace(flags=SimpleNamespace(c_contiguous=False), size=6, strides=(0, 8), shape=(3, 2))
    assert not writable(cupy_like)
    assert writable(SimpleNamespace(flags=SimpleNamespace(), size=6, strides=(16, 8), shape=(3, 2)))


def test_every_write_check_goes_through_writable():
    # CuPy arrays have no ``flags.writeable``: reading it directly broke every in-place kernel path on a GPU
    import pathlib
    import re
    root = pathlib.Path(mt.__file__).parent
    offenders = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name != "_types.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(r"\.flags\.writeable\b(?!\s*=)", line) or re.search(r"fl\.writeable\b", line)]
    assert offenders == []
