"""Odoo's watchdog against the answering job (issue 29, point 5), on a real ``odoo-bin --workers``.

One cron worker (``--max-cron-threads=1``) with ``--limit-time-real-cron`` (default 100 s: a
prefork cron worker sleeps up to 69 s between batches and Odoo counts that sleep, so a lower
limit kills idle workers) and a model that takes ``--model-delay`` seconds (default 50) per
answer. One clerk asks 3 questions at once, which wakes both answer crons. The worker runs both
crons in one batch; Odoo's watchdog kills it when the batch, counted from the ping before the
worker's sleep, outlasts the limit.

Checks: no worker killed (``WorkerCron (…) timeout`` in the server log), every question
answered (none left ``running``, none cut short to ``sources_only``). Prints the time to the
last answer. ``--addon-root`` runs it against another checkout's addon (e.g. the code before a
fix). Run with Odoo's Python, as tools/odoo-load-test does:

    /opt/odoo19/venv/bin/python tools/odoo_watchdog_test.py --odoo-bin /opt/odoo19/src/odoo-bin \\
        --addons /opt/odoo19/src/addons,/opt/odoo19/src/odoo/addons
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from odoo_load_test import ANSWER, QUESTIONS, Client, free_port  # noqa: E402

from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--odoo-bin", required=True)
    parser.add_argument("--addons", required=True, help="Odoo's addons paths, comma-separated")
    parser.add_argument("--addon-root", default=ROOT, help="the checkout whose pv_agent is installed")
    parser.add_argument("--limit", type=int, default=100, help="--limit-time-real-cron, seconds")
    parser.add_argument("--model-delay", type=float, default=50.0, help="seconds per chat answer")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0, help="give up waiting for the answers after")
    args = parser.parse_args()

    db = f"pv_agent_watchdog_{os.getpid()}"
    work = tempfile.mkdtemp(prefix="pv_agent_watchdog_")
    http_port, gevent_port = free_port(), free_port()
    base = f"http://127.0.0.1:{http_port}"
    conf = os.path.join(work, "odoo.conf")
    with open(conf, "w") as f:
        f.write(f"[options]\naddons_path = {args.addons},{args.addon_root}\ndata_dir = {work}/data\n")
    log_path = os.path.join(work, "odoo.log")
    ollama = OllamaAPIServer().start()
    ollama.default_reply = Reply(ANSWER, delay=args.model_delay)
    server = None
    try:
        install = subprocess.run([args.python, args.odoo_bin, "-c", conf, "-d", db, "-i", "pv_agent",
                                  "--stop-after-init", "--without-demo", "--log-level=warn"],
                                 cwd=work, capture_output=True, text=True)
        if install.returncode:
            print(install.stdout[-3000:], install.stderr[-3000:], file=sys.stderr)
            return 1
        with open(log_path, "w") as log:
            server = subprocess.Popen(
                [args.python, args.odoo_bin, "-c", conf, "-d", db, f"--db-filter=^{db}$", "--workers=1",
                 "--max-cron-threads=1", f"--limit-time-real-cron={args.limit}", "--limit-time-real=600",
                 "--limit-time-cpu=600", "--http-interface=127.0.0.1", f"--http-port={http_port}",
                 f"--gevent-port={gevent_port}", "--log-level=info"],
                cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(240):
            try:
                if requests.get(base + "/web/login", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if server.poll() is not None:
                raise RuntimeError("odoo-bin ended")
            time.sleep(0.5)
        else:
            raise RuntimeError("odoo-bin did not answer on /web/login")
        return run(args, base, db, ollama, log_path)
    finally:
        if server and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the server and its workers (our own process group)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        ollama.stop()
        subprocess.run(["dropdb", "--if-exists", db], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def run(args, base: str, db: str, ollama: OllamaAPIServer, log_path: str) -> int:
    admin = Client(base, db, "admin", "admin")
    group_user = admin.call("ir.model.data", "search_read", [("module", "=", "pv_agent"), ("name", "=", "group_user")],
                            ["res_id"])[0]["res_id"]
    admin.call("ir.config_parameter", "set_param", "pv_agent.ollama_url", ollama.url)
    admin.call("ir.config_parameter", "set_param", "pv_agent.embedder", "ollama")
    admin.call("ir.config_parameter", "set_param", "pv_agent.kb_path", os.path.join(ROOT, "wissensbasis"))
    admin.call("res.users", "create", {"name": "Watchdog Clerk", "login": "wd_clerk", "password": "wd-pass-1",
                                       "group_ids": [(6, 0, [group_user])]})
    admin.call("pv_agent.entry", "action_import_knowledge_base")
    job = admin.call("pv_agent.index.job", "action_queue_reindex")["job_id"]
    while admin.call("pv_agent.index.job", "read", [job], ["state"])[0]["state"] in ("queued", "running"):
        time.sleep(1)
    clerk = Client(base, db, "wd_clerk", "wd-pass-1")
    started = time.monotonic()
    asked = [clerk.call("pv_agent.conversation", "action_ask", QUESTIONS[i % len(QUESTIONS)])["message_id"]
             for i in range(args.questions)]
    print(f"watchdog: {len(asked)} questions asked; limit_time_real_cron={args.limit} s, model "
          f"{args.model_delay:.0f} s per answer", file=sys.stderr)
    states, last = {}, None
    while time.monotonic() - started < args.timeout:
        rows = admin.call("pv_agent.message", "read", asked, ["state", "answer_id"])
        states = {r["id"]: r["state"] for r in rows}
        if all(s in ("done", "error") for s in states.values()):
            last = time.monotonic() - started
            break
        time.sleep(2)
    answers = admin.call("pv_agent.message", "search_read", [("question_id", "in", asked)], ["state"])
    with open(log_path) as f:
        kills = len(re.findall(r"WorkerCron \(\d+\) timeout after", f.read()))
    answer_states = sorted(a["state"] for a in answers)
    print(f"watchdog: cron workers killed: {kills}; questions: {sorted(states.values())}; answers: {answer_states}; "
          f"all answered after: {f'{last:.0f} s' if last is not None else 'not within the timeout'}")
    ok = kills == 0 and last is not None and answer_states == ["answered"] * len(asked)
    print("watchdog: PASS" if ok else "watchdog: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
