"""nn.DataParallel in one process: replicas on CPU threads (device_ids=["cpu", "cpu"]) or on the GPU(s) of
the ``device`` fixture must give the module's own outputs and gradients."""
import copy
import warnings
from collections import namedtuple

import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import assert_close, to_np

F = mt.nn.functional


def replica_devices(device):
    if device == "cpu":
        return ["cpu", "cpu", "cpu"]
    return list(range(mt.cuda.device_count()))


class TwoHeads(mt.nn.Module):
    Out = namedtuple("Out", ["logits", "aux"])

    def __init__(self):
        super().__init__()
        self.body = mt.nn.Linear(5, 8)
        self.head = mt.nn.Linear(8, 3)
        self.aux = mt.nn.Linear(8, 1)

    def forward(self, x, scale=1.0, extra=None):
        h = mt.tanh(self.body(x)) * scale
        out = {"logits": self.head(h), "aux": self.aux(h)}
        if extra is not None:
            out["extra"] = extra * 2
        return out


def test_outputs_and_gradients_match_the_module(device):
    mt.manual_seed(0)
    net = mt.nn.Sequential(mt.nn.Linear(6, 16), mt.nn.ReLU(), mt.nn.Linear(16, 4)).to(device)
    ref = copy.deepcopy(net)
    dp = mt.nn.DataParallel(net, device_ids=replica_devices(device))
    x = mt.randn(10, 6, device=device)
    y = mt.randn(10, 4, device=device)
    out = dp(x)
    assert out.shape == (10, 4) and out.device == x.device
    assert_close(out, ref(x))
    F.mse_loss(out, y).backward()
    F.mse_loss(ref(x), y).backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        assert_close(p.grad, q.grad)  # the replicas' gradients are summed onto the source parameters


def test_training_matches_single_device(device):
    mt.manual_seed(1)
    net = mt.nn.Sequential(mt.nn.Linear(4, 12), mt.nn.Tanh(), mt.nn.Linear(12, 2)).to(device)
    ref = copy.deepcopy(net)
    dp = mt.nn.DataParallel(net, device_ids=replica_devices(device))
    opt = mt.optim.SGD(dp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    g = mt.Generator().manual_seed(3)
    for _ in range(5):
        x, y = mt.randn(9, 4, generator=g).to(device), mt.randn(9, 2, generator=g).to(device)
        opt.zero_grad()
        F.mse_loss(dp(x), y).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        ref_opt.step()
    for p, q in zip(net.parameters(), ref.parameters()):
        assert_close(p, q)


def test_dict_outputs_kwargs_and_non_tensor_arguments():
    mt.manual_seed(2)
    net = TwoHeads()
    dp = mt.nn.DataParallel(net, device_ids=["cpu", "cpu"])
    x = mt.randn(7, 5)
    extra = mt.arange(7.0)
    out = dp(x, scale=0.5, extra=extra)
    want = net(x, scale=0.5, extra=extra)
    assert set(out) == {"logits", "aux", "extra"}
    for k in out:
        assert_close(out[k], want[k])
    (out["logits"].sum() + out["aux"].sum()).backward()
    assert net.body.weight.grad is not None and net.aux.bias.grad is not None


def test_scatter_along_another_dim():
    lin = mt.nn.Linear(4, 3)

    class Cols(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):  # x: [features=4, batch]
            return self.lin(x.t()).t()

    net = Cols()
    dp = mt.nn.DataParallel(net, device_ids=["cpu", "cpu"], dim=1)
    x = mt.randn(4, 6, requires_grad=True)
    out = dp(x)
    assert out.shape == (3, 6)
    assert_close(out, net(x))
    out.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    net(x2).sum().backward()
    assert_close(x.grad, x2.grad)  # gradients flow back through the scatter to the input


def test_small_batch_uses_fewer_replicas_and_scalars_gather_to_a_vector():
    class Mean(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = mt.nn.Parameter(mt.ones(3))

        def forward(self, x):
            return (x * self.w).sum()

    dp = mt.nn.DataParallel(Mean(), device_ids=["cpu"] * 4)
    x = mt.ones(2, 3)  # two rows: only two replicas run
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = dp(x)
    assert out.tolist() == [3.0, 3.0]
    assert any("all input tensors were scalars" in str(c.message) for c in caught)


def test_replicas_share_source_parameters_and_first_replica_updates_buffers():
    mt.manual_seed(4)
    net = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.BatchNorm1d(4))
    reps = mt.nn.parallel.replicate(net, ["cpu", "cpu"])
    assert len(reps) == 2 and reps[0] is not net
    assert reps[0][0].weight is net[0].weight  # on the source device the "copy" is the parameter itself
    assert reps[0][1].running_mean is net[1].running_mean
    assert reps[1][1].running_mean is not net[1].running_mean
    dp = mt.nn.DataParallel(net, device_ids=["cpu", "cpu"])
    before = net[1].running_mean.clone()
    x = mt.randn(8, 3)
    dp(x)
    assert not np.allclose(to_np(net[1].running_mean), to_np(before))
    # PyTorch's semantics: the running statistics come from the first replica's chunk
    expected = copy.deepcopy(net)
    expected[1].running_mean.copy_(before)
    expected[1].num_batches_tracked.zero_()
    expected(x[:4])
    assert_close(net[1].running_mean, expected[1].running_mean)


def test_no_grad_replicas_are_detached():
    net = mt.nn.Linear(3, 2)
    dp = mt.nn.DataParallel(net, device_ids=["cpu", "cpu"])
    with mt.no_grad():
        out = dp(mt.randn(4, 3))
    assert not out.requires_grad
    reps = mt.nn.parallel.replicate(net, ["cpu", "cpu"], detach=True)
    assert not reps[1].weight.requires_grad


def test_exception_in_a_replica_is_reraised_with_its_origin():
    class Picky(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = mt.nn.Parameter(mt.ones(1))

        def forward(self, x):
            if x[0, 0].item() > 0:
                raise ValueError("positive first element")
            return x * self.w

    dp = mt.nn.DataParallel(Picky(), device_ids=["cpu", "cpu"])
    x = mt.tensor([[-1.0], [1.0]])
    with pytest.raises(ValueError, match="Caught ValueError in replica 1 on device cpu"):
        dp(x)


def test_module_on_the_wrong_device_is_refused():
    prev = mt.cuda.use_simulator(True)
    try:
        dp = mt.nn.DataParallel(mt.nn.Linear(2, 2), device_ids=["cpu", "cpu"])
        dp.module.to("cuda")
        with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cpu "
                                               r"\(device_ids\[0\]\) but found one of them on device: cuda:0"):
            dp(mt.ones(2, 2))
    finally:
        mt.cuda.use_simulator(prev)


def test_simulated_gpu_single_device():
    prev = mt.cuda.use_simulator(True)
    try:
        net = mt.nn.Linear(3, 2)
        dp = mt.nn.DataParallel(net)  # all GPUs: the simulator has one
        assert dp.device_ids == [0] and dp.output_device == 0
        assert net.weight.device.type == "cuda"  # a one-GPU DataParallel moves the module there
        out = dp(mt.ones(4, 3, device="cuda"))
        assert out.device.type == "cuda" and out.shape == (4, 2)
    finally:
        mt.cuda.use_simulator(prev)


def test_without_devices_it_is_the_module():
    if mt.cuda.is_available():
        pytest.skip("with a GPU, device_ids=None means every GPU")
    net = mt.nn.Linear(3, 2)
    dp = mt.nn.DataParallel(net)
    assert dp.device_ids == []
    x = mt.randn(2, 3)
    assert_close(dp(x), net(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]


def test_functional_form_and_argument_checks():
    net = mt.nn.Linear(3, 2)
    x = mt.randn(6, 3)
    assert_close(mt.nn.parallel.data_parallel(net, x, device_ids=["cpu", "cpu"]), net(x))
    with pytest.raises(TypeError, match="expects a minitorch_gpu.nn.Module"):
        mt.nn.DataParallel(lambda t: t, device_ids=["cpu"])
    with pytest.raises(ValueError, match="must not be empty"):
        mt.nn.DataParallel(net, device_ids=[])
    with pytest.raises(ValueError, match="all be GPUs or all be CPUs"):
        mt.nn.DataParallel(net, device_ids=["cpu", 0])


def test_scatter_gather_structures():
    from minitorch_gpu.nn.parallel import gather, scatter
    Pair = namedtuple("Pair", ["a", "b"])
    parts = scatter((mt.arange(6.0), [mt.ones(6, 2)], {"k": mt.zeros(6)}, "tag", Pair(mt.arange(6.0), 3)),
                    ["cpu", "cpu", "cpu"])
    assert len(parts) == 3
    assert parts[1][0].tolist() == [2.0, 3.0] and parts[2][1][0].shape == (2, 2)
    assert parts[0][2]["k"].shape == (2,) and parts[0][3] == "tag"
    assert isinstance(parts[2][4], Pair) and parts[2][4].a.tolist() == [4.0, 5.0] and parts[2][4].b == 3
    back = gather([(p[0], None) for p in parts], "cpu")
    assert back[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and back[1] is None
