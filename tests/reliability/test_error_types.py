"""Bad input raises the exception type PyTorch raises, with its message, so that a ported ``except`` clause
catches the same thing: each case runs against PyTorch as the oracle."""
import pytest

import minitorch_gpu as mt

CASES = {
    # allocation failure and size overflow (the backend's allocation primitives)
    "alloc empty": lambda L, d: L.empty(1 << 50, device=d),
    "alloc zeros": lambda L, d: L.zeros(1 << 45, dtype=L.float64, device=d),
    "alloc full": lambda L, d: L.full((1 << 50,), 2.0, device=d),
    "alloc randn": lambda L, d: L.randn(1 << 50, device=d),
    "storage overflow": lambda L, d: L.empty(1 << 62, 1 << 62, device=d),
    "storage overflow 3d": lambda L, d: L.zeros(1 << 40, 1 << 40, 1 << 40, device=d),
    "storage overflow randn": lambda L, d: L.randn(1 << 62, 4, device=d),
    "storage overflow bytes": lambda L, d: L.empty((1 << 63) - 1, device=d),
    "size past int64": lambda L, d: L.zeros(1 << 63, device=d),
    "size past int64 second": lambda L, d: L.ones(1, 1 << 64, device=d),
    # index ranges
    "index_select past end": lambda L, d: L.arange(5.0, device=d).index_select(0, L.tensor([7], device=d)),
    "index_select negative": lambda L, d: L.arange(5.0, device=d).index_select(0, L.tensor([-1], device=d)),
    "index_add_ past end": lambda L, d: L.zeros(5, device=d).index_add_(0, L.tensor([7], device=d),
                                                                       L.ones(1, device=d)),
    "index_add past end": lambda L, d: L.zeros(2, 3, device=d).index_add(1, L.tensor([0, 3], device=d),
                                                                        L.ones(2, 2, device=d)),
    "index_add_ middle dim": lambda L, d: L.zeros(2, 3, 2, device=d).index_add_(1, L.tensor([5], device=d),
                                                                           L.ones(2, 1, 2, device=d)),
    "index_select dim 0 of 2-d": lambda L, d: L.zeros(2, 3, device=d).index_select(0, L.tensor([3], device=d)),
    "index_select dim 1": lambda L, d: L.zeros(2, 3, device=d).index_select(1, L.tensor([3], device=d)),
    "index_select dim 2": lambda L, d: L.zeros(2, 3, 2, device=d).index_select(2, L.tensor([3], device=d)),
    # dtype arguments
    "zeros dtype name": lambda L, d: L.zeros(3, dtype="float32", device=d),
    "ones dtype name": lambda L, d: L.ones(3, dtype="float32", device=d),
    "empty dtype name": lambda L, d: L.empty(3, dtype="int64", device=d),
    "full dtype name": lambda L, d: L.full((2,), 1.0, dtype="float32", device=d),
    "tensor dtype name": lambda L, d: L.tensor([1.0], dtype="float32", device=d),
    "rand dtype name": lambda L, d: L.rand(2, dtype="float32", device=d),
    "zeros numpy dtype": lambda L, d: L.zeros(3, dtype=__import__("numpy").float32, device=d),
    # data of the wrong kind
    "tensor of a string": lambda L, d: L.tensor(["a"], device=d),
    "tensor of strings": lambda L, d: L.tensor([["a", "b"]], device=d),
    "tensor string first": lambda L, d: L.tensor(["a", 1], device=d),
    "tensor string later": lambda L, d: L.tensor([1, "a"], device=d),
    "tensor string in a later row": lambda L, d: L.tensor([[1], ["a"]], device=d),
    "tensor bare string": lambda L, d: L.tensor("a", device=d),
    # bitwise ops on floats
    "and floats": lambda L, d: L.ones(2, device=d) & L.ones(2, device=d),
    "or floats": lambda L, d: L.ones(2, device=d) | L.ones(2, device=d),
    "xor floats": lambda L, d: L.ones(2, device=d) ^ L.ones(2, device=d),
    "and double scalar": lambda L, d: L.ones(2, dtype=L.float64, device=d) & 1,
    "and int with float": lambda L, d: L.ones(2, dtype=L.int64, device=d) & L.ones(2, device=d),
    "and float scalar": lambda L, d: L.ones(2, dtype=L.int64, device=d) & 1.5,
    "in-place and": lambda L, d: L.ones(2, device=d).__iand__(L.ones(2, device=d)),
    "invert float": lambda L, d: ~L.ones(2, device=d),
}
# messages that name a device-specific kernel or allocator: the type is compared on every device, the
# message where the oracle runs the same device (cpu)
_CPU_WORDED = ("alloc", "and", "or ", "xor", "in-place")
# PyTorch's message lists every overload of the function: the type is what a port relies on
_TYPE_ONLY = {"rand dtype name"}
# a CUDA kernel allocates its own output (backends/cuda/launch.py), outside the allocation primitives
_CPU_ONLY = {"alloc randn", "storage overflow randn"}


def _outcome(lib, case, device):
    try:
        CASES[case](lib, device)
    except Exception as e:  # noqa: BLE001 - the point is which exception
        return type(e), str(e).splitlines()[0]
    return None, None


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_type_matches_pytorch(torch, device, case):
    if device != "cpu" and case in _CPU_ONLY:
        pytest.skip("a kernel's output is allocated by the launcher")
    want_type, want_msg = _outcome(torch, case, "cpu")
    assert want_type is not None, "the oracle accepted the input"
    got_type, got_msg = _outcome(mt, case, device)
    # PyTorch's OutOfMemoryError is a RuntimeError subclass; match the builtin at the root of its class
    want_root = next(c for c in want_type.__mro__ if c.__module__ == "builtins")
    assert got_type is want_root, f"{case}: {got_type.__name__ if got_type else 'no error'} ({got_msg}), " \
                                  f"PyTorch: {want_type.__name__} ({want_msg})"
    if case not in _TYPE_ONLY and (device == "cpu" or not case.startswith(_CPU_WORDED)):
        # PyTorch's first line of a multi-line message can end inside a quotation
        assert got_msg.rstrip('"') == want_msg.rstrip('"')


def test_refused_input_leaves_objects_unchanged(device):
    x = mt.zeros(5, device=device)
    with pytest.raises(IndexError):
        x.index_add_(0, mt.tensor([1, 7], device=device), mt.ones(2, device=device))
    assert x.cpu().numpy().tolist() == [0.0] * 5
    assert x._version == 0
    g = mt.Generator(device).manual_seed(3)
    with pytest.raises(TypeError):
        mt.rand(2, dtype="float32", generator=g, device=device)
    assert g.get_offset() == 0
