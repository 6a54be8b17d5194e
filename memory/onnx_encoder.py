"""The local sentence-transformers model through ONNX Runtime: queries, fresh rows, and the
worker's batches unless the CPU computes bf16 natively (memory.embeddings.runs_on_torch).

Why two runtimes: for one short query torch spends most of its time on per-operator overhead
(all-MiniLM-L6-v2, one thread: ≈ 10 ms a query through torch, ≈ 4.5 ms through ONNX Runtime, the
same float32 vectors: cosine 1.0000), and float32 batches are faster on it too; only large
batches in bf16 on a CPU with native bf16 are faster on torch (LoCoMo turns in batches of 64, one
thread: 73 vs 44 texts/s). So a web process that only embeds queries never imports torch
(≈ 450 MB and 3-4 s per process), nor does a worker on a CPU without native bf16.

The graph is exported from the torch model once per model and machine, in a child process (torch
stays out of the caller), into ~/.cache/winni/onnx (XDG_CACHE_HOME), and shared by every process.
Only models that the export reproduces exactly qualify: a Transformer, mean pooling, and
optionally Normalize (all-MiniLM-L6-v2's pipeline); anything else stays on torch."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, cast

log = logging.getLogger("winni.embeddings")

_PIPELINE = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling"]
_MEAN_ONLY = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
              "pooling_mode_mean_sqrt_len_tokens": False}

_sessions: dict[tuple[str, bool], Any] = {}
_failed: set[tuple[str, bool]] = set()
_lock = threading.Lock()


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "winni" / "onnx"


def qualifies(model_dir: Path) -> bool:
    """Whether the model is a plain mean-pooled transformer (what the exported graph computes)."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        types = [module["type"] for module in modules]
        pooling = json.loads((model_dir / modules[1]["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError, IndexError):
        return False
    if types[:2] != _PIPELINE or types[2:] not in ([], ["sentence_transformers.models.Normalize"]):
        return False
    if not (model_dir / "tokenizer.json").exists():
        return False
    return all(pooling.get(key, False) == value for key, value in _MEAN_ONLY.items())


def graph_path(model_dir: Path) -> Path:
    """One file per model version: keyed by the weights' names, sizes and times."""
    weights = sorted(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin"))
    key = "|".join([str(model_dir.resolve())] + [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights])
    return cache_dir() / f"{model_dir.name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def _int8_path(graph: Path) -> Path:
    return graph.with_name(f"{graph.stem}-int8.onnx")


def quantize(graph: Path, target: Path) -> None:
    """int8 dynamic quantisation of the float32 graph (weights int8, activations quantised per
    batch at run time): MatMuls run on the CPU's int8 dot products (AVX512-VNNI / AVX-VNNI, AVX2
    otherwise). Written to a temporary name and renamed, like the export."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    quantize_dynamic(str(graph), str(partial), weight_type=QuantType.QInt8)
    os.replace(partial, target)


def _max_tokens(model_dir: Path) -> int:
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


class Encoder:
    """Tokenizer + ONNX session for one model; `embed` returns mean-pooled, normalised vectors."""

    def __init__(self, model_dir: Path, graph: Path, threads: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(_max_tokens(model_dir))
        self.tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        # What the graph takes: a model that ignores token_type_ids (MPNet: all-mpnet-base-v2) is
        # exported without it, and an input the graph does not declare fails every run.
        self.inputs = {node.name for node in self.session.get_inputs()}

    def embed(self, texts: list[str], *, pass_size: int = 16) -> list[list[float]]:
        """Vectors in the texts' order, computed in passes of `pass_size` texts. A pass is padded
        to its longest text, so callers hand texts sorted by length (embeddings.embed_texts does)."""
        return [vector for start in range(0, len(texts), pass_size)
                for vector in self._embed_pass(texts[start : start + pass_size])]

    def _embed_pass(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self.session.run(None, {name: value for name, value in feed.items() if name in self.inputs})
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype("float32").tolist()


def encoder(model_dir: Path, *, threads: int, int8: bool = False) -> Encoder | None:
    """The model's ONNX encoder, exporting it first if needed; None when the model does not qualify,
    onnxruntime is missing or the export failed (the caller then uses torch). `int8`: the
    dynamically quantised graph (memory.embeddings.use_int8), quantised once per machine."""
    key = (str(model_dir), int8)
    if key in _sessions:
        return _sessions[key]
    if key in _failed:
        return None
    with _lock:
        if key not in _sessions and key not in _failed:
            loaded = _load(model_dir, threads, int8)
            if loaded is None:
                _failed.add(key)
            else:
                _sessions[key] = loaded
    return _sessions.get(key)


def _load(model_dir: Path, threads: int, int8: bool) -> Encoder | None:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    if not qualifies(model_dir):
        return None
    graph = graph_path(model_dir)
    if not graph.exists():
        try:
            graph.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "memory.onnx_encoder", str(model_dir), str(graph)], check=True,
                           capture_output=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            log.warning("onnx export of %s failed, staying on torch: %s %s", model_dir, exc,
                        detail.decode(errors="replace")[-500:])
            return None
    if int8:
        quantized = _int8_path(graph)
        if not quantized.exists():
            try:
                quantize(graph, quantized)
            except Exception as exc:  # noqa: BLE001 - float32 still works
                log.warning("int8 quantisation of %s failed, staying on float32: %s", graph, exc)
                return None
        graph = quantized
    try:
        return Encoder(model_dir, graph, threads)
    except Exception as exc:  # a corrupt or foreign graph file: torch still works
        log.warning("onnx graph %s could not be loaded, staying on torch: %s", graph, exc)
        return None


def export(model_dir: Path, graph: Path) -> None:
    """Trace the model's transformer (last hidden state) to ONNX; written to a temporary name and
    renamed, so a concurrent reader never sees half a file."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from sentence_transformers import SentenceTransformer

    transformer = cast("torch.nn.Module", SentenceTransformer(str(model_dir), device="cpu")[0].auto_model).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((1, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    partial = graph.with_name(f"{graph.name}.{os.getpid()}.tmp")
    torch.onnx.export(LastHiddenState(), (sample, sample, torch.zeros_like(sample)), str(partial),
                      input_names=names, output_names=["last_hidden_state"],
                      dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names + ["last_hidden_state"]},
                      opset_version=17, dynamo=False)
    os.replace(partial, graph)


if __name__ == "__main__":
    export(Path(sys.argv[1]), Path(sys.argv[2]))
