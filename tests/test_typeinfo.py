"""``mt.finfo`` / ``mt.iinfo`` against PyTorch's, for every dtype we have."""
import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import to_np

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]
FINFO = ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]


def _message(exc):
    return str(exc.value).replace("torch.", "minitorch_gpu.")


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(torch, name):
    ours, theirs = mt.finfo(getattr(mt, name)), torch.finfo(getattr(torch, name))
    for attr in FINFO:
        a, b = getattr(ours, attr), getattr(theirs, attr)
        assert a == b and type(a) is type(b), (attr, a, b)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(torch, name):
    ours, theirs = mt.iinfo(getattr(mt, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "min", "max", "dtype"):
        a, b = getattr(ours, attr), getattr(theirs, attr)
        assert a == b and type(a) is type(b), (attr, a, b)
    assert repr(ours) == repr(theirs)


def test_defaults_aliases_equality_and_read_only(torch):
    assert mt.finfo() == mt.finfo(mt.float32) == mt.finfo(type=mt.float)
    prev = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    try:
        assert mt.finfo().dtype == "float64"
    finally:
        mt.set_default_dtype(prev)
    assert mt.finfo(mt.half) == mt.finfo(mt.float16) != mt.finfo(mt.bfloat16)
    assert mt.iinfo(mt.long) == mt.iinfo(mt.int64) and hash(mt.iinfo(mt.long)) == hash(mt.iinfo(mt.int64))
    with pytest.raises(AttributeError, match="attribute 'eps' of 'minitorch_gpu.finfo' objects is not writable"):
        mt.finfo().eps = 1.0


@pytest.mark.parametrize("call", [("finfo", "int32"), ("finfo", "bool"), ("iinfo", "float32"), ("iinfo", "bool"),
                                  ("finfo", "str"), ("iinfo", "int")])
def test_errors_match_torch(torch, call):
    fn, arg = call
    ours_arg = {"str": "float32", "int": 3}.get(arg, getattr(mt, arg, None))
    theirs_arg = {"str": "float32", "int": 3}.get(arg, getattr(torch, arg, None))
    with pytest.raises(TypeError) as ours:
        getattr(mt, fn)(ours_arg)
    with pytest.raises(TypeError) as theirs:
        getattr(torch, fn)(theirs_arg)
    assert str(ours.value) == _message(theirs)


@pytest.mark.parametrize("name", ["float32", "float64", "float16"])
def test_limits_are_values_of_the_dtype(device, name):
    # the idiom of attention masks: fill with the most negative value, which must be exact on every device
    dt = getattr(mt, name)
    info = mt.finfo(dt)
    x = mt.zeros(4, dtype=dt, device=device)
    y = x.masked_fill(mt.tensor([True, False, True, False], device=device), info.min)
    npd = np.dtype(name)
    assert to_np(y).tolist() == [info.min, 0.0, info.min, 0.0]
    assert to_np(mt.full((1,), info.max, dtype=dt, device=device))[0] == np.finfo(npd).max
    assert to_np(mt.full((1,), info.tiny, dtype=dt, device=device))[0] == np.finfo(npd).smallest_normal
    assert (to_np(mt.ones(1, dtype=dt, device=device) + info.eps) > 1).all()
    i = mt.iinfo(mt.int32)
    assert to_np(mt.tensor([i.min, i.max], dtype=mt.int32, device=device)).tolist() == [i.min, i.max]
