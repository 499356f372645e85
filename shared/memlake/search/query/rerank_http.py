"""A rerank endpoint over HTTP as a Reranker: the /rerank shape of Cohere, Jina, Voyage,
Infinity and Hugging Face TEI (docs/decisions/2601).

The request is {"query", "documents": [texts]} with "model" when one is set (MEMLAKE_RERANK_MODEL;
TEI and a single-model Infinity need none). TEI's own route reads "texts" instead of
"documents": when a server refuses the request with 422 naming "texts", it is sent again that
way, and this reranker keeps speaking TEI's dialect. The answer lists {index, relevance_score}
(Cohere, Jina, Infinity under "results", Voyage under "data") or {index, score} (TEI, a bare
list); scores come back in the documents' order and are checked like every backend's
(memlake.search.query.reranker.checked_scores: finite, clamped to 0..1). Failures raise
RerankError, retryable for throttling and outages; the search then keeps its fused order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from memlake.http_json import HttpJsonError, post_json
from memlake.search.query.reranker import RerankError, checked_scores

_HINTS = {
    401: "set MEMLAKE_RERANK_API_KEY to a key the endpoint accepts",
    404: "MEMLAKE_RERANK_URL must be the full rerank URL, e.g. https://api.cohere.com/v2/rerank",
}


class HttpReranker:
    def __init__(
        self,
        url: str,
        api_key: str = "",
        model: str = "",
        *,
        timeout: float = 10.0,
        attempts: int = 2,
        post: Callable[..., Any] = post_json,
    ) -> None:
        self.url = url
        self.model = model
        self.name = f"http:{model or urlsplit(url).netloc}"
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._attempts = attempts
        self._post = post
        self._field = "documents"  # "texts" once a TEI server asked for it

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        try:
            answer = self._send(query, passages)
        except HttpJsonError as e:
            if self._field == "texts" or e.status != 422 or "texts" not in str(e):
                raise self._error(e) from e
            self._field = "texts"
            try:
                answer = self._send(query, passages)
            except HttpJsonError as again:
                raise self._error(again) from again
        return checked_scores(self._scores(answer, len(passages)), len(passages), self.name)

    def _send(self, query: str, passages: list[str]) -> Any:
        body: dict[str, Any] = {"query": query, self._field: passages}
        if self.model:
            body["model"] = self.model
        return self._post(
            self.url, body, headers=self._headers, timeout=self._timeout, attempts=self._attempts
        )

    def _error(self, e: HttpJsonError) -> RerankError:
        return RerankError(
            f"rerank endpoint failed: {e}",
            hint=_HINTS.get(e.status or 0, ""),
            retryable=e.retryable,
        )

    def _scores(self, answer: Any, expected: int) -> list[float]:
        rows = answer
        if isinstance(answer, dict):
            rows = answer.get("results", answer.get("data"))
        if not isinstance(rows, list):
            raise RerankError(f"{self.url} answered no 'results' list")
        scores: list[Any] = [None] * expected
        for row in rows:
            index = row.get("index") if isinstance(row, dict) else None
            value = row.get("relevance_score", row.get("score")) if isinstance(row, dict) else None
            if not isinstance(index, int) or not 0 <= index < expected or scores[index] is not None:
                raise RerankError(
                    f"{self.url} answered a result without a usable index: {row!r:.80}"
                )
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise RerankError(f"{self.url} answered a result without a score: {row!r:.80}")
            scores[index] = value
        if any(s is None for s in scores):
            missing = sum(1 for s in scores if s is None)
            raise RerankError(f"{self.url} scored {expected - missing} of {expected} passages")
        return scores
