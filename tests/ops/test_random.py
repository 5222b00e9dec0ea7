"""Random sampling: the Philox4x32-10 stream (known-answer vectors and the exact conversions), Generators
and seeding, sampler statistics, in-place samplers with autograd, and error types against PyTorch."""
import math
import pickle

import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import to_np
from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends._random import philox4x32_10_scalar

M32 = 0xFFFFFFFF


def philox_ref(counter, key):
    """Philox4x32-10 straight from the Random123 paper, independent of the package's code."""
    c = [(counter >> (32 * i)) & M32 for i in range(4)]
    k = [key & M32, (key >> 32) & M32]
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        hi0, lo0 = divmod(0xD2511F53 * c[0], 1 << 32)
        hi1, lo1 = divmod(0xCD9E8D57 * c[2], 1 << 32)
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
    return tuple(c)


def words(seed, offset, n):
    """The first n words of the stream from block ``offset``."""
    out = []
    b = offset
    while len(out) < n:
        out.extend(philox_ref(b, seed))
        b += 1
    return out[:n]


def pack(words4):
    return sum(w << (32 * i) for i, w in enumerate(words4))


# Random123's published known-answer vectors for philox4x32-10: (counter words, key words, output words)
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((M32,) * 4, (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.fixture
def gen(device):
    return mt.Generator(device).manual_seed(1234)


# ---------------------------------------------------------------------- the stream

@pytest.mark.parametrize("ctr,key,expect", KAT)
def test_philox_known_answers(device, ctr, key, expect):
    counter, k = pack(ctr), pack(key)
    assert philox_ref(counter, k) == expect
    assert philox4x32_10_scalar(counter, k) == expect
    be = get_backend(device)
    for n in (1, 9):  # the small-request path and the vectorised path
        out = be.to_numpy(be.philox4x32_10(counter, k, n))
        assert out.dtype == np.uint32 and out.shape == (n, 4)
        assert tuple(int(w) for w in out[0]) == expect


@pytest.mark.parametrize("counter", [0, (1 << 64) - 3, (1 << 128) - 2, 0x1234_5678_9ABC_DEF0_1122_3344])
def test_philox_blocks_follow_the_128_bit_counter(device, counter):
    be = get_backend(device)
    key = 0xDEADBEEF_01234567
    out = be.to_numpy(be.philox4x32_10(counter, key, 7))
    for i in range(7):
        assert tuple(int(w) for w in out[i]) == philox_ref((counter + i) % (1 << 128), key)


def test_rand_float32_is_the_top_24_bits_of_each_word(device, gen):
    gen.set_offset(5)
    x = mt.rand(10, generator=gen, device=device)
    expect = np.array([(w >> 8) * 2.0 ** -24 for w in words(1234, 5, 10)], dtype=np.float32)
    np.testing.assert_array_equal(to_np(x), expect)
    assert gen.get_offset() == 5 + 3  # ten words use three blocks


def test_rand_float64_uses_53_bits_of_two_words(device, gen):
    x = mt.rand(5, dtype=mt.float64, generator=gen, device=device)
    w = words(1234, 0, 10)
    expect = [((w[2 * i] | (w[2 * i + 1] << 32)) >> 11) * 2.0 ** -53 for i in range(5)]
    np.testing.assert_array_equal(to_np(x), np.array(expect))
    assert gen.get_offset() == 3


def test_randint_is_low_plus_word_modulo_span(device, gen):
    x = mt.randint(-7, 10, (9,), generator=gen, device=device)
    assert to_np(x).tolist() == [-7 + w % 17 for w in words(1234, 0, 9)]
    big = mt.randint(-(2 ** 40), 2 ** 40, (3,), generator=gen, device=device)
    w = words(1234, 3, 6)
    v = [w[2 * i] | (w[2 * i + 1] << 32) for i in range(3)]
    assert to_np(big).tolist() == [-(2 ** 40) + x % 2 ** 41 for x in v]


def test_randn_is_box_muller_on_word_pairs(device, gen):
    z = to_np(mt.randn(6, generator=gen, device=device)).astype(np.float64)
    w = words(1234, 0, 6)
    expect = []
    for i in range(3):
        u1 = (w[2 * i] + 1) * 2.0 ** -32
        u2 = w[2 * i + 1] * 2.0 ** -32
        r = math.sqrt(-2.0 * math.log(u1))
        expect += [r * math.cos(2 * math.pi * u2), r * math.sin(2 * math.pi * u2)]
    np.testing.assert_allclose(z, np.array(expect, dtype=np.float32), rtol=1e-6, atol=1e-7)


def test_each_draw_starts_on_a_fresh_block(device, gen):
    mt.rand(1, generator=gen, device=device)
    assert gen.get_offset() == 1
    mt.randn(5, generator=gen, device=device)  # 6 words: two blocks
    assert gen.get_offset() == 3
    mt.rand(3, dtype=mt.float64, generator=gen, device=device)  # 6 words
    assert gen.get_offset() == 5
    mt.randint(0, 5, (0,), generator=gen, device=device)
    assert gen.get_offset() == 5


@pytest.mark.skipif(not mt.cuda.is_available(), reason="needs a GPU")
def test_cpu_and_gpu_draw_the_same_numbers():
    gc, gg = mt.Generator("cpu").manual_seed(7), mt.Generator("cuda").manual_seed(7)
    for make in (lambda g, d: mt.rand(1000, generator=g, device=d),
                 lambda g, d: mt.rand(77, dtype=mt.float64, generator=g, device=d),
                 lambda g, d: mt.randint(-5, 2 ** 35, (333,), generator=g, device=d),
                 lambda g, d: mt.randperm(500, generator=g, device=d)):
        np.testing.assert_array_equal(to_np(make(gc, "cpu")), to_np(make(gg, "cuda")))
    np.testing.assert_allclose(to_np(mt.randn(1000, generator=gc)), to_np(mt.randn(1000, generator=gg, device="cuda")),
                               rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------- generators and seeding

SAMPLERS = [
    lambda g, d: mt.rand(7, generator=g, device=d),
    lambda g, d: mt.randn(2, 3, generator=g, device=d),
    lambda g, d: mt.randint(3, 9, (5,), generator=g, device=d),
    lambda g, d: mt.randperm(20, generator=g, device=d),
    lambda g, d: mt.normal(1.0, 2.0, (4,), generator=g, device=d),
    lambda g, d: mt.bernoulli(mt.full((6,), 0.5, device=d), generator=g),
    lambda g, d: mt.multinomial(mt.ones(2, 5, device=d), 3, generator=g),
    lambda g, d: mt.multinomial(mt.ones(5, device=d), 8, True, generator=g),
    lambda g, d: mt.empty(5, device=d).uniform_(-1, 1, generator=g),
    lambda g, d: mt.empty(5, device=d).normal_(generator=g),
    lambda g, d: mt.empty(5, device=d).exponential_(generator=g),
    lambda g, d: mt.empty(5, dtype=mt.int32, device=d).random_(generator=g),
]


@pytest.mark.parametrize("sample", SAMPLERS)
def test_same_seed_same_numbers_and_generators_are_independent(device, sample):
    g1 = mt.Generator(device).manual_seed(42)
    g2 = mt.Generator(device).manual_seed(42)
    other = mt.Generator(device).manual_seed(43)
    a = to_np(sample(g1, device))
    mt.rand(100, generator=other, device=device)  # drawing from another generator moves nothing here
    mt.rand(100, device=device)
    b = to_np(sample(g2, device))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(to_np(sample(g1, device)), to_np(sample(g2, device)))
    c = to_np(sample(other.manual_seed(43000), device))
    assert a.size <= 1 or not np.array_equal(a, c) or a.dtype == bool


@pytest.mark.parametrize("sample", SAMPLERS)
def test_manual_seed_reproduces_the_default_stream(device, sample):
    mt.manual_seed(2024)
    a = to_np(sample(None, device))
    b = to_np(sample(None, device))
    mt.manual_seed(2024)
    np.testing.assert_array_equal(to_np(sample(None, device)), a)
    np.testing.assert_array_equal(to_np(sample(None, device)), b)


def test_explicit_generator_leaves_default_stream_alone(device):
    mt.manual_seed(5)
    ref = to_np(mt.rand(10, device=device))
    mt.manual_seed(5)
    g = mt.Generator(device)
    mt.rand(50, generator=g, device=device)
    np.testing.assert_array_equal(to_np(mt.rand(10, device=device)), ref)


def test_generator_state_roundtrip(device, gen):
    mt.rand(3, generator=gen, device=device)
    state = gen.get_state()
    assert state.dtype is mt.uint8 and tuple(state.shape) == (16,) and state.device.type == "cpu"
    a = to_np(mt.randn(10, generator=gen, device=device))
    assert gen.set_state(state) is gen
    np.testing.assert_array_equal(to_np(mt.randn(10, generator=gen, device=device)), a)
    c = gen.clone_state()
    np.testing.assert_array_equal(to_np(mt.rand(4, generator=c, device=device)),
                                  to_np(mt.rand(4, generator=gen, device=device)))
    p = pickle.loads(pickle.dumps(gen))
    np.testing.assert_array_equal(to_np(mt.rand(4, generator=p, device=device)),
                                  to_np(mt.rand(4, generator=gen, device=device)))


def test_generator_api_like_torch(torch):
    g, t = mt.Generator(), torch.Generator()
    assert g.device == mt.device("cpu") and str(g.device) == str(t.device)
    assert g.initial_seed() == t.initial_seed()  # the same default seed
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.manual_seed(-1).initial_seed() == t.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    for bad, exc in ((2 ** 64, ValueError), (-(2 ** 63) - 1, ValueError), (1.5, RuntimeError), ("3", RuntimeError),
                     (None, RuntimeError)):
        with pytest.raises(exc):
            t.manual_seed(bad)
        with pytest.raises(exc):
            g.manual_seed(bad)
    assert g.initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s and g.get_offset() == 0
    g.set_offset(10)
    assert g.get_offset() == 10


def test_set_state_errors_like_torch(torch):
    g, t = mt.Generator(), torch.Generator()
    for m_bad, t_bad, exc in ((mt.zeros(3), torch.zeros(3), TypeError), ([1, 2], [1, 2], TypeError),
                              (mt.zeros(3, dtype=mt.uint8), torch.zeros(3, dtype=torch.uint8), RuntimeError)):
        with pytest.raises(exc):
            t.set_state(t_bad)
        with pytest.raises(exc):
            g.set_state(m_bad)


def test_global_seeding_functions(torch):
    assert mt.manual_seed(11) is mt.default_generator
    assert mt.initial_seed() == 11
    mt.manual_seed(1.7)  # like torch.manual_seed, which calls int() first
    assert mt.initial_seed() == 1
    s = mt.seed()
    assert isinstance(s, int) and mt.initial_seed() == s
    mt.manual_seed(3)
    st = mt.get_rng_state()
    a = mt.rand(5).tolist()
    mt.set_rng_state(st)
    assert mt.rand(5).tolist() == a
    assert mt.random.manual_seed is mt.manual_seed
    import minitorch_gpu.random as mr
    assert mr.fork_rng is mt.random.fork_rng


def test_fork_rng_restores_the_default_state():
    mt.manual_seed(9)
    with mt.random.fork_rng():
        inner = mt.rand(4).tolist()
    after = mt.rand(4).tolist()
    assert inner == after
    with mt.random.fork_rng(enabled=False):
        mt.rand(1)
    assert mt.rand(4).tolist() != after


def test_generator_device_must_match(device):
    if device == "cpu" and mt.cuda.is_available():
        with pytest.raises(RuntimeError, match="device type for generator"):
            mt.rand(2, device="cuda", generator=mt.Generator("cpu"))
    with pytest.raises(TypeError):
        mt.rand(2, device=device, generator=3)


def test_failing_calls_leave_the_generator_where_it_was(device, gen):
    state = gen.get_state().tolist()
    x = mt.zeros(3, device=device)
    leaf = mt.zeros(3, device=device, requires_grad=True)
    for bad in (lambda: x.uniform_(1, 0, generator=gen), lambda: x.normal_(0, -1, generator=gen),
                lambda: mt.randint(5, 5, (2,), generator=gen, device=device),
                lambda: mt.randint(5, (2,), requires_grad=True, generator=gen, device=device),
                lambda: mt.multinomial(mt.tensor([1.0, -1.0], device=device), 1, generator=gen),
                lambda: mt.bernoulli(mt.tensor([0.5, 2.0], device=device), generator=gen),
                lambda: leaf.uniform_(generator=gen), lambda: x.random_(3, 2, generator=gen),
                lambda: mt.normal(mt.zeros(2, device=device), mt.tensor([1.0, -1.0], device=device), generator=gen)):
        with pytest.raises(RuntimeError):
            bad()
    assert gen.get_state().tolist() == state
    assert to_np(x).tolist() == [0, 0, 0] and x._version == 0


# ---------------------------------------------------------------------- dtypes and shapes

@pytest.mark.parametrize("call", [
    ("rand", (2, 3), {}), ("randn", (4,), {}), ("rand", (2,), {"dtype": "float64"}), ("randn", (2,), {"dtype": "float16"}),
    ("randint", (5, (3,)), {}), ("randint", (1, 5, (2, 2)), {}), ("randint", (0, 5, (2,)), {"dtype": "float32"}),
    ("randint", (0, 2, (3,)), {"dtype": "bool"}), ("randperm", (5,), {}), ("randperm", (5,), {"dtype": "float32"}),
    ("normal", (0.0, 1.0, (2, 3)), {}), ("normal", (0, 1, (2,)), {"dtype": "float64"}), ("rand", ((),), {}),
    ("rand", ([],), {}), ("randn", (), {"size": (3, 1)}), ("randint", (), {"high": 5, "size": (2,)}),
    ("randint", (5,), {"size": [2]}),
])
def test_sampler_dtypes_and_shapes_like_torch(torch, device, call):
    name, args, kw = call
    mkw = {k: getattr(mt, v) if k == "dtype" else v for k, v in kw.items()}
    tkw = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
    m = getattr(mt, name)(*args, device=device, **mkw)
    t = getattr(torch, name)(*args, **tkw)
    assert m.dtype.name == str(t.dtype).split(".")[1] and tuple(m.shape) == tuple(t.shape)


@pytest.mark.parametrize("src", ["float32", "float64", "int32"])
def test_like_samplers_like_torch(torch, device, src):
    m = mt.zeros(2, 3, dtype=getattr(mt, src), device=device)
    t = torch.zeros(2, 3, dtype=getattr(torch, src))
    calls = [("randint_like", (5,)), ("randint_like", (2, 5))]
    if src != "int32":
        calls += [("rand_like", ()), ("randn_like", ())]
    for name, args in calls:
        a, b = getattr(mt, name)(m, *args), getattr(torch, name)(t, *args)
        assert a.dtype.name == str(b.dtype).split(".")[1] and tuple(a.shape) == tuple(b.shape)
        assert a.device == m.device
    assert mt.rand_like(m, dtype=mt.float64).dtype is mt.float64


def test_requires_grad_on_samplers(device):
    x = mt.rand(3, device=device, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert mt.randn_like(x).requires_grad is False
    with pytest.raises(RuntimeError, match="floating point"):
        mt.randint(5, (2,), device=device, requires_grad=True)
    assert mt.randint(5, (2,), dtype=mt.float32, device=device, requires_grad=True).requires_grad


def test_out_argument(device):
    out = mt.empty(7, device=device)
    assert mt.rand(2, 2, out=out) is out and tuple(out.shape) == (2, 2)
    with pytest.raises(RuntimeError, match="does not match dtype"):
        mt.rand(2, dtype=mt.float64, out=mt.empty(2, device=device))
    o = mt.empty(3, dtype=mt.int64, device=device)
    mt.randperm(3, out=o)
    assert sorted(to_np(o).tolist()) == [0, 1, 2]


# ---------------------------------------------------------------------- statistics

N = 200_000


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_rand_statistics(device, gen, dtype):
    if dtype == "bfloat16" and device != "cpu":
        pytest.skip("bfloat16 is CPU-only")
    x = to_np(mt.rand(N, dtype=getattr(mt, dtype), generator=gen, device=device)).astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005
    assert abs(x.var() - 1 / 12) < 0.002 + (0.01 if dtype == "bfloat16" else 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_randn_statistics(device, gen, dtype):
    z = to_np(mt.randn(N, dtype=getattr(mt, dtype), generator=gen, device=device)).astype(np.float64)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.005
    assert abs(np.mean(z ** 4) - 3) < 0.1  # kurtosis of a normal


def test_normal_variants_statistics(device, gen):
    x = to_np(mt.normal(3.0, 2.0, (N,), generator=gen, device=device))
    assert abs(x.mean() - 3) < 0.02 and abs(x.std() - 2) < 0.02
    means = mt.tensor([[-5.0], [0.0], [5.0]], device=device)
    stds = mt.tensor([0.5, 1.0, 2.0, 0.0], device=device)
    y = to_np(mt.normal(means, stds, generator=gen))
    assert y.shape == (3, 4) and (y[:, 3] == [-5, 0, 5]).all()  # std 0 gives the mean exactly
    big = to_np(mt.normal(mt.full((N,), 1.0, device=device), 0.5, generator=gen))
    assert abs(big.mean() - 1) < 0.01 and abs(big.std() - 0.5) < 0.01
    big = to_np(mt.normal(2.0, mt.full((N,), 3.0, device=device), generator=gen))
    assert abs(big.mean() - 2) < 0.03 and abs(big.std() - 3) < 0.03


def test_uniform_statistics(device, gen):
    x = to_np(mt.empty(N, device=device).uniform_(-2, 5, generator=gen))
    assert x.min() >= -2 and x.max() < 5 and abs(x.mean() - 1.5) < 0.03


def test_randint_statistics(device, gen):
    x = to_np(mt.randint(-3, 4, (70_000,), generator=gen, device=device))
    counts = np.bincount(x + 3, minlength=7)
    assert x.min() == -3 and x.max() == 3
    assert np.all(np.abs(counts - 10_000) < 500)
    big = to_np(mt.randint(0, 2 ** 40, (N,), generator=gen, device=device)).astype(np.float64)
    assert abs(big.mean() / 2 ** 39 - 1) < 0.01
    full = to_np(mt.randint(-(2 ** 63), 2 ** 63 - 1, (1000,), generator=gen, device=device))
    assert (full < 0).any() and (full > 0).any()


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "bool", "float32", "float64", "float16"])
def test_random_default_range(device, gen, dtype):
    dt = getattr(mt, dtype)
    x = to_np(mt.empty(20_000, dtype=dt, device=device).random_(generator=gen)).astype(np.float64)
    assert x.min() >= 0 and np.all(x == np.floor(x))
    top = {"float32": 2 ** 24, "float64": 2 ** 53, "float16": 2 ** 11, "bool": 1, "uint8": 255, "int8": 127,
           "int32": 2 ** 31 - 1, "int64": 2 ** 63 - 1}[dtype]
    assert x.max() <= top and x.max() > top * 0.9


def test_random_ranges(device, gen):
    x = to_np(mt.empty(5000, dtype=mt.int8, device=device).random_(10, generator=gen))
    assert x.min() == 0 and x.max() == 9
    y = to_np(mt.empty(5000, device=device).random_(-5, 5, generator=gen))
    assert y.min() == -5 and y.max() == 4
    z = to_np(mt.empty(5000, dtype=mt.uint8, device=device).random_(250, None, generator=gen))
    assert z.min() == 250 and z.max() == 255


def test_bernoulli_statistics(device, gen):
    x = to_np(mt.bernoulli(mt.full((N,), 0.3, device=device), generator=gen))
    assert abs(x.mean() - 0.3) < 0.005 and set(np.unique(x)) <= {0.0, 1.0}
    p = mt.tensor([0.0, 1.0, 0.5], device=device).expand(50_000, 3).contiguous()
    y = to_np(mt.bernoulli(p, generator=gen))
    assert y[:, 0].sum() == 0 and y[:, 1].min() == 1 and abs(y[:, 2].mean() - 0.5) < 0.01
    z = to_np(mt.zeros(N, dtype=mt.int64, device=device).bernoulli_(0.8, generator=gen))
    assert abs(z.mean() - 0.8) < 0.005
    b = to_np(mt.zeros(4000, 2, dtype=mt.bool, device=device).bernoulli_(mt.tensor([0.0, 0.5], device=device),
                                                                         generator=gen))
    assert not b[:, 0].any() and abs(b[:, 1].mean() - 0.5) < 0.05
    c = to_np(mt.ones(N, device=device).bernoulli(0.1, generator=gen))
    assert abs(c.mean() - 0.1) < 0.005


def test_other_distributions_statistics(device, gen):
    e = to_np(mt.empty(N, device=device).exponential_(2.0, generator=gen))
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    g = to_np(mt.empty(N, device=device).geometric_(0.25, generator=gen))
    assert g.min() == 1 and abs(g.mean() - 4) < 0.05 and np.all(g == np.floor(g))
    c = to_np(mt.empty(N, dtype=mt.float64, device=device).cauchy_(1.0, 2.0, generator=gen))
    q1, med, q3 = np.percentile(c, [25, 50, 75])
    assert abs(med - 1) < 0.05 and abs((q3 - q1) - 4) < 0.1
    ln = to_np(mt.empty(N, device=device).log_normal_(0.5, 0.25, generator=gen))
    assert ln.min() > 0 and abs(np.log(ln).mean() - 0.5) < 0.01 and abs(np.log(ln).std() - 0.25) < 0.01


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 70_000])
def test_randperm_is_a_permutation(device, gen, n):
    p = to_np(mt.randperm(n, generator=gen, device=device))
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(n))
    if n >= 7:
        assert not np.array_equal(p, np.arange(n))
        q = to_np(mt.randperm(n, generator=gen, device=device))
        assert not np.array_equal(p, q)


def test_randperm_positions_are_uniform(device, gen):
    firsts = np.array([int(to_np(mt.randperm(5, generator=gen, device=device))[0]) for _ in range(5000)])
    counts = np.bincount(firsts, minlength=5)
    assert np.all(np.abs(counts - 1000) < 150)


def test_multinomial_without_replacement_distinct(device, gen):
    probs = mt.tensor([[0.1, 0.2, 0.0, 0.3, 0.4], [5.0, 0.0, 1.0, 1.0, 0.0]], device=device)
    for _ in range(50):
        s = to_np(mt.multinomial(probs, 3, generator=gen))
        assert s.shape == (2, 3) and s.dtype == np.int64
        assert len(set(s[0])) == 3 and len(set(s[1])) == 3
        assert 2 not in s[0] and set(s[1]) == {0, 2, 3}
    full = to_np(mt.multinomial(mt.tensor([1.0, 0.0, 2.0], device=device), 3, generator=gen))
    assert full.tolist()[2] == 1 and sorted(full.tolist()) == [0, 1, 2]  # zero weight only once nothing else is left


def test_multinomial_frequencies(device, gen):
    p = np.array([0.1, 0.0, 0.2, 0.3, 0.4])
    s = to_np(mt.multinomial(mt.tensor(p, device=device), N, True, generator=gen))
    freq = np.bincount(s, minlength=5) / N
    assert freq[1] == 0 and np.all(np.abs(freq - p) < 0.006)
    first = np.array([int(to_np(mt.multinomial(mt.tensor([1.0, 3.0], device=device), 1, generator=gen))[0])
                      for _ in range(2000)])
    assert abs(first.mean() - 0.75) < 0.04
    rows = to_np(mt.multinomial(mt.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=mt.float64, device=device), 40,
                                True, generator=gen))
    assert (rows[0] == 2).all() and (rows[1] == 0).all()


# ---------------------------------------------------------------------- error types against torch

ERRORS = [
    ("rand int", lambda m, d: m.rand(2, dtype=m.int64, device=d)),
    ("randn int", lambda m, d: m.randn(2, dtype=m.int64, device=d)),
    ("randint empty range", lambda m, d: m.randint(5, 5, (3,), device=d)),
    ("randint int size", lambda m, d: m.randint(5, 3, device=d)),
    ("randint float bounds", lambda m, d: m.randint(0.5, 5.5, (2,), device=d)),
    ("randint uint8 low", lambda m, d: m.randint(-5, 300, (2,), dtype=m.uint8, device=d)),
    ("randperm negative", lambda m, d: m.randperm(-1, device=d)),
    ("randperm int8 overflow", lambda m, d: m.randperm(300, dtype=m.int8, device=d)),
    ("rand_like int", lambda m, d: m.rand_like(m.zeros(2, dtype=m.int64, device=d))),
    ("normal negative std", lambda m, d: m.normal(0.0, -1.0, (2, 3), device=d)),
    ("normal tensor negative std", lambda m, d: m.normal(m.zeros(2, device=d), m.tensor([1.0, -1.0], device=d))),
    ("normal shapes", lambda m, d: m.normal(m.zeros(2, device=d), m.ones(3, device=d))),
    ("normal int mean", lambda m, d: m.normal(m.zeros(2, dtype=m.int64, device=d), 1.0)),
    ("normal no size", lambda m, d: m.normal(0.0, 1.0)),
    ("bernoulli p>1", lambda m, d: m.bernoulli(m.tensor([0.0, 2.0], device=d))),
    ("bernoulli int", lambda m, d: m.bernoulli(m.tensor([0, 1], device=d))),
    ("bernoulli scalar p", lambda m, d: m.bernoulli(m.tensor([0.0, 1.0], device=d), p=1.5)),
    ("bernoulli_ p", lambda m, d: m.zeros(2, device=d).bernoulli_(1.5)),
    ("bernoulli_ tensor p", lambda m, d: m.zeros(2, device=d).bernoulli_(m.tensor([0.0, 2.0], device=d))),
    ("bernoulli_ shapes", lambda m, d: m.zeros(3, device=d).bernoulli_(m.ones(2, device=d))),
    ("multinomial zero sum", lambda m, d: m.multinomial(m.tensor([0.0, 0.0], device=d), 1)),
    ("multinomial negative", lambda m, d: m.multinomial(m.tensor([-1.0, 2.0], device=d), 1)),
    ("multinomial inf", lambda m, d: m.multinomial(m.tensor([1.0, float("inf")], device=d), 1)),
    ("multinomial nan", lambda m, d: m.multinomial(m.tensor([1.0, float("nan")], device=d), 1)),
    ("multinomial too many", lambda m, d: m.multinomial(m.tensor([1.0, 2.0], device=d), 3)),
    ("multinomial zero samples", lambda m, d: m.multinomial(m.tensor([1.0, 2.0], device=d), 0)),
    ("multinomial int", lambda m, d: m.multinomial(m.tensor([1, 2], device=d), 1)),
    ("multinomial 3d", lambda m, d: m.multinomial(m.ones(2, 2, 2, device=d), 1)),
    ("multinomial 0d", lambda m, d: m.multinomial(m.tensor(1.0, device=d), 1)),
    ("multinomial empty cats", lambda m, d: m.multinomial(m.ones(2, 0, device=d), 1)),
    ("uniform_ range", lambda m, d: m.zeros(2, device=d).uniform_(1, 0)),
    ("uniform_ int", lambda m, d: m.zeros(2, dtype=m.int64, device=d).uniform_()),
    ("uniform_ inf", lambda m, d: m.zeros(3, device=d).uniform_(float("inf"))),
    ("uniform_ to big", lambda m, d: m.zeros(3, device=d).uniform_(0, 1e39)),
    ("uniform_ half big", lambda m, d: m.zeros(3, dtype=m.float16, device=d).uniform_(0, 70000)),
    ("normal_ std", lambda m, d: m.zeros(2, device=d).normal_(0, -1)),
    ("normal_ int", lambda m, d: m.zeros(2, dtype=m.int64, device=d).normal_()),
    ("random_ range", lambda m, d: m.zeros(3, device=d).random_(5, 5)),
    ("random_ uint8", lambda m, d: m.zeros(3, dtype=m.uint8, device=d).random_(300)),
    ("random_ int8", lambda m, d: m.zeros(3, dtype=m.int8, device=d).random_(-200, 0)),
    ("exponential_ lambda", lambda m, d: m.zeros(3, device=d).exponential_(-1)),
    ("exponential_ zero", lambda m, d: m.zeros(3, device=d).exponential_(0)),
    ("exponential_ int", lambda m, d: m.zeros(3, dtype=m.int64, device=d).exponential_()),
    ("geometric_ 0", lambda m, d: m.zeros(3, device=d).geometric_(0)),
    ("geometric_ 1", lambda m, d: m.zeros(3, device=d).geometric_(1)),
    ("log_normal_ std", lambda m, d: m.zeros(3, device=d).log_normal_(0, 0)),
    ("cauchy_ sigma", lambda m, d: m.zeros(3, device=d).cauchy_(0, -1)),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_types_like_torch(torch, device, name, call):
    with pytest.raises(Exception) as te:
        call(torch, "cpu")
    with pytest.raises(type(te.value)):
        call(mt, device)


def test_multinomial_no_rows_gives_empty(torch, device):
    r = mt.multinomial(mt.ones(0, 3, device=device), 2)
    assert tuple(r.shape) == tuple(torch.multinomial(torch.ones(0, 3), 2).shape) and r.dtype is mt.int64


# ---------------------------------------------------------------------- in-place samplers and autograd

INPLACE = [("uniform_", (), "UniformBackward0"), ("normal_", (), "NormalBackward0"),
           ("bernoulli_", (), "BernoulliBackward2"), ("random_", (), "RandomBackward2"),
           ("random_", (5,), "RandomBackward1"), ("random_", (1, 5), "RandomBackward0"),
           ("exponential_", (), "ExponentialBackward0"), ("cauchy_", (), "CauchyBackward0"),
           ("log_normal_", (), "LogNormalBackward0"), ("geometric_", (0.5,), "GeometricBackward0")]


@pytest.mark.parametrize("name,args,node", INPLACE)
def test_inplace_samplers_write_in_place_and_record_zero_gradients(torch, device, name, args, node):
    x = mt.zeros(4, device=device)
    ptr, v = x.data_ptr(), x._version
    assert getattr(x, name)(*args) is x
    assert x.data_ptr() == ptr and x._version == v + 1
    a = mt.ones(4, device=device, requires_grad=True)
    y = a * 2
    getattr(y, name)(*args)
    ta = torch.ones(4, requires_grad=True)
    ty = ta * 2
    getattr(ty, name)(*args)
    assert y.grad_fn.name() == type(ty.grad_fn).__name__ == node
    (y * 3).sum().backward()
    assert to_np(a.grad).tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(mt.ones(2, device=device, requires_grad=True), name)(*args)


def test_bernoulli_tensor_p_inplace_node_like_torch(torch, device):
    a = mt.ones(2, device=device, requires_grad=True)
    y = a * 0.5
    y.bernoulli_(mt.full((2,), 0.5, device=device))
    assert y.grad_fn.name() == "BernoulliBackward1"
    ty = torch.ones(2, requires_grad=True) * 0.5
    ty.bernoulli_(torch.full((2,), 0.5))
    assert type(ty.grad_fn).__name__ == "BernoulliBackward1"


def test_sampling_functions_give_zero_gradients_like_torch(torch, device):
    m = mt.zeros(3, device=device, requires_grad=True)
    s = mt.ones(3, device=device, requires_grad=True)
    out = mt.normal(m, s)
    assert out.grad_fn.name() == "NormalBackward3"
    out.sum().backward()
    assert to_np(m.grad).tolist() == [0.0] * 3 and to_np(s.grad).tolist() == [0.0] * 3
    assert mt.normal(m, 1.0).grad_fn.name() == "NormalBackward1"
    assert mt.normal(0.0, s).grad_fn.name() == "NormalBackward2"
    p = mt.full((3,), 0.5, device=device, requires_grad=True)
    b = mt.bernoulli(p)
    assert b.grad_fn.name() == "BernoulliBackward0"
    b.sum().backward()
    assert to_np(p.grad).tolist() == [0.0] * 3


def test_inplace_sampler_through_a_view(device, gen):
    base = mt.zeros(16, device=device)
    base.view(4, 4).uniform_(5, 6, generator=gen)
    vals = to_np(base)
    assert ((vals >= 5) & (vals < 6)).all()
    a = mt.ones(16, device=device, requires_grad=True)
    y = a * 1
    y.view(4, 4).normal_(generator=gen)
    assert y.grad_fn.name() == "CopySlices"
    (y * 2).sum().backward()
    assert to_np(a.grad).tolist() == [0.0] * 16


def test_inplace_samplers_accept_tensor_parameters(device):
    x = mt.zeros(3, device=device).normal_(mt.tensor(0.0), 1.0)
    assert x.dtype is mt.float32
    y = mt.zeros(3, device=device).uniform_(mt.tensor(2.0), 3.0)
    assert (to_np(y) >= 2).all()
