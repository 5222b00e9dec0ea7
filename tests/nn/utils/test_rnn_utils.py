"""``nn.utils.rnn`` against PyTorch: packing (sorted and unsorted lengths, list or tensor lengths, batch_first),
padding back (total_length, padding_value), pad_sequence (both sides), pack/unpack/unpad of lists, gradients through
packing and padding, ``PackedSequence`` conversions, and the errors."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu.nn.utils import rnn as R

RNG = np.random.default_rng(9)


def _pair(a, device, torch, requires_grad=False):
    return mt.tensor(a, device=device, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _same_packed(pm, pt):
    assert_close(pm.data, pt.data.detach().numpy(), rtol=0, atol=0)
    assert pm.batch_sizes.tolist() == pt.batch_sizes.tolist()
    assert pm.batch_sizes.device.type == "cpu" and pm.batch_sizes.dtype == mt.int64
    for a, b in ((pm.sorted_indices, pt.sorted_indices), (pm.unsorted_indices, pt.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            assert to_np(a).tolist() == b.tolist() and a.device == pm.data.device


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths, enforce_sorted", [([7, 5, 5, 2], True), ([2, 7, 5, 5], False),
                                                     ([3, 3, 1, 3], False), ([4], True)])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_pack_and_pad_round_trip_match_torch(device, torch, batch_first, lengths, enforce_sorted, as_tensor):
    n, steps = len(lengths), 8
    a = RNG.standard_normal((n, steps, 3) if batch_first else (steps, n, 3))
    xm, xt = _pair(a, device, torch, requires_grad=True)
    lens_m = mt.tensor(lengths) if as_tensor else lengths
    lens_t = torch.tensor(lengths) if as_tensor else lengths
    pm = R.pack_padded_sequence(xm, lens_m, batch_first=batch_first, enforce_sorted=enforce_sorted)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lens_t, batch_first=batch_first, enforce_sorted=enforce_sorted)
    _same_packed(pm, pt)
    for total in (None, 9):
        padded_m, len_m = R.pad_packed_sequence(pm, batch_first=batch_first, padding_value=-2.5, total_length=total)
        padded_t, len_t = torch.nn.utils.rnn.pad_packed_sequence(pt, batch_first=batch_first, padding_value=-2.5,
                                                                 total_length=total)
        assert_close(padded_m, padded_t.detach().numpy(), rtol=0, atol=0)
        assert len_m.tolist() == len_t.tolist() and len_m.device.type == "cpu" and len_m.dtype == mt.int64
    g = RNG.standard_normal(tuple(padded_t.shape))
    (padded_m * mt.tensor(g, device=device)).sum().backward()
    (padded_t * torch.tensor(g)).sum().backward()
    assert_close(xm.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(device, torch, batch_first, padding_side):
    arrays = [RNG.standard_normal((n, 2, 3)) for n in (3, 5, 1)]
    pairs = [_pair(a, device, torch, requires_grad=True) for a in arrays]
    pm = R.pad_sequence([p[0] for p in pairs], batch_first=batch_first, padding_value=7.0, padding_side=padding_side)
    pt = torch.nn.utils.rnn.pad_sequence([p[1] for p in pairs], batch_first=batch_first, padding_value=7.0,
                                         padding_side=padding_side)
    assert_close(pm, pt.detach().numpy(), rtol=0, atol=0)
    g = RNG.standard_normal(tuple(pt.shape))
    (pm * mt.tensor(g, device=device)).sum().backward()
    (pt * torch.tensor(g)).sum().backward()
    for a, b in pairs:
        assert_close(a.grad, b.grad.numpy(), rtol=0, atol=0)


def test_pad_sequence_of_vectors_and_of_a_generator(device, torch):
    seqs = [RNG.standard_normal(n).astype(np.float32) for n in (2, 4)]
    pm = R.pad_sequence(mt.tensor(s, device=device) for s in seqs)
    pt = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs])
    assert_close(pm, pt.numpy(), rtol=0, atol=0)
    assert pm.dtype == mt.float32


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_unpack_unpad_sequence_lists(device, torch, enforce_sorted):
    lengths = (5, 3, 3, 1) if enforce_sorted else (1, 5, 3, 3)
    arrays = [RNG.standard_normal((n, 2)) for n in lengths]
    pm = R.pack_sequence([mt.tensor(a, device=device) for a in arrays], enforce_sorted=enforce_sorted)
    pt = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=enforce_sorted)
    _same_packed(pm, pt)
    for got, a in zip(R.unpack_sequence(pm), arrays):
        assert_close(got, a, rtol=0, atol=0)
    padded = R.pad_sequence([mt.tensor(a, device=device) for a in arrays])
    before = to_np(padded).copy()
    for got, a in zip(R.unpad_sequence(padded, mt.tensor(lengths)), arrays):
        assert_close(got, a, rtol=0, atol=0)
    # PyTorch transposes its argument in place here; ours leaves it as it was
    assert padded.shape == before.shape and np.array_equal(to_np(padded), before)
    for got, a in zip(R.unpad_sequence(padded.transpose(0, 1), list(lengths), batch_first=True), arrays):
        assert_close(got, a, rtol=0, atol=0)


def test_packed_sequence_is_a_named_tuple_and_converts(device, torch):
    p = R.pack_sequence([mt.randn(3, 2), mt.randn(2, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert data is p.data and batch_sizes is p.batch_sizes and sorted_indices is unsorted_indices is None
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert p.to(mt.float32) is p
    d = p.double()
    assert d.data.dtype == mt.float64 and d.batch_sizes is p.batch_sizes
    moved = R.pack_sequence([mt.randn(1, 2), mt.randn(3, 2)], enforce_sorted=False).to(device)
    assert moved.data.device.type == moved.sorted_indices.device.type == mt.device(device).type
    assert moved.batch_sizes.device.type == "cpu"
    assert moved.is_cuda == (mt.device(device).type == "cuda")
    assert not moved.is_pinned()
    assert R.PackedSequence((data, batch_sizes)).batch_sizes is batch_sizes
    assert to_np(R.invert_permutation(mt.tensor([2, 0, 1]))).tolist() == [1, 2, 0]
    assert R.invert_permutation(None) is None


def test_batch_sizes_must_live_on_the_cpu(device):
    if mt.device(device).type == "cpu":
        pytest.skip("needs a device other than the CPU")
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        R.PackedSequence(mt.randn(3, 2), mt.tensor([2, 1], device=device))


def _same_error(torch, ours_fn, theirs_fn):
    with pytest.raises(Exception) as expected:
        theirs_fn()
    with pytest.raises(type(expected.value)) as got:
        ours_fn()
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("case", [
    lambda R_, t: R_.pack_padded_sequence(t.ones(5, 3, 2), [2, 4, 5]),
    lambda R_, t: R_.pack_padded_sequence(t.ones(5, 3, 2), [2, 4]),
    lambda R_, t: R_.pack_padded_sequence(t.ones(5, 3, 2), [5, 4, 0]),
    lambda R_, t: R_.pack_padded_sequence(t.ones(5, 3, 2), t.tensor([[5, 4, 2]])),
    lambda R_, t: R_.pack_padded_sequence(t.ones(0, 3, 2), [0, 0, 0]),
    lambda R_, t: R_.pad_packed_sequence(R_.pack_padded_sequence(t.ones(5, 3, 2), [5, 4, 2]), total_length=3),
    lambda R_, t: R_.pad_sequence([t.ones(3, 2), t.ones(2, 3)]),
    lambda R_, t: R_.pad_sequence([t.ones(3, 2), t.ones(2, 2)], padding_side="middle"),
    lambda R_, t: R_.pad_sequence([]),
    lambda R_, t: R_.pad_sequence(3),
])
def test_errors_match_torch(torch, case):
    _same_error(torch, lambda: case(R, mt), lambda: case(torch.nn.utils.rnn, torch))


def test_lengths_longer_than_the_input_are_refused():
    # PyTorch reads past the padded input here; we refuse
    with pytest.raises(RuntimeError, match="does not fit the padded input of 5 steps"):
        R.pack_padded_sequence(mt.ones(5, 3, 2), [6, 4, 2])


def test_lengths_on_a_device_are_refused(device):
    if mt.device(device).type == "cpu":
        pytest.skip("needs a device other than the CPU")
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0"):
        R.pack_padded_sequence(mt.ones(5, 3, 2, device=device), mt.tensor([5, 4, 2], device=device))
