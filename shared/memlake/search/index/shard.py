"""One index shard: BM25 postings and passage vectors for a group of episodes, as one object.

A shard is immutable once written. Its object is an uncompressed .npz (named .npy arrays plus a
JSON header, loaded with allow_pickle=False, the way bm25s saves an index):

    header   JSON: format, model, dim, k1, b
    ids      episode ids, '\\n'-joined UTF-8        seq      commit version of each doc
    t_start  when each episode happened (us, UTC)  t_end    its end (us)
    ctx      context number per doc (-1: none)     doc_len  weighted term count per doc
    vocab    terms, '\\n'-joined (sorted)          indptr   CSC over terms (len(vocab) + 1)
    indices  doc of each posting                   tf       term frequency of each posting
    vectors  passage vectors (rows x dim, unit)    chunk_doc  doc of each vector (ascending)

Format 2 adds the episode's passages (memlake.search.index.passages: ALL of them, also those whose
vectors are pending, the title/summary/tags passage too), each a BM25 "doc" of its own:

    p_doc    doc of each passage (ascending)       p_start, p_end  offsets in content (-1: header)
    p_len    term count of each passage            p_indptr  CSC over the same vocab
    p_indices  passage of each posting             p_tf     term frequency (uint16)
    chunk_passage  passage of each vector row (-1: a placeholder row, nothing embedded yet)

A format-1 shard still loads and searches (episode-level BM25, no passage offsets); the layout
rebuilds it in format 2 (memlake.search.index.layout).

BM25 is the `lucene` variant of bm25s (k1 1.5, b 0.75): score(d) = sum over query terms t of
idf(t) * tf / (tf + k1 * (1 - b + b * len(d) / avgdl)). The shard keeps the raw term
frequencies; the tf part is computed at load (passages against the average passage length) and
idf at query time from the episode document frequencies of every shard searched, so scores are
comparable across shards and between episodes and passages: each term adds at most its idf, so
a score over the query's total idf is in 0..1 (the share of the query matched, saturated).
A filter multiplies the scores by a 0/1 weight mask before top-k, as bm25s's weight_mask does.

Format 3 adds, to a shard of at least ivf.IVF_MIN_ROWS vector rows, an IVF index with 8-bit
codes trained when the shard is written (ivf_centroids, ivf_sq, ivf_offsets, ivf_rows,
ivf_codes: memlake.search.index.ivf); format 4 codes its lists with 4-bit PQ for FAISS's fast-scan
(ivf_pq: memlake.search.index.ivf_codes, decision 1316). Formats 2 and 3 still load and
search; the layout rebuilds a format-2 shard from its stored vectors, and a format-3 one when
a merge or purge rewrites it anyway. Format 5 stores the `vectors` of a shard with an IVF index
in half precision (float16: the exact re-score converts the rows it reads; cosines move by at
most ~6e-5, decision 2504), so a tenant's shards take ~40% fewer bytes in memory, on disk and
in a cold search's reads; a shard without one keeps float32 (its flat scan is FAISS's).

Vectors: inner product over unit vectors, i.e. cosine. A shard with the IVF index probes
ivf.NPROBE lists (more when they hold too few allowed rows; a filter leaving few rows scans
them exactly); one without it, of fewer than SQ8_MIN_ROWS rows, is scanned exactly (FAISS
IndexFlatIP), a bigger one scans 8-bit codes built when first searched (decision 1202). Codes
give candidates only: RESCORE times the rows wanted are re-scored exactly from the stored
vectors, so the scores returned are exact cosines (docs/decisions/1202, 1301); a search over
many shards re-scores only the candidates above one cutoff across them (1318). Filters are a
FAISS IDSelectorBitmap over vector rows, so the top-k is taken among allowed rows only. The
vector search is memlake.search.index.shard_vectors (ShardVectors), BM25 shard_bm25 (Bm25Postings).
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memlake.errors import MemlakeError
from memlake.search.index import ivf, shard_vectors, vector_scan
from memlake.search.index.arrays import F32, I32, I64
from memlake.search.index.shard_bm25 import Bm25Postings
from memlake.search.index.shard_ivf import ShardIvf
from memlake.search.index.shard_source import (
    LIST_VECTORS,
    RANGED_COPIES,
    ListRowReader,
    RangedSource,
    RowReader,
    checked_postings,
    fetch_eager,
    norm_of,
    tfc,
)
from memlake.search.index.shard_vectors import ShardVectors
from memlake.search.index.vocab import Vocab

if TYPE_CHECKING:
    import faiss

    from memlake.search.index.ranges import RangedNpz

FORMAT = 5
FORMATS = (1, 2, 3, 4, 5)
K1 = 1.5  # (the same as memlake.search.index.shard_source's, which computes the tf part)
B = 0.75
NO_CONTEXT = -1


@dataclass(frozen=True)
class Doc:
    """An episode as a shard indexes it."""

    id: str
    seq: int
    t_start: int  # us since epoch, UTC
    t_end: int
    context: str | None
    terms: Sequence[str]
    vectors: F32  # (rows, dim), unit rows; at least one row
    #: every passage: (start, end, its BM25 terms); start/end -1 for the header passage
    passages: Sequence[tuple[int, int, Sequence[str]]] = ()
    #: passage number of each vector row (-1: a placeholder row); () means row i = passage i
    vector_passages: Sequence[int] = field(default=())


def _blob(items: Sequence[str]) -> npt.NDArray[np.uint8]:
    return np.frombuffer("\n".join(items).encode(), dtype=np.uint8)


def _unblob(arr: npt.NDArray[np.uint8]) -> list[str]:
    text = arr.tobytes().decode()
    return text.split("\n") if text else []


#: rough bytes of a Python str and its list slot (ids), for the cache's bound
PY_STR_BYTES = 100


class Shard(Bm25Postings, ShardVectors):
    """A loaded shard: arrays plus lazily built search structures (thread-safe). Whole (every
    array in `arrays`) or ranged (`npz`: the big arrays are read by ranges when a search needs
    them, memlake.search.index.shard_source)."""

    def __init__(self, arrays: dict[str, Any], npz: RangedNpz | None = None) -> None:
        head = json.loads(arrays["header"].tobytes())
        self.format = head.get("format")
        if self.format not in FORMATS:
            raise ValueError(f"unsupported shard format {self.format!r}")
        self.model: str = head["model"]
        self.dim: int = int(head["dim"])
        self.contexts: list[str] = list(head["contexts"])
        self.id_list = _unblob(arrays["ids"])
        self._ids: npt.NDArray[np.str_] | None = None
        self._vocab = Vocab(arrays["vocab"])  # looked up in place (memlake.search.index.vocab)
        self.seq: I64 = arrays["seq"]
        self.t_start: I64 = arrays["t_start"]
        self.t_end: I64 = arrays["t_end"]
        self.ctx: I32 = arrays["ctx"]
        self.doc_len: F32 = arrays["doc_len"]
        self.indptr: I64 = arrays["indptr"]
        self.lazy = npz is not None
        #: the rows (float16 in a format-5 IVF shard, else float32); a RowReader (rows read
        #: when indexed) for a ranged shard with IVF
        self.vectors: Any = arrays["vectors"] if "vectors" in arrays else _rows_of(npz, self)
        self.chunk_doc: I32 = arrays["chunk_doc"]
        self.n = len(self.id_list)
        self.norm = norm_of(self.doc_len)
        if not self.lazy:
            self.indices: I32 = checked_postings(arrays["indices"], self.n, "indices")
            self.tf: F32 = arrays["tf"]
            self.tfc = tfc(self.tf, self.norm, self.indices)
        self.has_passages = self.format >= 2
        if self.has_passages:
            # the compiled BM25's pruning indexes docs by it unchecked (kernels.numba_bm25)
            self.p_doc: I32 = checked_postings(arrays["p_doc"], self.n, "p_doc")
            if len(self.p_doc) > 1 and bool((np.diff(self.p_doc) < 0).any()):
                raise ValueError("p_doc: passages out of doc order")
            self.p_start: I32 = arrays["p_start"]
            self.p_end: I32 = arrays["p_end"]
            self.p_len: F32 = arrays["p_len"]
            self.p_indptr: I64 = arrays["p_indptr"]
            self.chunk_passage: I32 = arrays["chunk_passage"]
            self.p_norm = norm_of(self.p_len)
            if not self.lazy:
                self.p_indices: I32 = checked_postings(
                    arrays["p_indices"], len(self.p_doc), "p_indices"
                )
                self.p_tf: npt.NDArray[np.uint16] = arrays["p_tf"]
                self.p_tfc = tfc(self.p_tf, self.p_norm, self.p_indices)
            #: first passage of each doc, and the number of passages at the end
            self.p_first: I64 = np.searchsorted(self.p_doc, np.arange(self.n + 1))
        else:  # format 1: no passages; every vector row's passage is unknown
            self.p_doc = np.empty(0, np.int32)
            self.p_start = self.p_end = np.empty(0, np.int32)
            self.chunk_passage = np.full(len(self.chunk_doc), -1, np.int32)
        self._faiss: faiss.Index | None = None
        self._ivf_arrays = {k: arrays[k] for k in ivf.ARRAYS if k in arrays}
        self._ivf: ivf.Ivf | None = None
        self._npz = npz
        self._source: RangedSource | None = None
        if npz is not None:
            ptrs = {"": self.indptr, **({"p_": self.p_indptr} if self.has_passages else {})}
            norms = {"": self.norm, **({"p_": self.p_norm} if self.has_passages else {})}
            self._source = RangedSource(npz, ptrs, norms)
        self._lock = threading.Lock()
        held = sum(int(a.nbytes) for a in arrays.values() if hasattr(a, "nbytes"))
        held += PY_STR_BYTES * self.n + self._vocab.nbytes
        self._held = held  # grows with FAISS structures built later (`_grew`)
        #: told the bytes the shard grew by (the ShardCache's bound); None: nobody listens
        self.on_grow: Any = None

    @property
    def ids(self) -> npt.NDArray[np.str_]:
        """The docs' ids as a numpy array (for masks by id), made when first asked for."""
        if self._ids is None:
            self._ids = np.array(self.id_list, dtype=str)
        return self._ids

    @property
    def vocab(self) -> list[str]:
        """Every term, in order (merges and repairs; a search looks terms up in place)."""
        return self._vocab.terms

    @property
    def nbytes(self) -> int:
        """Bytes held: arrays, ids and vocab, and FAISS's lists or flat index once built."""
        return self._held

    def _grew(self, delta: int) -> None:
        self._held += delta
        listener = self.on_grow
        if listener is not None:
            listener(self)

    # serialisation -------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> Shard:
        """A whole shard: every array but the copies ranged reads use (RANGED_COPIES: the
        vectors in list order, the postings by term)."""
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return cls({name: npz[name] for name in npz.files if name not in RANGED_COPIES})

    def row_places(self) -> npt.NDArray[np.int64] | None:
        """Where the rows of the IVF lists read so far lie in list order (ranged shards)."""
        index = self._ivf
        return index.row_places if isinstance(index, ShardIvf) else None

    @classmethod
    def from_ranges(cls, npz: RangedNpz) -> Shard:
        """A shard whose big arrays stay in the object until a search needs them."""
        return cls(fetch_eager(npz), npz)

    def passage_span(self, passage: int) -> tuple[int, int] | None:
        """Content offsets of a passage (None: unknown, or the header passage)."""
        if passage < 0 or passage >= len(self.p_start) or self.p_start[passage] < 0:
            return None
        return int(self.p_start[passage]), int(self.p_end[passage])

    # vectors ---------------------------------------------------------------------------
    def _ivf_index(self) -> ivf.Ivf | None:
        """The stored IVF index (format 3, big shards; None otherwise), assembled untrained."""
        if self._ivf is None and self._ivf_arrays:
            with self._lock:
                if self._ivf is None:
                    index = ShardIvf(self._ivf_arrays, self.dim, self._grew, self._npz)
                    index.weight = ivf.weight_of(self.n)
                    self._ivf = index
        return self._ivf

    def ivf_lists(self) -> tuple[F32, I64] | None:
        """(centroids, the list of each vector row) of a whole shard's IVF index: what a merge
        keeps (shard_build.build with reuse_lists). None: no IVF, or not loaded whole."""
        arrays = self._ivf_arrays
        if not arrays or "ivf_rows" not in arrays or self.lazy:
            return None
        offsets = np.asarray(arrays["ivf_offsets"], np.int64)
        rows = np.asarray(arrays["ivf_rows"], np.int64)
        if len(rows) != len(self.chunk_doc) or int(offsets[-1]) != len(rows):
            return None
        lists = np.empty(len(rows), np.int64)
        lists[rows] = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        return np.asarray(arrays["ivf_centroids"], np.float32), lists

    def open_ivf_ahead(self) -> None:
        """Assemble the IVF index now, and past ivf.QUANTISE_AHEAD_FROM lists its int8
        centroids too (a ranged shard, on the thread that opened it: the probe plan, which
        needs every shard's, would build them one after the other). A damaged index is left
        for the search that needs it to report."""
        try:
            index = self._ivf_index()
            if index is not None and index.nlist >= ivf.QUANTISE_AHEAD_FROM:
                index.quantised.get()
        except MemlakeError:
            pass

    def ivf_index(self) -> ivf.Ivf | None:
        """The IVF index whose lists a search plans across shards (None: no IVF)."""
        return self._ivf_index()

    def hold_lists(self) -> None:
        """Put every IVF list of a whole shard in its index now (no-op when ranged or flat):
        its bytes count in `nbytes` from here on."""
        index = None if self.lazy else self._ivf_index()
        if index is not None:
            index.ensure_all()

    def _ensure_lists(self, list_nos: Any) -> None:
        """Put these IVF lists in the index (the only way lists enter it)."""
        index = self._ivf_index()
        if index is not None:
            index.ensure(list_nos)

    def _index(self) -> faiss.Index:
        """Format 1/2 and small shards: exact flat, or SQ8 codes built now (decision 1202)."""
        if self._faiss is None:
            with self._lock:
                if self._faiss is None:
                    sq8 = len(self.vectors) >= shard_vectors.SQ8_MIN_ROWS
                    self._faiss = vector_scan.flat_index(self.vectors, self.dim, sq8)
                    self._grew(int(self._faiss.ntotal) * int(self._faiss.sa_code_size()))
        return self._faiss


def _rows_of(npz: RangedNpz | None, shard: Shard) -> RowReader:
    """A ranged shard's re-score rows: from LIST_VECTORS where the shard has them (rows of its
    probed lists, in list order), else by row from `vectors` (decision 4401)."""
    assert npz is not None  # a whole shard holds its vectors
    if LIST_VECTORS in npz.members:
        copy, rows = npz.info(LIST_VECTORS), npz.info("vectors")
        if (copy.dtype, copy.shape) != (rows.dtype, rows.shape):
            raise ValueError(f"{LIST_VECTORS} {copy.shape} is not a copy of vectors {rows.shape}")
        return ListRowReader(npz, shard.row_places)
    return RowReader(npz, "vectors")
