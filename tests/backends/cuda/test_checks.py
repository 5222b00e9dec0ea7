"""Checks read at the next synchronisation, CUDA_LAUNCH_BLOCKING, and the sync debug mode."""
import warnings

import numpy as np
import pytest

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F


@pytest.fixture
def sync_mode():
    yield mt.cuda.set_sync_debug_mode
    mt.cuda.set_sync_debug_mode(0)


def test_sync_debug_mode_values(sync_mode):
    assert mt.cuda.get_sync_debug_mode() == 0
    for mode, value in (("warn", 1), ("error", 2), ("default", 0), (1, 1), (7, 2), (-3, 0)):
        sync_mode(mode)
        assert mt.cuda.get_sync_debug_mode() == value
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        sync_mode("loud")
    with pytest.raises(TypeError):
        sync_mode(1.5)
    assert mt.cuda.get_sync_debug_mode() == 0


def test_sync_debug_mode_reports_device_reads(device, sync_mode):
    x = mt.arange(4.0, device=device)
    y = (x * 2).sum()          # no synchronisation: no report even in "error"
    sync_mode("error")
    z = (y + 1) * x
    if device == "cpu":
        assert y.item() == 12.0   # host memory: reading it never waits for a device
        return
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
        y.item()
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
        print(z)
    sync_mode("warn")
    with pytest.warns(UserWarning, match="called a synchronizing CUDA operation"):
        assert z.tolist() == [0.0, 13.0, 26.0, 39.0]
    sync_mode("default")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.item() == 12.0


def _bad_lookup(device):
    w = mt.randn(5, 3, device=device)
    return w, F.embedding(mt.tensor([1, 7], device=device), w)


def test_range_check_waits_for_the_next_synchronisation(device):
    if device == "cpu":
        with pytest.raises(IndexError, match="index out of range in self"):
            _bad_lookup(device)
        return
    w, y = _bad_lookup(device)             # queued, not read
    z = y * 2                              # later work still runs
    with pytest.raises(IndexError, match="index out of range in self"):
        z.sum().item()
    # read once: the device keeps working and the error is not raised again
    assert z.shape == (2, 3)
    good = F.embedding(mt.tensor([4], device=device), w)
    np.testing.assert_allclose(good.cpu().numpy(), w[4:5].cpu().numpy())
    _bad_lookup(device)
    with pytest.raises(IndexError, match="index out of range in self"):
        mt.cuda.synchronize()
    mt.cuda.synchronize()


def test_launch_blocking_reads_checks_at_the_op(device, monkeypatch):
    if device == "cpu":
        pytest.skip("the CPU always checks at the op")
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    with pytest.raises(IndexError, match="index out of range in self"):
        _bad_lookup(device)


def test_embedding_step_runs_without_synchronising(device, sync_mode):
    if device == "cpu":
        pytest.skip("no device to wait for")
    mt.manual_seed(0)
    emb = mt.nn.Embedding(11, 8).to(device)
    head = mt.nn.Linear(8, 3).to(device)
    opt = mt.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.1)
    idx = mt.tensor([[1, 2, 3], [10, 0, 5]], device=device)
    sync_mode("error")
    for _ in range(2):
        loss = head(emb(idx)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
        loss.item()
    sync_mode("default")
    assert np.isfinite(loss.item())


def test_gpt_training_step_runs_without_synchronising(device, sync_mode):
    if device == "cpu":
        pytest.skip("no device to wait for")
    from minitorch_gpu.models.gpt import GPT, GPTConfig
    mt.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=0.1)).to(device)
    opt = mt.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    x = mt.randint(0, 17, (2, 8), device=device)
    y = mt.randint(0, 17, (2, 8), device=device)
    sync_mode("error")
    for _ in range(2):
        # embedding, attention with dropout, layer norm, cross-entropy, clipping and fused AdamW
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        mt.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
        loss.item()
    sync_mode("default")
    assert np.isfinite(loss.item())


def test_cross_entropy_target_check_waits_for_the_next_synchronisation(device):
    x = mt.randn(3, 5, device=device)
    t = mt.tensor([0, 7, -100], device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="Target 7 is out of bounds."):
            F.cross_entropy(x, t)
        return
    loss = F.cross_entropy(x, t)       # queued, not read
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        loss.item()
    ok = F.cross_entropy(x, mt.tensor([0, 4, -100], device=device))
    assert np.isfinite(ok.item())
    # every target ignored: 'mean' is NaN, as in PyTorch, and the gradient is zero
    xr = mt.randn(2, 5, device=device, requires_grad=True)
    empty = F.cross_entropy(xr, mt.tensor([-100, -100], device=device))
    empty.backward()
    assert np.isnan(empty.item()) and not xr.grad.abs().sum().item()
