"""dtype objects, PyTorch's promotion rules (promote_types / result_type / can_cast), and the default dtype."""
import copy
import pickle

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu import _dtype

NAMES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def tdt(torch, name):
    return getattr(torch, name)


@pytest.fixture
def restore_default_dtype():
    old = mt.get_default_dtype()
    yield
    mt.set_default_dtype(old)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_match_torch(torch, name):
    d, t = getattr(mt, name), tdt(torch, name)
    assert d.is_floating_point == t.is_floating_point
    assert d.is_signed == t.is_signed
    assert d.itemsize == t.itemsize
    assert d.is_complex is False
    assert repr(d) == f"minitorch_gpu.{name}"


def test_aliases_are_the_same_objects():
    assert mt.float is mt.float32 and mt.double is mt.float64 and mt.half is mt.float16
    assert mt.long is mt.int64 and mt.int is mt.int32 and mt.short is mt.int16


@pytest.mark.parametrize("name", NAMES)
def test_dtypes_are_singletons_through_pickle_and_copy(name):
    d = getattr(mt, name)
    assert pickle.loads(pickle.dumps(d)) is d
    assert copy.deepcopy(d) is d and copy.copy(d) is d


def test_promote_types_full_table_matches_torch(torch):
    for a in NAMES:
        for b in NAMES:
            got = mt.promote_types(getattr(mt, a), getattr(mt, b))
            want = torch.promote_types(tdt(torch, a), tdt(torch, b))
            assert got.name == str(want).split(".")[1], (a, b)


def test_promote_types_rejects_non_dtypes():
    with pytest.raises(TypeError):
        mt.promote_types(mt.float32, "float64")


def _make(torch, name, ndim):
    shape = (2,) * ndim
    return (mt.zeros(*shape, dtype=getattr(mt, name)) if shape else mt.zeros((), dtype=getattr(mt, name)),
            torch.zeros(shape, dtype=tdt(torch, name)))


@pytest.mark.parametrize("da", [0, 1, 2])
@pytest.mark.parametrize("db", [0, 1])
def test_result_type_tensor_pairs_match_torch(torch, da, db):
    for a in NAMES:
        for b in NAMES:
            ma, ta = _make(torch, a, da)
            mb, tb = _make(torch, b, db)
            got = mt.result_type(ma, mb)
            want = torch.result_type(ta, tb)
            assert got.name == str(want).split(".")[1], (a, da, b, db)


@pytest.mark.parametrize("scalar", [True, 3, -2, 2.5, np.float64(1.5), np.int64(7), np.float32(2)])
@pytest.mark.parametrize("ndim", [0, 1])
def test_result_type_tensor_and_scalar_match_torch(torch, scalar, ndim):
    for a in NAMES:
        ma, ta = _make(torch, a, ndim)
        for args_m, args_t in (((ma, scalar), (ta, scalar)), ((scalar, ma), (scalar, ta))):
            got = mt.result_type(*args_m)
            want = torch.result_type(*args_t)
            assert got.name == str(want).split(".")[1], (a, ndim, scalar)


@pytest.mark.parametrize("pair", [(True, False), (2, 3), (2, 3.5), (True, 2), (True, 2.0)])
def test_result_type_of_two_scalars_matches_torch(torch, pair):
    assert mt.result_type(*pair).name == str(torch.result_type(*pair)).split(".")[1]


def test_result_type_three_classes():
    # dim tensor int32, 0-dim float16, Python float: the 0-dim float wins over the int tensor
    i32 = mt.zeros(2, dtype=mt.int32)
    h0 = mt.zeros((), dtype=mt.float16)
    assert _dtype.result_type(i32, h0, 1.5) is mt.float16
    # bool tensor with a 0-dim int8 and a Python int: 0-dim int8 outranks the scalar
    b = mt.zeros(2, dtype=mt.bool)
    assert _dtype.result_type(b, mt.zeros((), dtype=mt.int8), 5) is mt.int8
    assert _dtype.result_type(b, 5) is mt.int64
    assert _dtype.result_type(mt.zeros(2, dtype=mt.uint8), mt.zeros((), dtype=mt.int64)) is mt.uint8


def test_result_type_rejects_other_objects():
    with pytest.raises(TypeError):
        _dtype.result_type(mt.zeros(2), "a")


def test_can_cast_full_table_matches_torch(torch):
    for a in NAMES:
        for b in NAMES:
            assert mt.can_cast(getattr(mt, a), getattr(mt, b)) == torch.can_cast(tdt(torch, a), tdt(torch, b)), (a, b)


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_binary_op_dtypes_follow_promotion(torch, device, op, scalar):
    for a in ["float32", "float16", "int32", "uint8", "bool", "int64"]:
        x = mt.ones(3, dtype=getattr(mt, a), device=device)
        tx = torch.ones(3, dtype=tdt(torch, a))
        got = getattr(mt, op)(x, scalar).dtype
        want = getattr(torch, op)(tx, scalar).dtype
        assert got.name == str(want).split(".")[1], (a, scalar)


def test_default_dtype_affects_factories_and_promotion(torch, restore_default_dtype):
    assert mt.get_default_dtype() is mt.float32
    mt.set_default_dtype(mt.float64)
    assert mt.get_default_dtype() is mt.float64
    assert mt.zeros(2).dtype is mt.float64
    assert mt.ones(2).dtype is mt.float64
    assert mt.empty(2).dtype is mt.float64
    assert mt.tensor([1.5]).dtype is mt.float64
    assert mt.tensor([1, 2]).dtype is mt.int64
    assert mt.full((2,), 1.5).dtype is mt.float64
    assert mt.arange(3.0).dtype is mt.float64
    assert mt.arange(3).dtype is mt.int64
    assert mt.linspace(0, 1, 3).dtype is mt.float64
    assert mt.rand(2).dtype is mt.float64 and mt.randn(2).dtype is mt.float64
    assert mt.Tensor(2).dtype is mt.float64
    assert mt.result_type(mt.zeros(2, dtype=mt.int32), 1.5) is mt.float64
    assert mt.add(mt.ones(2, dtype=mt.int64), 0.5).dtype is mt.float64
    assert mt.result_type(mt.zeros(2, dtype=mt.float32), 1.5) is mt.float32
    mt.set_default_dtype(mt.float16)
    assert mt.tensor([1.5]).dtype is mt.float16
    assert mt.result_type(mt.zeros(2, dtype=mt.int64), 1.5) is mt.float16


def test_set_default_dtype_rejects_non_float_like_torch(torch, restore_default_dtype):
    for bad_m, bad_t in ((mt.int64, torch.int64), (float, float)):
        with pytest.raises(TypeError) as e:
            mt.set_default_dtype(bad_m)
        with pytest.raises(TypeError):
            torch.set_default_dtype(bad_t)
        assert "floating-point" in str(e.value)
    assert mt.get_default_dtype() is mt.float32


def test_python_types_as_dtype_like_torch(torch, device):
    for py in (float, int, bool):
        got = mt.zeros(2, dtype=py, device=device).dtype
        want = torch.zeros(2, dtype=py).dtype
        assert got.name == str(want).split(".")[1]


def test_from_numpy_dtype_rejects_unsupported():
    with pytest.raises(TypeError, match="complex128"):
        _dtype.from_numpy_dtype(np.complex128)
    with pytest.raises(TypeError):
        mt.zeros(2, dtype="not-a-dtype")


def test_bfloat16_on_cpu(torch):
    x = mt.tensor([1.5, -2.25, 3.0], dtype=mt.bfloat16)
    assert x.dtype is mt.bfloat16 and x.element_size() == 2
    assert x.float().tolist() == torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16).float().tolist()
    assert mt.ones(2, dtype=mt.bfloat16).float().tolist() == [1.0, 1.0]
    assert mt.tensor([1.0]).bfloat16().dtype is mt.bfloat16
    assert mt.promote_types(mt.bfloat16, mt.float16) is mt.float32

