"""Tensor.backward, autograd.backward and autograd.grad: arguments, errors, freeing of saved tensors,
and gradients of gradients."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt


def _leaf(values, device, requires_grad=True, dtype=mt.float32):
    arr = np.asarray(values, dtype=np.float64 if dtype is mt.float64 else np.float32)
    return mt.tensor(arr, device=device, requires_grad=requires_grad)


def test_backward_scalar_default_gradient(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    (x * x).sum().backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])


def test_backward_non_scalar_requires_gradient(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(mt.tensor([1.0, 0.5, 0.0], device=device))
    assert_close(x.grad, [2.0, 1.0, 0.0])


def test_backward_gradient_checks(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(mt.ones(2, device=device))
    with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
        y.backward([1.0, 1.0, 1.0])
    # a gradient of another dtype is cast to the output's, as in PyTorch
    y.backward(mt.ones(3, dtype=mt.float64, device=device))
    assert x.grad.dtype is mt.float32
    assert_close(x.grad, [2.0, 2.0, 2.0])


def test_backward_on_tensor_without_grad(device):
    x = _leaf([1.0, 2.0], device, requires_grad=False)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        x.sum().backward()


def test_backward_of_a_leaf_itself(device):
    x = _leaf([1.0, 2.0], device)
    x.backward(mt.tensor([3.0, 4.0], device=device))
    assert_close(x.grad, [3.0, 4.0])


def test_saved_tensors_are_freed_after_backward(device):
    x = _leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time") as e:
        y.backward()
    assert "retain_graph=True" in str(e.value)
    # the saved tensors themselves are gone too
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.grad_fn.next_functions[0][0].saved_tensors


def test_retain_graph_allows_second_backward(device):
    x = _leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, [4.0, 8.0])


def test_graph_without_saved_tensors_can_run_twice(device, torch):
    # nothing was saved, so nothing was freed: PyTorch allows this as well
    x = _leaf([1.0, 2.0], device)
    y = (x + 1.0).sum()
    y.backward()
    y.backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = (tx + 1.0).sum()
    ty.backward()
    ty.backward()
    assert_close(x.grad, tx.grad.numpy())


def test_backward_inputs_restricts_accumulation(device):
    a = _leaf([1.0, 2.0], device)
    b = _leaf([3.0, 4.0], device)
    y = (a * b).sum()
    y.backward(inputs=[a])
    assert_close(a.grad, [3.0, 4.0])
    assert b.grad is None
    y2 = (a * b).sum()
    y2.backward(inputs=b)
    assert_close(b.grad, [1.0, 2.0])
    assert_close(a.grad, [3.0, 4.0])
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
        (a * b).sum().backward(inputs=[])


def test_backward_inputs_non_leaf_fills_grad(device, torch):
    a = _leaf([1.0, 2.0], device)
    h = a * 3.0
    (h * h).sum().backward(inputs=[h])
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    th = ta * 3.0
    (th * th).sum().backward(inputs=[th])
    assert_close(h.grad, th.grad.numpy())
    assert a.grad is None and ta.grad is None


def test_autograd_backward_multiple_roots(device):
    x = _leaf([1.0, 2.0], device)
    y1 = x * 2.0
    y2 = (x * x).sum()
    mt.autograd.backward([y1, y2], [mt.tensor([1.0, 1.0], device=device), None])
    assert_close(x.grad, [2.0 + 2.0, 2.0 + 4.0])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        mt.autograd.backward([x * 2.0, x * 3.0], [mt.ones(2, device=device)])
    with pytest.warns(FutureWarning, match="'grad_variables' is deprecated"):
        mt.autograd.backward(x * 2.0, grad_variables=mt.ones(2, device=device))
    assert_close(x.grad, [6.0, 8.0])


def test_grad_returns_without_touching_dot_grad(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    w = _leaf([0.5, 0.5, 0.5], device)
    y = (x * x * w).sum()
    gx, gw = mt.autograd.grad(y, [x, w])
    assert_close(gx, [1.0, 2.0, 3.0])
    assert_close(gw, [1.0, 4.0, 9.0])
    assert x.grad is None and w.grad is None
    assert isinstance(mt.autograd.grad((x * 2.0).sum(), x), tuple)


def test_grad_with_grad_outputs(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 3.0
    (g,) = mt.autograd.grad(y, x, grad_outputs=mt.tensor([1.0, 2.0], device=device))
    assert_close(g, [3.0, 6.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        mt.autograd.grad(x * 3.0, x)


def test_grad_allow_unused(device):
    x = _leaf([1.0, 2.0], device)
    unused = _leaf([1.0], device)
    y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        mt.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = mt.autograd.grad(y, [x, unused], allow_unused=True, retain_graph=True)
    assert_close(gx, [2.0, 2.0])
    assert gu is None
    gx, gu = mt.autograd.grad(y, [x, unused], materialize_grads=True)
    assert_close(gu, [0.0])
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        mt.autograd.grad((x * 2.0).sum(), [_leaf([1.0], device, requires_grad=False)])
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty"):
        mt.autograd.grad((x * 2.0).sum(), [])


def test_grad_of_intermediate(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 3.0
    y = (h * h).sum()
    (gh,) = mt.autograd.grad(y, h)
    assert_close(gh, [6.0, 12.0])
    assert h.grad is None and x.grad is None


def test_grad_only_runs_needed_nodes(device):
    a = _leaf([1.0], device)
    b = _leaf([2.0], device)
    ran = []
    pa = a * 2.0
    pb = b * 3.0
    pb.grad_fn.register_prehook(lambda g: ran.append("b"))
    pa.grad_fn.register_prehook(lambda g: ran.append("a"))
    mt.autograd.grad((pa + pb).sum(), a)
    assert ran == ["a"]


def test_grad_retain_graph_defaults_to_create_graph(device):
    x = _leaf([1.0, 2.0], device)
    y = (x * x * x).sum()
    (g,) = mt.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    # the graph was kept: a second grad through y works
    (g2,) = mt.autograd.grad(y, x)
    assert_close(g2, [3.0, 12.0])


def test_second_derivative(device, torch):
    x = _leaf([0.5, -1.0, 2.0], device, dtype=mt.float64)
    y = (x * x * x).sum()
    (g,) = mt.autograd.grad(y, x, create_graph=True)
    assert_close(g, 3 * np.array([0.5, -1.0, 2.0]) ** 2)
    (gg,) = mt.autograd.grad(g.sum(), x)
    assert_close(gg, 6 * np.array([0.5, -1.0, 2.0]))
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((tx * tx * tx).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    assert_close(gg, tgg.numpy())


def test_third_derivative_through_backward(device):
    x = _leaf([1.5], device, dtype=mt.float64)
    y = x * x * x * x  # 4x^3, 12x^2, 24x
    y.backward(create_graph=True)
    g1 = x.grad
    assert g1.requires_grad
    assert_close(g1, [4 * 1.5 ** 3])
    x.grad = None
    g1.backward(create_graph=True)
    assert_close(x.grad, [12 * 1.5 ** 2])
    (g3,) = mt.autograd.grad(x.grad, x)
    assert_close(g3, [24 * 1.5])


def test_higher_order_core_ops(device, torch):
    vals = [0.3, -0.7, 1.2]

    def f(lib, x):
        return (((x * x).exp() + x.sin()) * x).pow(2) / (x.abs() + 1.0) + x.sqrt()

    def second(lib, x):
        y = f(lib, x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return gg

    x = _leaf([abs(v) for v in vals], device, dtype=mt.float64)
    tx = torch.tensor([abs(v) for v in vals], dtype=torch.float64, requires_grad=True)
    assert_close(second(mt, x), second(torch, tx).numpy(), rtol=1e-7)


def test_create_graph_grad_accumulates_with_history(device):
    x = _leaf([2.0], device, dtype=mt.float64)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    (x * x).sum().backward(create_graph=True)
    assert_close(x.grad, [8.0])
    (gg,) = mt.autograd.grad(x.grad.sum(), x)
    assert_close(gg, [4.0])


def test_create_graph_gradients_of_two_leaves_are_not_shared(device, torch):
    # AddBackward hands one gradient tensor to both inputs; each leaf must get its own .grad
    a = _leaf([1.0, 2.0], device)
    b = _leaf([3.0, 4.0], device)
    (a + b).sum().backward(create_graph=True)
    assert a.grad is not b.grad
    with mt.no_grad():
        a.grad.mul_(5.0)
    assert_close(b.grad, [1.0, 1.0])
