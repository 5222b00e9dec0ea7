"""Random numbers are generated piece by piece (backends/_random.py): a large draw needs little memory beyond its
result (``randn(2e8)`` once peaked at 8 times its output), and the pieces give bit for bit the values of one
whole-array computation."""
import tracemalloc

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import _random, get_backend

N = 1 << 23  # scaled down from the 2e8 of the report (the ratio is what matters) to keep CI fast


def _peak(fn):
    """(result, peak bytes traced while ``fn`` ran): NumPy reports its array buffers to tracemalloc."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name, fn", [
    ("randn", lambda: mt.randn(N)),
    ("rand", lambda: mt.rand(N)),
    ("randint", lambda: mt.randint(0, 1000, (N,))),
])
def test_factories_peak_near_their_output(name, fn):
    t, peak = _peak(fn)
    out_bytes = t.numel() * t.element_size()
    assert peak <= 1.6 * out_bytes, f"{name}: peak {peak / out_bytes:.2f}x its output"


@pytest.mark.parametrize("name", ["normal_", "uniform_"])
def test_in_place_samplers_write_into_the_tensor(name):
    t = mt.empty(N)
    _, peak = _peak(lambda: getattr(t, name)())
    out_bytes = t.numel() * t.element_size()
    # the tensor exists already: drawing into it needs only a piece's temporaries
    assert peak <= 0.6 * out_bytes, f"{name}: peak {peak / out_bytes:.2f}x the tensor"


def test_embedding_init_peaks_near_its_weight():
    emb, peak = _peak(lambda: mt.nn.Embedding(1 << 17, 64))
    out_bytes = emb.weight.numel() * emb.weight.element_size()
    assert peak <= 1.6 * out_bytes, f"peak {peak / out_bytes:.2f}x the weight"


_SHAPES = [(), (1,), (7,), (5, 3), (3, 1, 11), (2, 13)]
_OFFSETS = [0, 1, 3, (1 << 64) - 2]  # the last one carries into the counter's high half mid-draw


def _draws(be, off, shape, dt):
    m = np.linspace(-1, 1, shape[-1]).astype(dt) if shape else np.float64(0.5)
    p = np.linspace(0, 1, shape[-1]) if shape else 0.25
    yield be.rand_uniform(1, off, shape, dt)
    yield be.rand_uniform(1, off, shape, dt, -2.0, 3.0)
    yield be.rand_normal(2, off, shape, dt, 0.5, 2.0)
    yield be.rand_normal(2, off, shape, dt, m, 3.0)
    yield be.rand_log_normal(2, off, shape, dt, 0.5, 0.3)
    yield be.rand_exponential(3, off, shape, dt, 1.5)
    yield be.rand_cauchy(3, off, shape, dt, 0.1, 1.5)
    yield be.rand_geometric(3, off, shape, dt, 0.3)
    yield be.rand_bernoulli(4, off, shape, p, dt)
    for lo, hi in ((0, 10), (-5, 5), (0, 1 << 40), (-(1 << 63), (1 << 63) - 1), (0, 1 << 64)):
        yield be.rand_int(5, off, shape, lo, hi, np.dtype(np.int64))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_pieces_are_bit_identical_to_one_piece(monkeypatch, dt):
    # the reference is the whole draw in one piece; pieces of 1, 3 and 4 elements start inside Philox blocks
    # and inside Box-Muller pairs
    be = get_backend("cpu")
    for off in _OFFSETS:
        for shape in _SHAPES:
            monkeypatch.setattr(_random, "_CHUNK_ELEMENTS", 1 << 30)
            ref = list(_draws(be, off, shape, np.dtype(dt)))
            for chunk in (1, 3, 4):
                monkeypatch.setattr(_random, "_CHUNK_ELEMENTS", chunk)
                for (a, na), (b, nb) in zip(ref, _draws(be, off, shape, np.dtype(dt))):
                    assert na == nb
                    assert a.dtype == b.dtype and a.shape == b.shape
                    np.testing.assert_array_equal(a, b)


def test_pieces_cover_c_order_exactly():
    for shape in [(4, 7001), (3, 1, 5), (1000, 3, 5), (10, 0, 3), (3, 4, 5, 6)]:
        for chunk in (1, 3, 16, 1 << 16):
            seen = np.zeros(shape, np.int64)
            for index, first, n in _random._pieces(shape, chunk):
                assert seen[index].size == n <= max(chunk, 1)
                seen[index] = np.arange(first, first + n).reshape(seen[index].shape) + 1
            np.testing.assert_array_equal(seen.reshape(-1), np.arange(1, seen.size + 1))


def test_in_place_sample_matches_the_factory(device):
    mt.manual_seed(7)
    a = mt.randn(3, 50, device=device)
    mt.manual_seed(7)
    b = mt.empty(3, 50, device=device).normal_()
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    # a strided view is written element by element in its logical order
    mt.manual_seed(7)
    c = mt.zeros(50, 3, device=device).t()
    c.normal_()
    np.testing.assert_array_equal(a.cpu().numpy(), c.cpu().numpy())


def test_in_place_sample_refuses_overlapping_memory(device):
    t = mt.zeros(3, device=device).expand(4, 3)
    gen = mt.Generator(device).manual_seed(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        t.uniform_(generator=gen)
    assert gen.get_offset() == 0  # refused before drawing
