"""A small GPT (decoder-only transformer language model), built only from the public ``minitorch_gpu.nn`` API.

The architecture is GPT-2's: token + learned position embeddings, ``n_layer`` pre-LayerNorm blocks of causal
multi-head self-attention and a GELU MLP, a final LayerNorm, and an output projection that shares its weight
with the token embedding. Weights start as in GPT-2: normal(0, 0.02), biases zero, and the residual output
projections scaled down by ``1/sqrt(2 * n_layer)`` so the residual stream's variance does not grow with depth.
"""
import math
from dataclasses import asdict, dataclass, fields

from .. import autograd
from .. import nn
from ..nn import functional as F
from ..ops.creation import arange
from ..ops.indexing import topk
from ..ops.random import multinomial
from ..ops.shape import cat
from ..ops.reduction import softmax

__all__ = ["GPTConfig", "GPT", "CausalSelfAttention", "MLP", "Block"]


@dataclass
class GPTConfig:
    """Sizes of a :class:`GPT`: vocabulary, context length (``block_size``), depth, heads, width, dropout
    probability, and whether Linear and LayerNorm layers have biases."""

    vocab_size: int = 256
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    bias: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"GPTConfig.{name} must be a positive integer, got {v!r}")
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"GPTConfig.n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or \
                not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must be a probability in [0, 1), got {self.dropout!r}")
        if not isinstance(self.bias, bool):
            raise ValueError(f"GPTConfig.bias must be a bool, got {self.bias!r}")

    def to_dict(self):
        """The fields as a plain dict (what checkpoints store)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        """Rebuild from :meth:`to_dict`'s output; unknown or missing keys raise ValueError."""
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown GPTConfig field(s): {', '.join(sorted(unknown))}")
        missing = names - set(d)
        if missing:
            raise ValueError(f"missing GPTConfig field(s): {', '.join(sorted(missing))}")
        return cls(**d)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which position ``t`` attends to positions ``<= t`` only."""

    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        # queries, keys and values in one matmul
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x, residual=None):
        """The attention output, or ``residual`` plus it when given (the dropout and the add in one pass)."""
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.c_proj(y)
        return self.resid_dropout(y) if residual is None else self.resid_dropout.dropout_add(residual, y)


class MLP(nn.Module):
    """The position-wise feed-forward layer: Linear to 4x width, GELU, Linear back."""

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x, residual=None):
        """The MLP output, or ``residual`` plus it when given (the dropout and the add in one pass)."""
        y = self.c_proj(self.gelu(self.c_fc(x)))
        return self.dropout(y) if residual is None else self.dropout.dropout_add(residual, y)


class Block(nn.Module):
    """One transformer block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = self.attn(self.ln_1(x), residual=x)
        return self.mlp(self.ln_2(x), residual=x)


class GPT(nn.Module):
    """A GPT language model: ``model(idx, targets)`` gives next-token logits of shape ``(B, T, vocab_size)``
    for token ids ``idx`` of shape ``(B, T)`` and, when ``targets`` (same shape; -1 = ignore) is given, their
    mean cross-entropy (otherwise ``None``). ``generate`` samples a continuation."""

    def __init__(self, config):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"GPT expects a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying: reading a token and predicting it use one matrix (fewer parameters, better small models)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        resid_std = 0.02 / math.sqrt(2 * config.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=resid_std)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self, non_embedding=True):
        """Number of parameters (the tied embedding counted once); without the position embedding by default,
        since it does no computation."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def forward(self, idx, targets=None):
        if idx.dim() != 2:
            raise ValueError(f"GPT expects token ids of shape (batch, time), got shape {tuple(idx.shape)}")
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"Cannot forward sequence of length {T}, block size is only {self.config.block_size}")
        pos = arange(0, T, dtype=idx.dtype, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    @autograd.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, *, generator=None):
        """Append ``max_new_tokens`` sampled tokens to ``idx`` (shape ``(B, T)``), feeding at most the last
        ``block_size`` tokens back each step. ``temperature`` scales the logits (lower = more conservative);
        ``top_k`` keeps only the k most likely tokens. Call ``model.eval()`` first to turn dropout off."""
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if top_k is not None and (not isinstance(top_k, int) or top_k <= 0):
            raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
        for _ in range(max_new_tokens):
            context = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(context)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                kth = topk(logits, min(top_k, logits.size(-1))).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = softmax(logits, dim=-1)
            nxt = multinomial(probs, num_samples=1, generator=generator)
            idx = cat((idx, nxt), dim=1)
        return idx
