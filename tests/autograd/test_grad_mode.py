"""Grad modes (default, no-grad, inference), as context managers and decorators, thread-local; and
the inference tensors that inference mode creates."""
import threading

import pytest
from helpers import assert_close

import minitorch_gpu as mt


def _leaf(values, device, requires_grad=True):
    return mt.tensor(values, device=device, requires_grad=requires_grad)


def test_default_mode_is_grad_mode(device):
    assert mt.is_grad_enabled()
    assert not mt.is_inference_mode_enabled()
    assert mt.autograd.is_grad_enabled is mt.is_grad_enabled


def test_no_grad_context_does_not_record(device):
    x = _leaf([1.0, 2.0], device)
    with mt.no_grad():
        assert not mt.is_grad_enabled()
        y = x * 2.0
    assert mt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    # the result is usable later in grad mode, as a constant
    z = (y * x).sum()
    z.backward()
    assert_close(x.grad, [2.0, 4.0])


def test_no_grad_allows_in_place_update_of_leaf(device):
    # the optimizer pattern: update parameters in place without autograd recording it
    w = _leaf([1.0, 2.0], device)
    (w * w).sum().backward()
    with mt.no_grad():
        w.add_(w.grad * -0.5)
    assert_close(w, [0.0, 0.0])
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_enable_grad_inside_no_grad(device):
    x = _leaf([1.0], device)
    with mt.no_grad():
        with mt.enable_grad():
            assert mt.is_grad_enabled()
            y = x * 2.0
        z = x * 2.0
    assert y.requires_grad and not z.requires_grad


def test_set_grad_enabled_function_and_context(device):
    x = _leaf([1.0], device)
    with mt.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
    assert mt.is_grad_enabled()
    mt.set_grad_enabled(False)
    try:
        assert not mt.is_grad_enabled()
        assert not (x * 2.0).requires_grad
    finally:
        mt.set_grad_enabled(True)
    assert (x * 2.0).requires_grad
    with pytest.raises(TypeError):
        mt.set_grad_enabled("no")


def test_modes_as_decorators(device):
    x = _leaf([1.0], device)

    @mt.no_grad()
    def f(t):
        return t * 2.0

    @mt.enable_grad()
    def g(t):
        return t * 2.0

    @mt.inference_mode()
    def h(t):
        return t * 2.0

    @mt.set_grad_enabled(False)
    def k(t):
        return t * 2.0

    assert mt.is_grad_enabled()
    assert not f(x).requires_grad
    with mt.no_grad():
        assert g(x).requires_grad
    assert h(x).is_inference()
    assert not k(x).requires_grad
    assert f.__name__ == "f"


def test_no_grad_decorates_generator_functions(device):
    x = _leaf([1.0], device)

    @mt.no_grad()
    def gen():
        for _ in range(2):
            yield (x * 2.0).requires_grad, mt.is_grad_enabled()

    assert list(gen()) == [(False, False), (False, False)]
    # between steps the caller's grad mode is intact
    it = gen()
    next(it)
    assert mt.is_grad_enabled()


def test_modes_restore_on_exception(device):
    with pytest.raises(ValueError):
        with mt.no_grad():
            raise ValueError
    assert mt.is_grad_enabled()
    with pytest.raises(ValueError):
        with mt.inference_mode():
            raise ValueError
    assert mt.is_grad_enabled() and not mt.is_inference_mode_enabled()


def test_grad_mode_is_thread_local(device):
    seen = {}
    ready = threading.Event()
    go = threading.Event()

    def worker():
        # a new thread starts in the default mode whatever the main thread is doing
        seen["start"] = mt.is_grad_enabled()
        x = _leaf([1.0], device)
        ready.set()
        go.wait()
        seen["recorded"] = (x * 2.0).requires_grad

    with mt.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        ready.wait()
        go.set()
        t.join()
        assert not mt.is_grad_enabled()
    assert seen == {"start": True, "recorded": True}


def test_inference_mode_state(device):
    with mt.inference_mode():
        assert mt.is_inference_mode_enabled()
        assert not mt.is_grad_enabled()
        with mt.inference_mode(False):
            assert not mt.is_inference_mode_enabled()
            assert mt.is_grad_enabled()
    with mt.inference_mode(False):
        assert not mt.is_inference_mode_enabled() and mt.is_grad_enabled()
    assert not mt.is_inference_mode_enabled()


def test_inference_tensors(device):
    x = _leaf([1.0, 2.0], device)
    with mt.inference_mode():
        a = mt.ones(2, device=device)
        y = x * 2.0
        v = x.view(2)
    assert a.is_inference() and y.is_inference()
    assert not y.requires_grad and y.grad_fn is None
    # a view of a normal tensor stays a normal tensor
    assert not v.is_inference()
    assert not x.is_inference()
    assert not (a * 1.0).is_inference()
    assert not a.clone().is_inference()
    assert a.detach().is_inference()


def test_inference_tensor_cannot_be_saved_for_backward(device, torch):
    w = _leaf([1.0, 2.0], device)
    with mt.inference_mode():
        a = mt.ones(2, device=device)
    # an op that does not save it may use it...
    s = a + w
    s.sum().backward()
    assert_close(w.grad, [1.0, 1.0])
    # ...one that saves it for backward may not, whichever side it is on
    for f in (lambda: a * w, lambda: w * a):
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward") as e:
            f()
        assert "make a clone" in str(e.value)
    tw = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        ta = torch.ones(2)
    ta + tw
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        ta * tw
    # the workaround
    (a.clone() * w).sum().backward()
    # no recording, no saving: fine
    with mt.no_grad():
        assert_close(a * w, [1.0, 2.0])


def test_in_place_on_inference_tensor_outside_inference_mode(device):
    with mt.inference_mode():
        a = mt.ones(2, device=device)
        a.mul_(2.0)  # inside: fine
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode") as e:
        a.mul_(2.0)
    assert "make a clone" in str(e.value)
    with mt.no_grad():
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            a.add_(1.0)
    assert_close(a, [2.0, 2.0])
    b = a.clone()
    b.mul_(2.0)
    assert_close(b, [4.0, 4.0])


def test_in_place_on_normal_tensor_inside_inference_mode(device):
    x = mt.ones(2, device=device)
    v0 = x._version
    with mt.inference_mode():
        x.add_(1.0)
    assert x._version == v0 + 1
    assert not x.is_inference()
    assert_close(x, [2.0, 2.0])


def test_requires_grad_on_inference_tensor(device):
    with mt.inference_mode():
        a = mt.ones(2, device=device)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        a.requires_grad_()


def test_view_made_in_inference_mode_cannot_be_modified_in_place_later(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 1.0
    with mt.inference_mode():
        v = y.view(2)
    with pytest.raises(RuntimeError, match="A view was created in inference mode and is being modified inplace"):
        v.mul_(2.0)
