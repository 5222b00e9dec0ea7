"""gradcheck / gradgradcheck: they accept right gradients, reject wrong ones, and use PyTorch's
defaults (eps 1e-6, atol 1e-5, rtol 1e-3)."""
import inspect

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.autograd.gradcheck import GradcheckError

RNG = np.random.default_rng(7)


def _leaf(shape, device, requires_grad=True):
    return mt.tensor(RNG.uniform(0.5, 2.0, size=shape), device=device, requires_grad=requires_grad)


class WrongSquare(mt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.1 * x  # off by 5%


class DetachedSquare(mt.autograd.Function):
    """Right first derivative, but its backward hides x from the graph: the second derivative is wrong."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x.detach()


def test_defaults_match_pytorch():
    sig = inspect.signature(mt.autograd.gradcheck)
    assert sig.parameters["eps"].default == 1e-6
    assert sig.parameters["atol"].default == 1e-5
    assert sig.parameters["rtol"].default == 1e-3
    gsig = inspect.signature(mt.autograd.gradgradcheck)
    assert gsig.parameters["eps"].default == 1e-6
    assert gsig.parameters["atol"].default == 1e-5
    assert gsig.parameters["rtol"].default == 1e-3
    assert issubclass(GradcheckError, RuntimeError)


def test_gradcheck_core_ops(device):
    a = _leaf((2, 3), device)
    b = _leaf((3,), device)
    assert mt.autograd.gradcheck(lambda x, y: x * y + x, (a, b))
    assert mt.autograd.gradcheck(lambda x: x.sum(1), (a,))
    assert mt.autograd.gradcheck(lambda x: x.view(3, 2).expand(2, 3, 2) * 2.0, (a,))
    assert mt.autograd.gradcheck(lambda x, y: (x.exp() * y).pow(2) / (y + 1.0), (a, b))


def test_gradcheck_multiple_outputs_and_non_tensor_args(device):
    a = _leaf((3,), device)
    c = _leaf((3,), device, requires_grad=False)

    def f(x, k, const):
        return x * k, (x * const).sum()

    assert mt.autograd.gradcheck(f, (a, 3.0, c))


def test_gradcheck_rejects_wrong_gradient(device):
    a = _leaf((3,), device)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        mt.autograd.gradcheck(WrongSquare.apply, (a,))
    assert mt.autograd.gradcheck(WrongSquare.apply, (a,), raise_exception=False) is False
    # a loose enough tolerance accepts it
    assert mt.autograd.gradcheck(WrongSquare.apply, (a,), rtol=0.1)


def test_gradgradcheck(device):
    a = _leaf((2, 2), device)
    b = _leaf((2, 2), device)
    assert mt.autograd.gradgradcheck(lambda x, y: x * x * y, (a, b))
    assert mt.autograd.gradgradcheck(lambda x: (x * x).sum(), (a,))
    assert mt.autograd.gradgradcheck(lambda x: x.exp().sqrt() * x, (a,))
    g = mt.tensor(RNG.uniform(-1, 1, size=(2, 2)), device=device, requires_grad=True)
    assert mt.autograd.gradgradcheck(lambda x: x * x * x, (a,), (g,))


def test_gradgradcheck_rejects_wrong_second_derivative(device):
    a = _leaf((3,), device)
    assert mt.autograd.gradcheck(DetachedSquare.apply, (a,))
    with pytest.raises(GradcheckError):
        mt.autograd.gradgradcheck(DetachedSquare.apply, (a,))
    assert mt.autograd.gradgradcheck(DetachedSquare.apply, (a,), raise_exception=False) is False


def test_gradcheck_needs_an_input_that_requires_grad(device):
    a = _leaf((2,), device, requires_grad=False)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        mt.autograd.gradcheck(lambda x: x * 2.0, (a,))


def test_gradcheck_warns_for_single_precision(device):
    a = mt.tensor(np.array([1.0, 2.0], dtype=np.float32), device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision floating point"):
        mt.autograd.gradcheck(lambda x: x * 2.0, (a,), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_gradcheck_leaves_inputs_unchanged(device):
    a = _leaf((3,), device)
    before = a.tolist()
    mt.autograd.gradcheck(lambda x: x * x, (a,))
    assert a.tolist() == before
    assert a.grad is None
