"""``torch.linalg``: decompositions, solves, inverses, determinants, norms and products.

>>> import minitorch_gpu as torch
>>> A = torch.tensor([[4., 2.], [2., 3.]])
>>> torch.linalg.solve(A, torch.tensor([2., 1.]))
tensor([0.5000, 0.0000])

Each function is an op of ``ops/`` (``decomposition.py`` for the factorisations and norms, ``linalg.py`` for the
products, ``reduction.py`` for ``vector_norm``); this module only gives them their ``torch.linalg`` names.
"""
from .ops.decomposition import LinAlgError, cholesky, det, eigh, eigvalsh, inv, lstsq, matrix_norm, pinv, qr, \
    solve, svd, svdvals
from .ops.decomposition import linalg_norm as norm
from .ops.decomposition import linalg_slogdet as slogdet
from .ops.linalg import einsum, matmul
from .ops.reduction import vector_norm

__all__ = ["LinAlgError", "cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm", "norm", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm", "matmul", "einsum"]
