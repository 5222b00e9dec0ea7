"""The closed sets of names the backend primitives take (typed as ``Literal`` aliases) against the runtime tables
and array methods that serve them, so that the types and the tables cannot drift apart."""
from typing import get_args

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import _index, _reduce, get_backend


def test_scatter_reduce_names_are_the_ufunc_table():
    assert set(get_args(_index.ScatterReduce)) == set(_index.SCATTER_REDUCE_UFUNC)
    assert set(_index.SCATTER_REDUCE_UFUNC.values()) <= set(get_args(_index.AtUfunc))


def test_scatter_modes_and_at_reductions_are_ufuncs():
    ufuncs = set(get_args(_index.AtUfunc))
    assert set(get_args(_index.ScatterMode)) <= ufuncs
    assert set(get_args(_index.AtReduce)) == ufuncs - {"add"}
    for name in ufuncs:
        assert isinstance(getattr(np, name), np.ufunc), name


def test_every_scatter_reduce_name_is_accepted_by_the_op(device):
    x = mt.zeros(4, device=device)
    index = mt.tensor([0, 1, 1, 3], device=device)
    src = mt.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    for name in get_args(_index.ScatterReduce):
        x.scatter_reduce(0, index, src, name)
    for name in get_args(_index.ScatterMode):
        x.scatter(0, index, 2.0, reduce=name)


@pytest.mark.parametrize("name", get_args(_reduce.ReduceName))
def test_reduce_names_are_array_methods(name):
    be = get_backend("cpu")
    x = np.arange(1, 7, dtype=np.float64).reshape(2, 3)
    np.testing.assert_array_equal(be.reduce(name, x, (1,)), getattr(x, name)(axis=(1,)))


def test_scan_names_are_the_identity_table():
    assert set(get_args(_reduce.ScanName)) == set(_reduce._SCAN_IDENTITY)
    be = get_backend("cpu")
    x = np.array([2.0, 3.0, 4.0])
    for name, identity in _reduce._SCAN_IDENTITY.items():
        r = getattr(be, name)(x, 0, exclusive=True)
        assert r[0] == identity and r[1:].tolist() == getattr(x, name)()[:-1].tolist()
