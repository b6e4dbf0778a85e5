"""Load test of the Odoo addon (issue 7): parallel clerks against a real Odoo server with workers
while the index is rebuilt.

Installs pv_agent into a new database, starts odoo-bin in prefork mode (``--workers``,
``--max-cron-threads``) on 127.0.0.1 with free ports, and the Ollama-API test server
answering every chat in ~1 s. Then N clerks (each its own HTTP session) ask through JSON-RPC
(/web/dataset/call_kw: ``action_ask``, then polling their messages until the answer is there)
while a manager edits entries and queues reindexes (full and incremental, alternating).

Checks: 0 errors (HTTP, JSON-RPC, questions in state ``error``), every question answered,
every answer's audit record (answer object) names an index generation that a completed
reindex published. Prints throughput and latency (p50/p95, ask → answer visible to the clerk).

Run through ``tools/odoo-load-test`` (finds Odoo like tools/test-odoo); the database, the data
directory and the server go away at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply  # noqa: E402

ANSWER = "Die Geringfügigkeitsgrenze beträgt 2025 monatlich 551,10 € (Stand 2025-01) [pv-gfb-01]."
QUESTIONS = [
    "Wie hoch ist die Geringfügigkeitsgrenze 2025?",
    "Geringfügigkeitsgrenze 2025 monatlich – wie viel?",
    "Bis zu welchem Betrag ist ein Dienstverhältnis 2025 geringfügig?",
    "Wie viel darf eine geringfügig Beschäftigte 2025 im Monat verdienen?",
]


class LoadTestServer(OllamaAPIServer):
    """The Ollama-API test server; an embedding request with many texts (a reindex's batch)
    takes ``batch_delay`` seconds, a question's single text is answered at once."""

    batch_delay = 0.0

    def _handler(self):
        base, server = super()._handler(), self

        class Handler(base):
            def _embed(self, body):
                if isinstance(body.get("input"), list) and len(body["input"]) > 1 and server.batch_delay:
                    time.sleep(server.batch_delay)
                return super()._embed(body)

        return Handler


def wait_until_serving(server: subprocess.Popen, base: str) -> None:
    """Until odoo-bin answers on /web/login (two minutes at most); it must not end meanwhile."""
    for _ in range(240):
        try:
            if requests.get(base + "/web/login", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        if server.poll() is not None:
            raise RuntimeError("odoo-bin ended")
        time.sleep(0.5)
    raise RuntimeError("odoo-bin did not answer on /web/login")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RpcError(Exception):
    pass


class Client:
    """One browser: a session cookie and JSON-RPC calls."""

    def __init__(self, base: str, db: str, login: str, password: str):
        self.base, self.session = base, requests.Session()
        self.call_raw("/web/session/authenticate", {"db": db, "login": login, "password": password})

    def call_raw(self, path: str, params: dict):
        response = self.session.post(self.base + path, json={"jsonrpc": "2.0", "method": "call", "id": 1,
                                                             "params": params}, timeout=120)
        response.raise_for_status()
        data = response.json()
        if data.get("error"):
            raise RpcError(json.dumps(data["error"], ensure_ascii=False)[:500])
        return data["result"]

    def call(self, model: str, method: str, *args, **kwargs):
        return self.call_raw(f"/web/dataset/call_kw/{model}/{method}",
                             {"model": model, "method": method, "args": list(args), "kwargs": kwargs})


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else 0.0


def odoo_time(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--odoo-bin", required=True)
    parser.add_argument("--addons", required=True, help="Odoo's addons paths, comma-separated")
    parser.add_argument("--clerks", type=int, default=8)
    parser.add_argument("--questions", type=int, default=4, help="questions per clerk")
    parser.add_argument("--reindexes", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cron-threads", type=int, default=1)
    parser.add_argument("--model-delay", type=float, default=1.0, help="seconds per chat answer")
    parser.add_argument("--batch-delay", type=float, default=3.0,
                        help="seconds per embedding batch of a reindex (a question's embedding is immediate)")
    parser.add_argument("--edit-entries", type=int, default=30,
                        help="entries retitled before each reindex, so that their sections are embedded again")
    parser.add_argument("--keep", action="store_true", help="keep the database and the server log")
    args = parser.parse_args()

    db = f"pv_agent_load_{os.getpid()}"
    work = tempfile.mkdtemp(prefix="pv_agent_load_")
    http_port, gevent_port = free_port(), free_port()
    base = f"http://127.0.0.1:{http_port}"
    conf = os.path.join(work, "odoo.conf")
    with open(conf, "w") as f:
        f.write(f"[options]\naddons_path = {args.addons},{ROOT}\ndata_dir = {work}/data\n")
    log_path = os.path.join(work, "odoo.log")
    ollama = LoadTestServer()
    ollama.start()
    ollama.default_reply = Reply(ANSWER, delay=args.model_delay)
    server = None
    try:
        t0 = time.monotonic()
        install = subprocess.run([args.python, args.odoo_bin, "-c", conf, "-d", db, "-i", "pv_agent", "--stop-after-init",
                                  "--without-demo", "--log-level=warn"], cwd=work, capture_output=True, text=True)
        if install.returncode:
            print(install.stdout[-3000:], install.stderr[-3000:], file=sys.stderr)
            return 1
        print(f"load: installed pv_agent into {db} in {time.monotonic() - t0:.0f} s")
        with open(log_path, "w") as log:
            server = subprocess.Popen(
                [args.python, args.odoo_bin, "-c", conf, "-d", db, f"--db-filter=^{db}$",
                 f"--workers={args.workers}", f"--max-cron-threads={args.cron_threads}",
                 "--http-interface=127.0.0.1", f"--http-port={http_port}", f"--gevent-port={gevent_port}",
                 "--limit-time-real=600", "--limit-time-cpu=600", "--log-level=info"],
                cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until_serving(server, base)
        print(f"load: odoo-bin serving on {base} (workers={args.workers}, cron threads={args.cron_threads})")
        return run(args, base, db, ollama)
    finally:
        if server and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the server and its workers (our own process group)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        ollama.stop()
        if args.keep:
            print(f"load: kept database {db} and {work}")
        else:
            subprocess.run(["dropdb", "--if-exists", db], capture_output=True)
            shutil.rmtree(work, ignore_errors=True)


def run(args, base: str, db: str, ollama: OllamaAPIServer) -> int:
    admin = Client(base, db, "admin", "admin")
    group_user = admin.call("ir.model.data", "search_read", [("module", "=", "pv_agent"), ("name", "=", "group_user")],
                            ["res_id"])[0]["res_id"]
    group_manager = admin.call("ir.model.data", "search_read",
                               [("module", "=", "pv_agent"), ("name", "=", "group_manager")], ["res_id"])[0]["res_id"]
    admin.call("ir.config_parameter", "set_param", "pv_agent.ollama_url", ollama.url)
    admin.call("ir.config_parameter", "set_param", "pv_agent.kb_path", os.path.join(ROOT, "wissensbasis"))
    admin.call("res.users", "create", {"name": "Load Manager", "login": "load_manager", "password": "load-pass-1",
                                       "group_ids": [(6, 0, [group_manager])]})
    for n in range(args.clerks):
        admin.call("res.users", "create", {"name": f"Load Clerk {n}", "login": f"load_clerk_{n}",
                                           "password": "load-pass-1", "group_ids": [(6, 0, [group_user])]})
    manager = Client(base, db, "load_manager", "load-pass-1")
    t = time.monotonic()
    job = manager.call("pv_agent.entry", "action_import_knowledge_base")
    entries = manager.call("pv_agent.entry", "search_read", [], ["entry_id", "name"], order="entry_id")
    editable = [e for e in entries if not e["entry_id"].startswith("pv-gfb-")]  # not what the clerks ask about
    print(f"load: imported {len(entries)} entries in {time.monotonic() - t:.1f} s (job {job})")
    first = wait_job(manager, manager.call("pv_agent.index.job", "action_queue_reindex")["job_id"])
    print(f"load: first index built in {first['seconds']} s: {first['message']}")
    ollama.batch_delay = args.batch_delay  # from now on a reindex takes a while

    errors: list[str] = []
    latencies: list[float] = []
    asked: list[tuple[str, int]] = []  # (clerk login, question message id)
    timeline: dict[int, tuple[float, float]] = {}  # question id → (asked at, answer seen at), monotonic
    reindexes: list[dict] = []
    running: list[tuple[float, float]] = []  # reindex jobs seen running: (from, to), monotonic
    lock = threading.Lock()
    done_asking = threading.Event()
    reindex_running = threading.Event()

    def clerk(n: int):
        try:
            client = Client(base, db, f"load_clerk_{n}", "load-pass-1")
            conversation = False
            for i in range(args.questions):
                question = QUESTIONS[(n + i) % len(QUESTIONS)]
                started = time.monotonic()
                result = client.call("pv_agent.conversation", "action_ask", question, conversation_id=conversation)
                conversation = result["conversation_id"]
                with lock:
                    asked.append((f"load_clerk_{n}", result["message_id"]))
                while True:
                    msgs = client.call("pv_agent.message", "search_read",
                                       ["|", ("id", "=", result["message_id"]), ("question_id", "=", result["message_id"])],
                                       ["role", "state", "error"])
                    question_msg = next(m for m in msgs if m["role"] == "question")
                    if question_msg["state"] == "error":
                        raise RpcError(f"question failed: {question_msg['error']}")
                    if any(m["role"] == "answer" for m in msgs):
                        break
                    if time.monotonic() - started > 600:
                        raise RpcError("no answer after 600 s")
                    time.sleep(0.1)
                seen = time.monotonic()
                with lock:
                    latencies.append(seen - started)
                    timeline[result["message_id"]] = (started, seen)
        except Exception as exc:  # noqa: BLE001 - every failure counts
            with lock:
                errors.append(f"clerk {n}: {exc}")

    def reindexer():
        """Edit a few entries and reindex (full and incremental in turn) until the clerks are done."""
        try:
            r = 0
            while r < args.reindexes or not done_asking.is_set():
                for e in editable[:args.edit_entries]:  # a new title: all their sections are embedded again
                    manager.call("pv_agent.entry", "write", [e["id"]], {"name": f"{e['name']} (Runde {r})"})
                queued = manager.call("pv_agent.index.job", "action_queue_reindex", full=(r % 2 == 0))
                seen_running = None
                while True:
                    [job] = manager.call("pv_agent.index.job", "read", [queued["job_id"]],
                                         ["state", "message", "seconds", "report_json"])
                    now = time.monotonic()
                    if job["state"] == "running" and seen_running is None:
                        seen_running = now
                        reindex_running.set()
                    if job["state"] in ("done", "failed"):
                        break
                    time.sleep(0.1)
                if job["state"] != "done":
                    raise RpcError(f"reindex job {job['id']} failed: {job['message']}")
                with lock:
                    reindexes.append(job)
                    running.append((seen_running if seen_running is not None else now - job["seconds"], now))
                r += 1
                time.sleep(0.5)
        except Exception as exc:  # noqa: BLE001
            with lock:
                errors.append(f"reindex: {exc}")

    started = time.monotonic()
    threads = [threading.Thread(target=clerk, args=(n,)) for n in range(args.clerks)]
    index_thread = threading.Thread(target=reindexer)
    index_thread.start()
    if not reindex_running.wait(120):  # the clerks start asking while a reindex runs
        errors.append("the first reindex did not start within 120 s")
    started = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.monotonic() - started
    done_asking.set()
    index_thread.join()

    # the audit trail: every answer's index generation was published by a completed reindex
    answers = manager.call("pv_agent.message", "search_read", [("role", "=", "answer")],
                           ["question_id", "answer_json", "state", "duration_ms"])
    by_question = {a["question_id"][0]: a for a in answers}
    jobs = manager.call("pv_agent.index.job", "search_read", [("kind", "=", "reindex")], ["state", "report_json"])
    complete = {json.loads(j["report_json"])["generation"] for j in jobs if j["state"] == "done"}
    failed_jobs = [j for j in jobs if j["state"] != "done"]
    missing = [mid for _login, mid in asked if mid not in by_question]
    generations, not_complete, states = [], [], {}
    asked_during = computed_during = 0
    for _login, mid in asked:
        answer = by_question.get(mid)
        if not answer:
            continue
        generation = json.loads(answer["answer_json"])["index"]["generation"]
        generations.append(generation)
        states[answer["state"]] = states.get(answer["state"], 0) + 1
        if generation not in complete:
            not_complete.append((mid, generation))
        asked_at, seen_at = timeline.get(mid, (0, 0))
        asked_during += any(a <= asked_at <= b for a, b in running)
        # the job's own time, ending before the clerk's poll saw the answer (polls every 0.1 s)
        computed = (seen_at - 0.15 - answer["duration_ms"] / 1000, seen_at - 0.15)
        computed_during += any(min(b, computed[1]) - max(a, computed[0]) > 0.2 for a, b in running)
    summary = {
        "clerks": args.clerks, "questions_per_clerk": args.questions, "workers": args.workers,
        "cron_threads": args.cron_threads, "asked": len(asked), "answered": len(asked) - len(missing),
        "errors": errors + [f"question {m}: no answer" for m in missing] + [f"job {j['id']}: {j['state']}" for j in failed_jobs],
        "answers_from_incomplete_generation": not_complete,
        "elapsed_s": round(elapsed, 1), "answers_per_s": round(len(latencies) / elapsed, 2) if elapsed else 0,
        "latency_p50_s": round(percentile(latencies, 0.5), 2), "latency_p95_s": round(percentile(latencies, 0.95), 2),
        "latency_max_s": round(max(latencies or [0]), 2),
        "reindexes_during_load": len(reindexes), "reindex_seconds": [j["seconds"] for j in reindexes],
        "questions_asked_while_a_reindex_ran": asked_during,
        "answers_computed_while_a_reindex_ran": computed_during,
        "generations_used": sorted(set(generations)), "complete_generations": sorted(complete),
        "states": states, "chat_requests": len(ollama.requests_to("/api/chat")),
        "embed_requests": len(ollama.requests_to("/api/embed")),
    }
    summary["reindex_running_s"] = [(round(a - started, 1), round(b - started, 1)) for a, b in running]
    summary["asked_s"] = sorted(round(a - started, 1) for a, _b in timeline.values())[::max(1, len(timeline) // 8)]
    print("load: " + json.dumps(summary, ensure_ascii=False))
    print(f"load: {summary['answered']}/{summary['asked']} answered by {args.clerks} clerks in {elapsed:.1f} s: "
          f"{summary['answers_per_s']} answers/s, p50 {summary['latency_p50_s']} s, p95 {summary['latency_p95_s']} s; "
          f"{len(reindexes)} reindexes ({', '.join(f'{s:.1f} s' for s in summary['reindex_seconds'])}); "
          f"{asked_during} questions asked and {computed_during} answers computed while a reindex ran; generations used {summary['generations_used']}, "
          f"all complete: {not not_complete}; errors: {len(summary['errors'])}")
    ok = not summary["errors"] and not not_complete and summary["answered"] == summary["asked"]
    print("load: PASSED" if ok else "load: FAILED")
    return 0 if ok else 1


def wait_job(manager: Client, job_id: int, timeout: float = 600) -> dict:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        [job] = manager.call("pv_agent.index.job", "read", [job_id], ["state", "message", "seconds", "report_json"])
        if job["state"] in ("done", "failed"):
            if job["state"] == "failed":
                raise RpcError(f"reindex job {job_id} failed: {job['message']}")
            return job
        time.sleep(0.2)
    raise RpcError(f"reindex job {job_id} not done after {timeout} s")


if __name__ == "__main__":
    sys.exit(main())
