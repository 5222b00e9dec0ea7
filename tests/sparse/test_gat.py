"""A graph attention network written once against the torch API and run on both libraries: attention scores on
the edges become a sparse COO matrix, ``torch.sparse.softmax`` normalises them per node, ``torch.sparse.mm``
aggregates the dense features, a fixed (and a learned) sparse adjacency propagates them again, and a Linear and
cross-entropy finish. Losses, gradients (the learned adjacency's included, sparse) and a few Adam steps match
PyTorch's from the same weights."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

N_NODES, N_FEAT, N_HID, N_CLS = 12, 6, 8, 3


def _graph(rng):
    """Random directed edges plus self loops, deduplicated: (2, E) int64."""
    src = rng.integers(0, N_NODES, 30)
    dst = rng.integers(0, N_NODES, 30)
    loops = np.arange(N_NODES)
    lin = np.unique(np.concatenate([src * N_NODES + dst, loops * N_NODES + loops]))
    return np.stack([lin // N_NODES, lin % N_NODES])


def _model(m):
    nn, F = m.nn, m.nn.functional

    class GAT(nn.Module):
        def __init__(self):
            super().__init__()
            self.W = nn.Linear(N_FEAT, N_HID, bias=False)
            self.a_src = nn.Parameter(m.randn(N_HID, dtype=m.float64) * 0.3)
            self.a_dst = nn.Parameter(m.randn(N_HID, dtype=m.float64) * 0.3)
            self.out = nn.Linear(N_HID, N_CLS)

        def forward(self, x, edges, adj):
            h = self.W(x)
            src, dst = edges[0], edges[1]
            scores = F.leaky_relu((h[src] * self.a_src).sum(1) + (h[dst] * self.a_dst).sum(1), 0.2)
            att = m.sparse.softmax(m.sparse_coo_tensor(edges, scores, (N_NODES, N_NODES)), dim=1)
            h = F.elu(m.sparse.mm(att, h))
            h = m.sparse.mm(adj, h) + adj.t() @ h
            return self.out(h)

    return GAT().double()


def _copy_weights(ours, theirs, device):
    with mt.no_grad():
        for (name, p), (name_t, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert name == name_t
            p.copy_(mt.tensor(pt.detach().numpy()))
    return ours.to(device)


@pytest.fixture
def setup(device, torch):
    rng = np.random.default_rng(5)
    edges = _graph(rng)
    x = rng.standard_normal((N_NODES, N_FEAT))
    y = rng.integers(0, N_CLS, N_NODES)
    deg = np.bincount(edges[0], minlength=N_NODES)
    norm = 1.0 / np.sqrt(deg[edges[0]] * deg[edges[1]])  # GCN's symmetric normalisation, a constant
    torch.manual_seed(0)
    model_t = _model(torch)
    model = _copy_weights(_model(mt), model_t, device)
    ours = dict(x=mt.tensor(x, device=device), edges=mt.tensor(edges, device=device),
                adj=mt.sparse_coo_tensor(edges, norm, (N_NODES, N_NODES), device=device, requires_grad=True),
                y=mt.tensor(y, device=device), model=model)
    theirs = dict(x=torch.tensor(x), edges=torch.tensor(edges),
                  adj=torch.sparse_coo_tensor(torch.tensor(edges), torch.tensor(norm), (N_NODES, N_NODES),
                                              requires_grad=True),
                  y=torch.tensor(y), model=model_t)
    return ours, theirs


def _loss(m, s):
    return m.nn.functional.cross_entropy(s["model"](s["x"], s["edges"], s["adj"]), s["y"])


def test_gat_loss_and_gradients_match_torch(setup, torch):
    ours, theirs = setup
    loss, loss_t = _loss(mt, ours), _loss(torch, theirs)
    assert_close(loss, loss_t.detach().numpy(), rtol=1e-12, atol=1e-12)
    loss.backward()
    loss_t.backward()
    for (name, p), (_, pt) in zip(ours["model"].named_parameters(), theirs["model"].named_parameters()):
        assert_close(p.grad, pt.grad.numpy(), rtol=1e-10, atol=1e-12)
    # the learned adjacency: torch.sparse.mm gives it a sparse gradient, ``adj.t() @ h`` a dense one (as in
    # PyTorch), so their sum is dense
    g, gt = ours["adj"].grad, theirs["adj"].grad
    assert g.is_sparse == gt.is_sparse
    assert_close(g, gt.numpy(), rtol=1e-10, atol=1e-12)


def test_gat_gradient_of_a_sparse_adjacency_is_sparse(setup, torch):
    # without the dense product, the adjacency's gradient is sparse, on its coordinates, as PyTorch's
    ours, theirs = setup
    for s, m in ((ours, mt), (theirs, torch)):
        s["model"].forward = lambda x, edges, adj, model=s["model"], m=m: model.out(m.sparse.mm(adj, model.W(x)))
    _loss(mt, ours).backward()
    _loss(torch, theirs).backward()
    g, gt = ours["adj"].grad, theirs["adj"].grad
    assert g.is_sparse and gt.is_sparse and g._nnz() == gt._nnz()
    assert_close(g.to_dense(), gt.to_dense().numpy(), rtol=1e-10, atol=1e-12)


def test_gat_trains_like_torch(setup, torch):
    ours, theirs = setup
    opt = mt.optim.Adam(ours["model"].parameters(), lr=0.05)
    opt_t = torch.optim.Adam(theirs["model"].parameters(), lr=0.05)
    losses, losses_t = [], []
    for _ in range(4):
        for o, s, m, acc in ((opt, ours, mt, losses), (opt_t, theirs, torch, losses_t)):
            o.zero_grad()
            loss = _loss(m, s)
            loss.backward()
            o.step()
            acc.append(loss.item())
    np.testing.assert_allclose(losses, losses_t, rtol=1e-10)
    assert losses[-1] < losses[0]
    for p, pt in zip(ours["model"].parameters(), theirs["model"].parameters()):
        np.testing.assert_allclose(to_np(p), pt.detach().numpy(), rtol=1e-9, atol=1e-12)
