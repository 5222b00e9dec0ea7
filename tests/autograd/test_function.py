"""User-defined ``mt.autograd.Function``: forward/backward with ctx, saved tensors, needs_input_grad,
mark_dirty, mark_non_differentiable, set_materialize_grads, setup_context, once_differentiable."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt


def _leaf(values, device, requires_grad=True, dtype=np.float64):
    return mt.tensor(np.asarray(values, dtype=dtype), device=device, requires_grad=requires_grad)


class Cube(mt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


class ScaledMul(mt.autograd.Function):
    """x * y * scale: a non-tensor argument, and needs_input_grad per input."""

    @staticmethod
    def forward(ctx, x, y, scale):
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        ctx.seen_needs = ctx.needs_input_grad
        return x * y * scale

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y * ctx.scale if ctx.needs_input_grad[0] else None
        gy = g * x * ctx.scale if ctx.needs_input_grad[1] else None
        return gx, gy, None


def test_custom_function_forward_backward(device):
    x = _leaf([1.0, -2.0, 0.5], device)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    assert_close(y, np.array([1.0, -8.0, 0.125]))
    y.sum().backward()
    assert_close(x.grad, 3 * np.array([1.0, -2.0, 0.5]) ** 2)


def test_forward_runs_without_recording(device):
    seen = {}

    class Probe(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen["grad_enabled"] = mt.is_grad_enabled()
            y = x * 2.0
            seen["inner_requires_grad"] = y.requires_grad
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    x = _leaf([1.0], device)
    y = Probe.apply(x)
    assert seen == {"grad_enabled": False, "inner_requires_grad": False}
    assert y.grad_fn.name() == "ProbeBackward"


def test_needs_input_grad_and_non_tensor_args(device):
    x = _leaf([1.0, 2.0], device)
    y = _leaf([3.0, 4.0], device, requires_grad=False)
    out = ScaledMul.apply(x, y, 2.0)
    assert out.grad_fn.needs_input_grad == (True, False, False)
    out.sum().backward()
    assert_close(x.grad, [6.0, 8.0])
    assert y.grad is None
    with mt.no_grad():
        r = ScaledMul.apply(x, y, 2.0)
    assert not r.requires_grad


def test_gradcheck_and_gradgradcheck_custom_function(device):
    x = _leaf([0.3, -1.1, 2.0], device)
    y = _leaf([1.5, 0.2, -0.7], device)
    assert mt.autograd.gradcheck(lambda a, b: ScaledMul.apply(a, b, 1.5), (x, y))
    assert mt.autograd.gradgradcheck(Cube.apply, (x,))


def test_saved_output_is_checked_and_unpacked(device):
    class Exp(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = _leaf([0.0, 1.0], device)
    y = Exp.apply(x)
    y.sum().backward(retain_graph=True)
    assert_close(x.grad, np.exp([0.0, 1.0]))
    y2 = Exp.apply(x)
    y2.mul_(2.0)
    with pytest.raises(RuntimeError, match="output 0 of ExpBackward, is at version 1; expected version 0"):
        y2.sum().backward()
    # double backward through a saved output
    x.grad = None
    y3 = Exp.apply(x)
    (g,) = mt.autograd.grad(y3.sum(), x, create_graph=True)
    (gg,) = mt.autograd.grad(g.sum(), x)
    assert_close(gg, np.exp([0.0, 1.0]))


def test_saved_tensors_freed(device):
    x = _leaf([1.0], device)
    y = Cube.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()
    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        class Bad(mt.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 1.0

            @staticmethod
            def backward(ctx, g):
                return g

        Bad.apply(x)


def test_mark_dirty_in_place_function(device, torch):
    def make(lib):
        class MulTwo_(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2.0)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2.0
        return MulTwo_

    ours, theirs = make(mt), make(torch)
    x = _leaf([1.0, 2.0], device)
    a = x * 3.0
    v0 = a._version
    out = ours.apply(a)
    # one bump for the write, one for mark_dirty, as in PyTorch
    assert out is a and a._version == v0 + 2
    assert a.grad_fn.name() == "MulTwo_Backward"
    (a * a).sum().backward()
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ta = tx * 3.0
    theirs.apply(ta)
    (ta * ta).sum().backward()
    assert_close(x.grad, tx.grad.numpy())
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place operation"):
        ours.apply(_leaf([1.0], device))
    # a dirty view of a non-leaf: the base's history is rewritten, as for built-in in-place ops
    x2 = _leaf([1.0, 2.0, 3.0], device)
    b = x2 * 1.0
    ours.apply(b.narrow(0, 0, 2))
    assert b.grad_fn.name() == "CopySlices"
    (b * b).sum().backward()
    tx2 = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tb = tx2 * 1.0
    theirs.apply(tb.narrow(0, 0, 2))
    (tb * tb).sum().backward()
    assert_close(b, tb.detach().numpy())
    assert_close(x2.grad, tx2.grad.numpy())


def test_mark_non_differentiable(device):
    class MaxWithMask(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            m = x * 1.0
            mask = x * 0.0
            ctx.mark_non_differentiable(mask)
            return m, mask

        @staticmethod
        def backward(ctx, gm, gmask):
            # a non-differentiable output still gets a (zero) gradient slot
            assert float(gmask.abs().sum()) == 0.0
            return gm

    x = _leaf([1.0, 2.0], device)
    m, mask = MaxWithMask.apply(x)
    assert m.requires_grad and not mask.requires_grad
    (m * 2.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0])


def test_materialize_grads(device):
    received = {}

    def make(materialize):
        class Two(mt.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 1.0, x * 2.0

            @staticmethod
            def backward(ctx, g1, g2):
                received[materialize] = (g1 is None, g2 is None)
                out = g1 if g1 is not None else None
                if g2 is not None:
                    out = g2 * 2.0 if out is None else out + g2 * 2.0
                return out
        return Two

    for flag in (True, False):
        x = _leaf([1.0, 2.0], device)
        a, b = make(flag).apply(x)
        a.sum().backward()  # b is unused: its gradient is undefined
        assert_close(x.grad, [1.0, 1.0])
    assert received[True] == (False, False)
    assert received[False] == (False, True)


def test_setup_context_style(device):
    class Square(mt.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 * x * ctx.k, None

    x = _leaf([1.0, 3.0], device)
    y = Square.apply(x, 0.5)
    assert_close(y, [0.5, 4.5])
    y.sum().backward()
    assert_close(x.grad, [1.0, 3.0])


def test_once_differentiable(device):
    class Sq(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @mt.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not mt.is_grad_enabled()
            return g * 2.0 * x

    assert mt.autograd.once_differentiable is mt.autograd.function.once_differentiable
    x = _leaf([1.0, 2.0], device)
    Sq.apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0])
    # with create_graph the result takes part in the graph only when the incoming gradient does
    (g,) = mt.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    assert_close(g, [2.0, 4.0])
    assert not g.requires_grad
    v = _leaf([1.0, 1.0], device)
    (g,) = mt.autograd.grad(Sq.apply(x), x, grad_outputs=v, create_graph=True)
    assert_close(g, [2.0, 4.0])
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()


def test_returning_an_input_unchanged(device):
    class Identity(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5.0

    x = _leaf([1.0, 2.0], device)
    h = x * 1.0
    y = Identity.apply(h)
    # the result is a new tensor sharing memory, with this node as history; h keeps its own
    assert y is not h and y.data_ptr() == h.data_ptr()
    assert y.grad_fn.name() == "IdentityBackward" and h.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    assert_close(x.grad, [5.0, 5.0])


def test_wrong_number_or_shape_of_gradients(device):
    class TooFew(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    class BadShape(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return mt.ones(5, dtype=mt.float64, device=g.device)

    class Broadcast(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 1.0).expand(3, 2)

        @staticmethod
        def backward(ctx, g):
            return g  # (3, 2): summed back to (1, 2) like PyTorch's validate_outputs

    x = _leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients \\(expected 2, got 1\\)"):
        TooFew.apply(x, x).sum().backward()
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got \\[5\\] but expected shape "
                                           "compatible with \\[2\\]"):
        BadShape.apply(x).sum().backward()
    x2 = _leaf([[1.0, 2.0]], device)
    Broadcast.apply(x2).sum().backward()
    assert_close(x2.grad, [[3.0, 3.0]])


def test_legacy_function_instance_rejected(device):
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        Cube()


def test_backward_cls_and_ctx_attributes(device):
    assert issubclass(Cube._backward_cls, mt.autograd.graph.Node)
    x = _leaf([2.0], device)
    y = ScaledMul.apply(x, x, 3.0)
    assert y.grad_fn.scale == 3.0
    assert y.grad_fn.seen_needs == (True, True, False)
    assert isinstance(y.grad_fn, mt.autograd.FunctionCtx)
