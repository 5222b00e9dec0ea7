"""Anomaly detection: NaN produced in backward names the node and shows the forward stack that
created it; in-place version errors show where the write happened."""
import warnings

import numpy as np
import pytest

import minitorch_gpu as mt

# entering anomaly mode warns (as in PyTorch); checked once below, silenced elsewhere
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")


def _leaf(values, device):
    return mt.tensor(np.asarray(values, dtype=np.float32), device=device, requires_grad=True)


@pytest.mark.filterwarnings("default:Anomaly Detection has been enabled")
def test_entering_anomaly_mode_warns(device):
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with mt.autograd.detect_anomaly():
            pass


def test_anomaly_flags(device):
    assert not mt.autograd.is_anomaly_enabled()
    with mt.autograd.detect_anomaly():
        assert mt.autograd.is_anomaly_enabled()
    assert not mt.autograd.is_anomaly_enabled()
    with mt.autograd.set_detect_anomaly(True):
        assert mt.autograd.is_anomaly_enabled()
        with mt.autograd.set_detect_anomaly(False):
            assert not mt.autograd.is_anomaly_enabled()
        assert mt.autograd.is_anomaly_enabled()
    assert not mt.autograd.is_anomaly_enabled()
    mt.autograd.set_detect_anomaly(True)
    try:
        assert mt.autograd.is_anomaly_enabled()
    finally:
        mt.autograd.set_detect_anomaly(False)
    assert not mt.autograd.is_anomaly_enabled()


def _nan_backward(x):
    y = x.sqrt()      # the line anomaly mode must point at
    return (y * 0.0).sum()  # 0 * d/dx sqrt(x) at 0 = 0 * inf = nan


def test_nan_in_backward_raises_with_forward_stack(device):
    x = _leaf([0.0, 1.0], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mt.autograd.detect_anomaly():
            out = _nan_backward(x)
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output.") \
                    as e:
                out.backward()
    msg = str(e.value)
    assert "y = x.sqrt()" in msg
    assert "_nan_backward" in msg


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_error_also_warns_like_pytorch(device):
    x = _leaf([0.0, 1.0], device)
    with mt.autograd.detect_anomaly():
        out = _nan_backward(x)
        with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
            with pytest.raises(RuntimeError, match="returned nan values"):
                out.backward()


def test_without_anomaly_mode_nan_passes_silently(device):
    x = _leaf([0.0, 1.0], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _nan_backward(x).backward()
    assert np.isnan(x.grad.tolist()[0])


def test_check_nan_false_only_records_stacks(device):
    x = _leaf([0.0, 1.0], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mt.autograd.detect_anomaly(check_nan=False):
            _nan_backward(x).backward()
    assert np.isnan(x.grad.tolist()[0])


def test_detect_anomaly_as_decorator(device):
    @mt.autograd.detect_anomaly()
    def step(x):
        assert mt.autograd.is_anomaly_enabled()
        _nan_backward(x).backward()

    x = _leaf([0.0], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            step(x)
    assert not mt.autograd.is_anomaly_enabled()


def test_version_error_shows_where_the_in_place_write_happened(device):
    x = _leaf([1.0, 2.0], device)
    with mt.autograd.detect_anomaly():
        a = x * 2.0
        b = (a * a).sum()
        a.add_(1.0)  # the culprit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
                b.backward()
    msg = str(e.value)
    assert "The in-place operation that modified it was called here" in msg
    assert "a.add_(1.0)  # the culprit" in msg


def test_error_in_backward_warns_with_forward_trace(device):
    class Boom(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = _leaf([1.0], device)
    with mt.autograd.detect_anomaly():
        y = Boom.apply(x)  # recorded forward
        with pytest.warns(UserWarning, match="Error detected in BoomBackward") as rec:
            with pytest.raises(ValueError, match="boom"):
                y.sum().backward()
    assert any("y = Boom.apply(x)" in str(w.message) for w in rec)
