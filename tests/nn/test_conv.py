"""Convolutions: F.conv1d/2d/3d, transposed convolutions and unfold/fold against PyTorch (forward and the
gradients of input, weight and bias) over strides, paddings ('same'/'valid' too), dilations, groups, odd
sizes and unbatched inputs; gradcheck / gradgradcheck in float64; PyTorch's error messages; the Conv and
ConvTranspose layers with copied weights, their default initialisation, padding modes and reprs."""
import math
import re

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from minitorch_gpu.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _compare(torch, device, fn_name, arrays, kwargs, dtype=np.float64, rtol=1e-7, atol=1e-9):
    """Run ``F.<fn_name>`` here and in PyTorch on the same data; compare outputs and every gradient."""
    ours = [None if a is None else mt.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays]
    theirs = [None if a is None else torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out = getattr(F, fn_name)(*ours, **kwargs)
    ref = getattr(torch.nn.functional, fn_name)(*theirs, **kwargs)
    assert out.dtype == getattr(mt, str(ref.dtype).split(".")[1])
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    g = _arr(*ref.shape, dtype=dtype)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for o, t in zip(ours, theirs):
        if o is not None:
            assert o.grad.dtype == o.dtype
            assert_close(o.grad, t.grad.numpy(), rtol=rtol, atol=atol)


CONV2D_CASES = [
    # (input shape, weight shape, kwargs)
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=2, padding=1)),
    ((1, 4, 9, 8), (6, 2, 3, 3), dict(groups=2, stride=(2, 1), padding=(1, 2), dilation=(2, 1))),
    ((2, 6, 5, 7), (6, 1, 3, 3), dict(groups=6, padding=1)),  # depthwise
    ((2, 3, 6, 6), (5, 3, 4, 3), dict(padding="same")),  # even kernel: asymmetric 'same' padding
    ((2, 3, 8, 6), (5, 3, 3, 3), dict(padding="same", dilation=2)),
    ((2, 3, 6, 5), (5, 3, 2, 2), dict(padding="valid", stride=3)),
    ((2, 5, 4, 4), (3, 5, 1, 1), {}),  # 1x1 fast path
    ((2, 5, 6, 6), (3, 5, 1, 1), dict(stride=2)),
    ((3, 7, 5), (4, 3, 3, 3), dict(padding=1)),  # unbatched
    ((0, 3, 5, 5), (4, 3, 3, 3), {}),  # empty batch
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("case", range(len(CONV2D_CASES)))
def test_conv2d_matches_torch(case, device, torch):
    xs, ws, kw = CONV2D_CASES[case]
    b = _arr(ws[0]) if case % 3 else None  # every third case without a bias
    _compare(torch, device, "conv2d", [_arr(*xs), _arr(*ws), b], kw)


def test_conv2d_float32_stays_float32(device, torch):
    xs, ws = (2, 4, 9, 9), (6, 2, 3, 3)
    _compare(torch, device, "conv2d", [_arr(*xs), _arr(*ws), _arr(6)], dict(groups=2, padding=1, stride=2),
             dtype=np.float32, rtol=1e-4, atol=1e-5)


# shapes that take each of the CPU backend's convolution paths in float32: the direct loops (few columns per
# output or wide rows; a row's vector tail; padding wider than the kernel), im2col + product over several chunks
# of samples (the chunk budget made tiny), 1-d through the 2-d loops; transposed convolutions through both
CPU_PATH_CASES = [
    ("conv2d", (2, 3, 5, 37), (4, 3, 3, 3), dict(padding=1, dilation=(1, 2))),
    ("conv2d", (2, 2, 5, 6), (3, 2, 3, 3), dict(padding=3)),
    ("conv2d", (3, 20, 7, 40), (9, 20, 3, 3), dict(padding=1)),
    ("conv2d", (5, 40, 6, 6), (8, 20, 3, 3), dict(padding=1, groups=2, stride=2)),
    ("conv1d", (2, 4, 33), (6, 2, 5), dict(padding=4, groups=2)),
    ("conv3d", (3, 4, 4, 5, 3), (6, 4, 3, 3, 2), dict(padding=1)),
    ("conv_transpose2d", (3, 6, 5, 7), (6, 4, 3, 3), dict(padding=1)),
    ("conv_transpose2d", (3, 6, 5, 7), (6, 2, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
]


@pytest.mark.parametrize("case", range(len(CPU_PATH_CASES)))
def test_conv_cpu_paths_match_torch(case, device, torch, monkeypatch):
    from minitorch_gpu.backends import _cnn_cpu
    monkeypatch.setattr(_cnn_cpu, "_COLS_BYTES", 4096)
    monkeypatch.setattr(_cnn_cpu, "_MIN_WIDTH", 1)
    name, xs, ws, kw = CPU_PATH_CASES[case]
    out_c = ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]
    _compare(torch, device, name, [_arr(*xs), _arr(*ws), _arr(out_c)], kw, dtype=np.float32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 9), (4, 3, 3), {}),
    ((2, 4, 10), (6, 2, 4), dict(stride=3, padding=2, dilation=2, groups=2)),
    ((2, 3, 8), (4, 3, 4), dict(padding="same")),
    ((3, 9), (5, 3, 2), dict(stride=2)),
])
def test_conv1d_matches_torch(xs, ws, kw, device, torch):
    _compare(torch, device, "conv1d", [_arr(*xs), _arr(*ws), _arr(ws[0])], kw)


@pytest.mark.parametrize("kw", [{}, dict(stride=(1, 2, 2), padding=1, groups=2), dict(padding="same", dilation=2)])
def test_conv3d_matches_torch(kw, device, torch):
    _compare(torch, device, "conv3d", [_arr(2, 4, 5, 6, 5), _arr(4, 4 // kw.get("groups", 1), 2, 3, 3), _arr(4)],
             kw)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 5, 4), (3, 4, 3, 3), {}),
    ((2, 4, 5, 4), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ((1, 3, 4, 5), (3, 2, 2, 3), dict(stride=(1, 3), dilation=(2, 1), output_padding=(1, 0))),
    ((3, 4, 4), (3, 2, 3, 3), dict(stride=2)),  # unbatched
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose2d_matches_torch(xs, ws, kw, bias, device, torch):
    b = _arr(ws[1] * kw.get("groups", 1)) if bias else None
    _compare(torch, device, "conv_transpose2d", [_arr(*xs), _arr(*ws), b], kw)


def test_conv_transpose1d_and_3d_match_torch(device, torch):
    _compare(torch, device, "conv_transpose1d", [_arr(2, 4, 6), _arr(4, 3, 3), _arr(6)],
             dict(stride=2, padding=1, output_padding=1, groups=2))
    _compare(torch, device, "conv_transpose3d", [_arr(1, 2, 3, 3, 2), _arr(2, 3, 2, 2, 2), _arr(3)],
             dict(stride=2))


def test_conv_is_inverse_of_transpose_in_the_adjoint_sense(device):
    # <conv(x, w), y> == <x, conv_transpose(y, w)>: the transposed convolution is conv's adjoint
    x = mt.tensor(_arr(2, 3, 7, 6), device=device)
    w = mt.tensor(_arr(4, 3, 3, 2), device=device)
    y = F.conv2d(x, w, stride=2, padding=1)
    z = mt.tensor(_arr(*y.shape), device=device)
    back = F.conv_transpose2d(z, w, stride=2, padding=1)
    assert back.shape == x.shape
    assert float((y * z).sum()) == pytest.approx(float((x * back).sum()), rel=1e-10)


def test_conv2d_gradcheck_and_gradgradcheck(device):
    x = mt.tensor(_arr(2, 4, 5, 4), device=device, requires_grad=True)
    w = mt.tensor(_arr(6, 2, 3, 2), device=device, requires_grad=True)
    b = mt.tensor(_arr(6), device=device, requires_grad=True)

    def fn(a, c, d):
        return F.conv2d(a, c, d, stride=(1, 2), padding=(1, 0), dilation=(1, 2), groups=2)

    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_conv1d_and_same_padding_gradcheck(device):
    x = mt.tensor(_arr(2, 2, 7), device=device, requires_grad=True)
    w = mt.tensor(_arr(3, 2, 4), device=device, requires_grad=True)
    b = mt.tensor(_arr(3), device=device, requires_grad=True)
    assert gradcheck(lambda a, c, d: F.conv1d(a, c, d, stride=2, padding=2), (x, w, b))
    assert gradcheck(lambda a, c, d: F.conv1d(a, c, d, padding="same"), (x, w, b))
    assert gradgradcheck(lambda a, c, d: F.conv1d(a, c, d, padding="same"), (x, w, b))


def test_conv_transpose_gradcheck(device):
    x = mt.tensor(_arr(1, 2, 3, 3), device=device, requires_grad=True)
    w = mt.tensor(_arr(2, 2, 2, 3), device=device, requires_grad=True)
    b = mt.tensor(_arr(2), device=device, requires_grad=True)
    fn = lambda a, c, d: F.conv_transpose2d(a, c, d, stride=2, padding=1, output_padding=1)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_conv2d_integer_inputs(device, torch):
    x = RNG.integers(-5, 5, (2, 3, 5, 5))
    w = RNG.integers(-3, 3, (4, 3, 3, 3))
    out = F.conv2d(mt.tensor(x, device=device), mt.tensor(w, device=device), padding=1)
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    assert out.dtype == mt.int64
    np.testing.assert_array_equal(to_np(out), ref.numpy())


def test_conv_grad_fn_and_needs_only_requested_grads(device):
    x = mt.tensor(_arr(1, 2, 4, 4), device=device)
    w = mt.tensor(_arr(3, 2, 3, 3), device=device, requires_grad=True)
    out = F.conv2d(x, w)
    assert type(out.grad_fn).__name__ == "ConvolutionBackward0"
    out.sum().backward()
    assert x.grad is None and w.grad is not None
    with mt.no_grad():
        assert F.conv2d(x, w).grad_fn is None


# ---------------------------------------------------------------------------------------------- errors

def _sorted_sets(msg):
    """The message with the items of every ``{...}`` sorted: a set's order differs between processes."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", msg)


def _same_error(torch, ours, theirs, exc=RuntimeError):
    with pytest.raises(exc) as a:
        ours()
    with pytest.raises(exc) as b:
        theirs()
    assert _sorted_sets(str(a.value)) == _sorted_sets(str(b.value).replace("torch.", "minitorch_gpu."))


CONV_ERRORS = [
    ((2, 4, 10, 10), (8, 3, 3, 3), None, {}),
    ((2, 3), (8, 3, 3, 3), None, {}),
    ((2, 3, 2, 2), (8, 3, 3, 3), None, {}),
    ((2, 3, 2, 5), (8, 3, 3, 3), None, dict(dilation=2)),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(stride=0)),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(padding=(1, -1))),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(dilation=0)),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(groups=0)),
    ((2, 6, 5, 5), (4, 3, 3, 3), None, dict(groups=3)),
    ((2, 6, 5, 5), (4, 3, 3, 3), None, dict(groups=4)),
    ((2, 3, 5, 5), (0, 3, 3, 3), None, {}),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(padding="same", stride=2)),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(padding="foo")),
    ((2, 3, 5, 5), (8, 3, 3, 3), (7,), {}),
    ((2, 3, 5, 5), (8, 3, 3, 3), (8, 1), {}),
    ((2, 3, 5, 5), (8, 3, 3, 3, 3), None, {}),
    ((2, 3, 5, 5), (8, 3, 3, 3), None, dict(stride=(1, 1, 1))),
]


@pytest.mark.parametrize("xs,ws,bs,kw", CONV_ERRORS)
def test_conv2d_errors_match_torch(xs, ws, bs, kw, torch):
    x, w = _arr(*xs, dtype=np.float32), _arr(*ws, dtype=np.float32)
    b = None if bs is None else _arr(*bs, dtype=np.float32)
    tb = None if b is None else torch.tensor(b)
    mb = None if b is None else mt.tensor(b)
    _same_error(torch, lambda: F.conv2d(mt.tensor(x), mt.tensor(w), mb, **kw),
                lambda: torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), tb, **kw))


def test_conv_error_leaves_inputs_unchanged():
    x = mt.ones(2, 4, 5, 5)
    w = mt.ones(8, 3, 3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"expected input\[2, 4, 5, 5\] to have 3 channels"):
        F.conv2d(x, w)
    assert x.shape == (2, 4, 5, 5) and w.grad is None and x._version == 0


def test_conv_dtype_and_dim_errors(torch):
    _same_error(torch, lambda: F.conv1d(mt.ones(2, 3, 5, 5), mt.ones(8, 3, 3)),
                lambda: torch.nn.functional.conv1d(torch.ones(2, 3, 5, 5), torch.ones(8, 3, 3)))
    _same_error(torch, lambda: F.conv2d(mt.ones(2, 3, 5, 5), mt.ones(8, 3, 3, 3), mt.ones(8, dtype=mt.float64)),
                lambda: torch.nn.functional.conv2d(torch.ones(2, 3, 5, 5), torch.ones(8, 3, 3, 3),
                                                   torch.ones(8, dtype=torch.float64)))
    # PyTorch goes on about MKLDNN tensors, which do not exist here
    with pytest.raises(RuntimeError, match=r"^Input type \(minitorch_gpu.FloatTensor\) and weight type "
                                           r"\(minitorch_gpu.DoubleTensor\) should be the same"):
        F.conv2d(mt.ones(2, 3, 5, 5), mt.ones(8, 3, 3, 3, dtype=mt.float64))
    with pytest.raises(TypeError):
        F.conv2d(mt.ones(2, 3, 5, 5), mt.ones(8, 3, 3, 3), stride=1.5)
    with pytest.raises(TypeError):
        F.conv2d(mt.ones(2, 3, 5, 5), 3)


def test_conv_transpose_errors_match_torch(torch):
    tf = torch.nn.functional
    _same_error(torch, lambda: F.conv_transpose2d(mt.ones(2, 3, 5, 5), mt.ones(3, 4, 3, 3), stride=2,
                                                  output_padding=2),
                lambda: tf.conv_transpose2d(torch.ones(2, 3, 5, 5), torch.ones(3, 4, 3, 3), stride=2, output_padding=2))
    _same_error(torch, lambda: F.conv_transpose2d(mt.ones(2, 4, 5, 5), mt.ones(3, 4, 3, 3)),
                lambda: tf.conv_transpose2d(torch.ones(2, 4, 5, 5), torch.ones(3, 4, 3, 3)))
    _same_error(torch, lambda: F.conv_transpose2d(mt.ones(2, 3, 5, 5), mt.ones(3, 4, 3, 3), mt.ones(3)),
                lambda: tf.conv_transpose2d(torch.ones(2, 3, 5, 5), torch.ones(3, 4, 3, 3), torch.ones(3)))
    with pytest.raises(TypeError):
        F.conv_transpose2d(mt.ones(2, 3, 5, 5), mt.ones(3, 4, 3, 3), padding="same")


# ----------------------------------------------------------------------------------------- unfold / fold

@pytest.mark.parametrize("kw", [dict(kernel_size=2),
                                dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))])
def test_unfold_fold_match_torch(kw, device, torch):
    _compare(torch, device, "unfold", [_arr(2, 3, 6, 7)], kw)
    _compare(torch, device, "unfold", [_arr(3, 6, 7)], kw)
    blocks = torch.nn.functional.unfold(torch.zeros(1, 1, 6, 7), **kw).shape
    _compare(torch, device, "fold", [_arr(2, 3 * blocks[1], blocks[2])], dict(output_size=(6, 7), **kw))


def test_unfold_fold_gradcheck(device):
    x = mt.tensor(_arr(1, 2, 4, 5), device=device, requires_grad=True)
    assert gradcheck(lambda a: F.unfold(a, (2, 3), padding=1, stride=(2, 1)), (x,))
    c = mt.tensor(_arr(1, 4, 6), device=device, requires_grad=True)
    assert gradcheck(lambda a: F.fold(a, (3, 4), 2), (c,))
    assert gradgradcheck(lambda a: F.fold(a, (3, 4), 2) ** 2, (c,))


@pytest.mark.parametrize("call", [
    lambda f, t: f.unfold(t(2, 3, 5, 5), 6),
    lambda f, t: f.unfold(t(2, 3, 5, 5), 2, padding=-1),
    lambda f, t: f.unfold(t(2, 3, 5, 5), 0),
    lambda f, t: f.fold(t(2, 12, 15), (5, 5), 2),
    lambda f, t: f.fold(t(2, 13, 16), (5, 5), 2),
])
def test_unfold_fold_errors_match_torch(call, torch):
    _same_error(torch, lambda: call(F, mt.ones), lambda: call(torch.nn.functional, torch.ones))


# ---------------------------------------------------------------------------------------------- layers

def _copy_params(ours, theirs, device):
    ours.load_state_dict({k: mt.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours.to(device)


def _compare_layer(torch, ours, theirs, x, device, rtol=1e-4, atol=1e-5, **call_kw):
    _copy_params(ours, theirs, device)
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out, ref = ours(xm, **call_kw), theirs(xt, **call_kw)
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    g = _arr(*ref.shape, dtype=x.dtype)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    assert_close(xm.grad, xt.grad.numpy(), rtol=rtol, atol=atol)
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, theirs_params[name].grad.numpy(), rtol=rtol, atol=atol)


LAYER_CASES = [
    ("Conv1d", (3, 6, 3), dict(stride=2, padding=1, groups=3), (2, 3, 11)),
    ("Conv2d", (3, 4, 3), {}, (2, 3, 7, 8)),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2, bias=False),
     (2, 4, 9, 7)),
    ("Conv2d", (3, 5, 4), dict(padding="same"), (2, 3, 6, 5)),
    ("Conv2d", (3, 5, 3), dict(padding="same", padding_mode="reflect"), (2, 3, 6, 5)),
    ("Conv2d", (3, 5, 3), dict(padding=2, padding_mode="circular", stride=2), (2, 3, 6, 5)),
    ("Conv2d", (3, 5, 3), dict(padding=(1, 2), padding_mode="replicate"), (3, 6, 5)),
    ("Conv3d", (2, 3, 2), dict(padding=1), (1, 2, 3, 4, 3)),
    ("ConvTranspose1d", (4, 2, 3), dict(stride=2, groups=2), (2, 4, 5)),
    ("ConvTranspose2d", (3, 4, 3), dict(stride=2, padding=1, output_padding=1), (2, 3, 4, 5)),
    ("ConvTranspose3d", (2, 2, 2), dict(stride=2, bias=False), (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("name,args,kw,xs", LAYER_CASES)
def test_conv_layers_match_torch(name, args, kw, xs, device, torch):
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _compare_layer(torch, ours, theirs, _arr(*xs, dtype=np.float32), device)


def test_conv_layers_in_float64(device, torch):
    ours = nn.Conv2d(3, 4, 3, padding=1, dtype=mt.float64)
    theirs = torch.nn.Conv2d(3, 4, 3, padding=1, dtype=torch.float64)
    assert ours.weight.dtype == mt.float64 and ours.bias.dtype == mt.float64
    _compare_layer(torch, ours, theirs, _arr(2, 3, 5, 5), device, rtol=1e-10, atol=1e-12)


def test_conv_transpose2d_output_size(device, torch):
    ours, theirs = nn.ConvTranspose2d(3, 2, 3, stride=3), torch.nn.ConvTranspose2d(3, 2, 3, stride=3)
    x = _arr(1, 3, 4, 4, dtype=np.float32)
    _compare_layer(torch, ours, theirs, x, device, output_size=(13, 14))
    assert ours(mt.tensor(x, device=device), output_size=[1, 2, 12, 12]).shape == (1, 2, 12, 12)
    with pytest.raises(ValueError, match="requested an output size of"):
        ours(mt.tensor(x, device=device), output_size=(16, 12))


@pytest.mark.parametrize("cls,args", [("Conv1d", (6, 4, 3)), ("Conv2d", (6, 4, (3, 2))), ("Conv3d", (2, 4, 2)),
                                      ("ConvTranspose2d", (6, 4, 3))])
def test_conv_layer_default_init(cls, args):
    layer = getattr(nn, cls)(*args)
    w = to_np(layer.weight)
    fan_in = w.shape[1] * int(np.prod(w.shape[2:]))
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) gives gain*sqrt(3/fan_in) = 1/sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    b = to_np(layer.bias)
    assert b.shape == (layer.out_channels,) and np.abs(b).max() <= bound
    assert layer.weight.requires_grad and layer.bias.requires_grad


def test_conv_layer_reprs(torch):
    for args, kw in [((3, 8, 3), {}), ((3, 8, (3, 5)), dict(stride=2, padding=1, dilation=2, bias=False,
                                                             padding_mode="reflect")),
                     ((3, 8, 3), dict(padding="valid")), ((4, 8, 3), dict(groups=2, padding="same"))]:
        assert repr(nn.Conv2d(*args, **kw)) == repr(torch.nn.Conv2d(*args, **kw))
    assert repr(nn.Conv1d(3, 6, 3, groups=3, padding="same")) == repr(torch.nn.Conv1d(3, 6, 3, groups=3,
                                                                                      padding="same"))
    assert repr(nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1)) == \
        repr(torch.nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1))


@pytest.mark.parametrize("kw", [dict(padding="same", stride=2), dict(padding="foo"), dict(padding_mode="foo"),
                                dict(groups=2), dict(groups=0)])
def test_conv_layer_constructor_errors_match_torch(kw, torch):
    _same_error(torch, lambda: nn.Conv2d(3, 8, 3, **kw), lambda: torch.nn.Conv2d(3, 8, 3, **kw), ValueError)
    _same_error(torch, lambda: nn.Conv2d(4, 9, 3, groups=2), lambda: torch.nn.Conv2d(4, 9, 3, groups=2), ValueError)
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")


def test_conv_layer_in_a_model_trains(device):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 1)).to(device)
    x = mt.randn(8, 1, 8, 8, device=device)
    y = x.mean((1, 2, 3)).unsqueeze(1)
    opt = mt.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
