"""device objects, the default device, and ``mt.cuda`` on machines with and without a GPU."""
import pickle

import pytest

import minitorch_gpu as mt

needs_no_gpu = pytest.mark.skipif(mt.cuda.is_available(), reason="checks behaviour without a GPU")

VALID = ["cpu", "cuda", "cuda:0", "cuda:1", "cuda:12", "cpu:0", "cpu:1"]
INVALID = ["", "CUDA", "foo", "gpu:0", "cuda:", "cuda:-1", "cuda:01", "cuda:x", "cuda:1:2", " cuda", "cuda:1 ",
           "cuda 1"]


@pytest.fixture
def restore_default_device():
    old = mt.get_default_device()
    yield
    mt.set_default_device(old)


@pytest.mark.parametrize("s", VALID)
def test_parse_valid_strings_like_torch(torch, s):
    d, t = mt.device(s), torch.device(s)
    assert (d.type, d.index) == (t.type, t.index)
    assert str(d) == str(t)
    assert repr(d) == repr(t)


@pytest.mark.parametrize("s", INVALID)
def test_parse_invalid_strings_raise_runtime_error_like_torch(torch, s):
    with pytest.raises(RuntimeError):
        torch.device(s)
    with pytest.raises(RuntimeError):
        mt.device(s)


@pytest.mark.parametrize("args", [("cuda", 0), ("cuda", 3), ("cpu", 0)])
def test_type_and_index_like_torch(torch, args):
    d, t = mt.device(*args), torch.device(*args)
    assert (d.type, d.index, str(d), repr(d)) == (t.type, t.index, str(t), repr(t))
    assert mt.device(type=args[0], index=args[1]) == d


@pytest.mark.parametrize("args,exc", [(("cuda", -1), RuntimeError), (("cuda:1", 2), RuntimeError),
                                      (("cuda", "1"), TypeError), ((1.0,), TypeError), ((True,), TypeError),
                                      ((-1,), RuntimeError)])
def test_bad_arguments_error_types_like_torch(torch, args, exc):
    with pytest.raises(exc):
        mt.device(*args)
    with pytest.raises(exc):
        torch.device(*args)


def test_int_is_a_cuda_ordinal():
    assert mt.device(1) == mt.device("cuda", 1)


def test_device_from_device_is_itself_and_rejects_index():
    d = mt.device("cuda:1")
    assert mt.device(d) is d
    with pytest.raises(TypeError):
        mt.device(d, 0)


def test_equality_and_hash_like_torch(torch):
    assert mt.device("cuda:1") == mt.device("cuda", 1)
    assert mt.device("cuda:0") != mt.device("cuda")
    assert (mt.device("cpu:0") == mt.device("cpu")) == (torch.device("cpu:0") == torch.device("cpu"))
    assert (mt.device("cpu") == "cpu") == (torch.device("cpu") == "cpu")
    assert len({mt.device("cuda:1"), mt.device("cuda", 1), mt.device("cpu")}) == 2
    assert hash(mt.device("cuda:2")) == hash(mt.device("cuda", 2))


def test_device_is_immutable_and_picklable():
    d = mt.device("cuda:3")
    with pytest.raises(AttributeError):
        d.index = 1
    assert pickle.loads(pickle.dumps(d)) == d


def test_tensor_device(device):
    x = mt.zeros(2, device=device)
    assert x.device.type == mt.device(device).type
    assert x.is_cuda == (x.device.type == "cuda")
    assert x.is_cpu == (x.device.type == "cpu")


def test_cpu_with_index_is_the_cpu(torch):
    x = mt.zeros(2, device="cpu:0")
    assert x.device == mt.device("cpu") == mt.zeros(1).device
    assert str(x.device) == str(torch.zeros(2, device="cpu:0").device)
    assert mt.add(x, mt.ones(2)).tolist() == [1.0, 1.0]


def test_default_device_affects_factories(restore_default_device):
    assert mt.get_default_device() == mt.device("cpu")
    mt.set_default_device("cpu")
    assert mt.zeros(2).device.type == "cpu"
    assert mt.tensor([1, 2]).device.type == "cpu"
    mt.set_default_device(None)
    assert mt.get_default_device() == mt.device("cpu")


@needs_no_gpu
def test_default_cuda_device_without_gpu_makes_factories_raise(restore_default_device):
    mt.set_default_device("cuda")
    assert mt.get_default_device() == mt.device("cuda")
    for make in (lambda: mt.zeros(2), lambda: mt.tensor([1.0]), lambda: mt.arange(3), lambda: mt.rand(2)):
        with pytest.raises(RuntimeError, match="CUDA"):
            make()
    mt.set_default_device("cpu")
    assert mt.zeros(1).device.type == "cpu"


def test_device_as_context_manager_sets_default(restore_default_device):
    with mt.device("cpu") as d:
        assert d == mt.device("cpu")
        assert mt.get_default_device() == mt.device("cpu")
        assert mt.ones(1).device.type == "cpu"
    with mt.device("cuda:5"):
        assert mt.get_default_device() == mt.device("cuda:5")
    assert mt.get_default_device() == mt.device("cpu")


@needs_no_gpu
def test_cuda_module_without_gpu():
    assert mt.cuda.is_available() is False
    assert mt.cuda.device_count() == 0
    assert mt.cuda.is_initialized() is False
    for fn in (mt.cuda.current_device, lambda: mt.cuda.set_device(0), mt.cuda.synchronize,
               mt.cuda.initial_seed, mt.cuda.get_rng_state, lambda: mt.cuda.set_device("cuda:1")):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            fn()
    # seeding is a silent no-op without a GPU, as in PyTorch
    mt.cuda.manual_seed(3)
    mt.cuda.manual_seed_all(3)
    mt.cuda.seed_all()
    assert mt.cuda.default_generators == ()
    mt.cuda.set_device(-1)  # a negative index is a no-op
    with mt.cuda.device(None):
        pass


@needs_no_gpu
def test_moving_to_missing_gpu_raises_clearly():
    x = mt.ones(2)
    for move in (lambda: x.to("cuda:7"), lambda: x.cuda(), lambda: x.cuda(7), lambda: mt.zeros(2, device="cuda:7"),
                 lambda: mt.ones(2, device=mt.device("cuda", 0)), lambda: mt.Generator("cuda")):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            move()
    assert x.device.type == "cpu"


@pytest.mark.skipif(not mt.cuda.is_available(), reason="needs a GPU")
def test_missing_ordinal_raises_clearly_with_gpu():
    n = mt.cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mt.ones(2).to(f"cuda:{n + 7}")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mt.cuda.set_device(n + 7)
    assert mt.cuda.current_device() in range(n)
    mt.cuda.synchronize()


def test_set_device_rejects_cpu():
    if mt.cuda.is_available():
        with pytest.raises(ValueError):
            mt.cuda.set_device("cpu")
    else:
        with pytest.raises((ValueError, RuntimeError)):
            mt.cuda.set_device("cpu")
