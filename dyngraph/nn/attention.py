"""MultiheadAttention with PyTorch's parameters (``in_proj_weight``, ``in_proj_bias``,
``out_proj``), masks and ``batch_first``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..engine.tensor import Tensor
from . import functional as F
from . import init
from .linear import Linear, _empty
from .module import Module


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention's ``out_proj`` (a plain Linear)."""


class MultiheadAttention(Module):
    """Scaled dot-product attention over ``num_heads`` heads.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``.
    Boolean masks mark positions that may *not* be attended (True); float masks are added
    to the scores.

    >>> import dyngraph as torch
    >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = torch.randn(3, 5, 8)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    (dyngraph.Size([3, 5, 8]), dyngraph.Size([3, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (
                vdim not in (None, embed_dim)):
            raise NotImplementedError("dyngraph's MultiheadAttention supports no add_bias_kv, "
                                      "add_zero_attn, or kdim/vdim different from embed_dim")
        self.embed_dim = embed_dim
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.in_proj_weight = _empty(3 * embed_dim, embed_dim, dtype=dtype, device=device)
        if bias:
            self.in_proj_bias = _empty(3 * embed_dim, dtype=dtype, device=device)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype, device=device)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _project(self, query: Tensor, key: Tensor, value: Tensor
                 ) -> tuple[Tensor, Tensor, Tensor]:
        w, b, e = self.in_proj_weight, self.in_proj_bias, self.embed_dim
        if query is key and key is value:
            qkv = F.linear(query, w, b)  # self-attention: one matmul, then split
            return qkv[..., :e], qkv[..., e:2 * e], qkv[..., 2 * e:]
        parts = []
        for i, x in enumerate((query, key, value)):
            parts.append(F.linear(x, w[i * e:(i + 1) * e],
                                  None if b is None else b[i * e:(i + 1) * e]))
        return parts[0], parts[1], parts[2]

    def _heads(self, x: Tensor) -> Tensor:
        n, length = x.shape[0], x.shape[1]
        return x.reshape(n, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.ndim == 3
        if not batched:
            query, key, value = (t.reshape(1, *t.shape) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.reshape(1, -1)
        elif not self.batch_first:
            # (L, N, E) -> (N, L, E); keep self-attention's q is k is v identity.
            same_kv = key is value
            same_qk = query is key
            query = query.transpose(0, 1)
            key = query if same_qk else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, "
                                 f"but got {query.shape[-1]}")
        n, tgt_len, src_len = query.shape[0], query.shape[1], key.shape[1]
        q, k, v = self._project(query, key, value)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)
        mask = self._merged_mask(attn_mask, key_padding_mask, is_causal, n, tgt_len, src_len,
                                 scores._array.dtype)
        if mask is not None:
            scores = scores + mask
        weights = F.softmax(scores, dim=-1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, self.dropout)
        out = (weights @ v).transpose(1, 2).reshape(n, tgt_len, self.embed_dim)
        out = self.out_proj(out)
        if not batched:
            out = out.reshape(tgt_len, self.embed_dim)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            weights = weights.reshape(*weights.shape[1:])
        return out, weights

    def _merged_mask(self, attn_mask: Any, key_padding_mask: Any, is_causal: bool, n: int,
                     tgt_len: int, src_len: int, dtype: Any) -> Any:
        if is_causal and attn_mask is None:
            attn_mask = np.triu(np.ones((tgt_len, src_len), dtype=bool), k=1)
        mask = F.additive_mask(attn_mask, tgt_len, src_len, dtype)
        if mask is not None:
            shape = tuple(mask.shape)
            if len(shape) == 3:  # (N * num_heads, L, S)
                if shape[0] != n * self.num_heads:
                    raise RuntimeError(f"The shape of the 3D attn_mask is {shape}, but should "
                                       f"be {(n * self.num_heads, tgt_len, src_len)}.")
                mask = mask.reshape(n, self.num_heads, tgt_len, src_len)
            elif shape != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
        pad = F.additive_mask(key_padding_mask, tgt_len, src_len, dtype)
        if pad is not None:
            if tuple(pad.shape) != (n, src_len):
                raise AssertionError(f"expecting key_padding_mask shape of {(n, src_len)}, "
                                     f"but got {tuple(pad.shape)}")
            pad = pad.reshape(n, 1, 1, src_len)
            mask = pad if mask is None else mask + pad
        return mask

    def extra_repr(self) -> str:
        return ""
