"""torch.testing.assert_close against PyTorch's own: the same pass or fail on each case, the same exception type
and message (mismatch counts, greatest differences and where they are, the tolerances), on every device; and
make_tensor's ranges and options."""
import math

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.testing import assert_close, make_tensor

NAN, INF = math.nan, math.inf

# (actual, expected, keyword arguments): Python data, turned into tensors of the named dtype on both sides
TENSOR_CASES = [
    ([1.0, 2.0, 3.0], [1.0, 2.5, 3.1], "float32", "float32", {}),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.5], [3.0, 4.0]], "float32", "float32", {}),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 3.0], [2.0, 4.0]], "float64", "float64", {}),
    (1.0, 2.0, "float32", "float32", {}),
    ([1, 2, 3], [1, 2, 4], "int64", "int64", {}),
    ([1.0, 2.0], [1.0, 2.0], "float32", "float64", {}),
    ([1.0, 2.0], [1.0, 2.0, 3.0], "float32", "float32", {}),
    ([1.0, NAN], [1.0, NAN], "float32", "float32", {}),
    ([1.0, NAN], [1.0, NAN], "float32", "float32", {"equal_nan": True}),
    ([1.0, 2.0], [1.0, NAN], "float64", "float64", {}),
    ([True, False], [True, True], "bool", "bool", {}),
    ([1.0, 2.0], [1.0, 2.1], "float32", "float32", {"msg": "custom"}),
    ([1.0, 2.0], [1.0, 2.1], "float32", "float32", {"rtol": 1e-3}),
    ([1.0, 2.0], [1.0, 2.1], "float32", "float32", {"rtol": 0.1, "atol": 0.0}),
    ([1.0, 2.0], [1.0, 2.1], "float32", "float32", {"rtol": 0.0, "atol": 0.0}),
    ([1.0, 2.0], [1.0, 2.001], "float16", "float16", {}),
    ([0.0, 2.0], [1e-6, 2.0], "float32", "float32", {}),
    ([1.0, 2.0], [0.0, 0.0], "float32", "float32", {}),
    ([1.0, INF], [1.0, INF], "float32", "float32", {}),
    ([1.0, INF], [1.0, -INF], "float32", "float32", {}),
    ([1, 2], [1.0, 2.5], "int64", "float32", {"check_dtype": False}),
    ([1.0, 2.0], [1, 2], "float32", "int64", {"check_dtype": False}),
    ([], [], "float32", "float32", {}),
    (list(range(20)), [i + i % 3 for i in range(20)], "float32", "float32", {}),
]


def _check_same_outcome(torch, ours, theirs):
    """Both pass, or both raise the same exception type with the same message (modulo the library name)."""
    try:
        theirs()
    except Exception as e:  # noqa: BLE001 -- whatever PyTorch raises, ours must raise too
        expected = e
    else:
        expected = None
    if expected is None:
        ours()
        return
    with pytest.raises(type(expected)) as got:
        ours()
    assert str(got.value) == str(expected).replace("torch.", "minitorch_gpu.")


@pytest.mark.parametrize("case", range(len(TENSOR_CASES)))
def test_tensor_cases_like_torch(device, torch, case):
    a, e, da, de, kw = TENSOR_CASES[case]
    ta, te = torch.tensor(a, dtype=getattr(torch, da)), torch.tensor(e, dtype=getattr(torch, de))
    ma = mt.tensor(a, dtype=getattr(mt, da), device=device)
    me = mt.tensor(e, dtype=getattr(mt, de), device=device)
    _check_same_outcome(torch, lambda: assert_close(ma, me, **kw), lambda: torch.testing.assert_close(ta, te, **kw))
    assert ma.tolist() == ta.tolist() or np.isnan(ta.numpy()).any()  # inputs left as they were


def test_containers_and_numbers_like_torch(device, torch):
    def both(a, e, **kw):
        def conv(lib, x):
            if isinstance(x, np.ndarray):
                return lib.tensor(x, device=device) if lib is mt else lib.tensor(x)
            if isinstance(x, dict):
                return {k: conv(lib, v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return type(x)(conv(lib, v) for v in x)
            return x
        _check_same_outcome(torch, lambda: assert_close(conv(mt, a), conv(mt, e), **kw),
                            lambda: torch.testing.assert_close(conv(torch, a), conv(torch, e), **kw))

    arr = np.array
    both(1.0, 1.1)
    both(1, 2)
    both(1.0, 1)
    both(1.0, 1.0 + 1e-9)
    both(NAN, NAN, equal_nan=True)
    both(True, False)
    both(None, None)
    both(None, 1)
    both([1.0, 2.0], [1.0, 2.1])
    both((1.0, arr(2.0)), (1.0, arr(3.0)))
    both({"a": arr(1.0)}, {"a": arr(2.0)})
    both({"a": 1, "b": 2}, {"a": 1, "c": 2})
    both([arr(1.0)], [arr(1.0), arr(1.0)])
    both([arr([1.0, 2.0])], [arr([1.0, 2.5])], msg=lambda m: "X" + m)
    both(arr([1.0]), arr([1.0]), rtol=1)
    both(arr([1.0]), arr([1.0]), atol=1)


def test_attribute_checks(device):
    x = mt.ones(2, 3, device=device)
    with pytest.raises(AssertionError, match=r"attribute 'stride\(\)' do not match: \(3, 1\) != \(1, 2\)"):
        assert_close(x, mt.ones(3, 2, device=device).t(), check_stride=True)
    assert_close(x, mt.ones(3, 2, device=device).t())
    if device == "cuda":
        with pytest.raises(AssertionError, match="attribute 'device' do not match: cuda:0 != cpu"):
            assert_close(x, x.cpu())
        assert_close(x, x.cpu(), check_device=False)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        assert_close(x, [[1.0] * 3] * 2)
    with pytest.raises(TypeError):
        assert_close("a", "a")
    # gradients are no reason to differ
    assert_close(x.clone().requires_grad_(), x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
def test_make_tensor(device, dtype):
    dt = getattr(mt, dtype)
    mt.manual_seed(0)
    t = make_tensor(200, 3, dtype=dt, device=device)
    assert t.shape == (200, 3) and t.dtype is dt and t.device.type == mt.device(device).type
    v = t.cpu().numpy()
    if dtype == "bool":
        assert v.any() and not v.all()
    elif dtype == "uint8":
        assert v.min() >= 0 and v.max() < 10
    elif dt.is_floating_point:
        assert -9 <= v.min() and v.max() < 9 and len(np.unique(v)) > 500
    else:
        assert v.min() >= -9 and v.max() < 10 and len(np.unique(v)) == 19
    if dtype != "bool":
        s = make_tensor((50,), dtype=dt, device=device, low=1, high=3, exclude_zero=True, noncontiguous=True)
        assert not s.is_contiguous() and (s.cpu().numpy() >= 1).all() and (s.cpu().numpy() < 3).all()
        z = make_tensor(1000, dtype=dt, device=device, low=0, high=2, exclude_zero=True)
        assert (z.cpu().numpy() != 0).all()
    if dt.is_floating_point:
        assert make_tensor(2, dtype=dt, device=device, requires_grad=True).requires_grad
    else:
        with pytest.raises(ValueError):
            make_tensor(2, dtype=dt, device=device, requires_grad=True)
    if dtype != "bool":  # booleans take no range
        with pytest.raises(ValueError, match="`low` must be less than or equal to `high`"):
            make_tensor(2, dtype=dt, device=device, low=3, high=1)
