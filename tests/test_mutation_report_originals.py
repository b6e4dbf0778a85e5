"""``tools/mutation_report.py --originals``: the drafts the hand check fixed, as the players wrote
them. Realistic wrong drafts – the ones with a wrong citation or an unshown conflict must be
rejected for that error (their corrected draft passing), the count must match the hand checks."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _report_module():
    spec = importlib.util.spec_from_file_location("mutation_report", ROOT / "tools" / "mutation_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_originals_of_report10():
    found = _report_module().originals(["report10"])["report10"]
    checks = json.loads((ROOT / "tests/data/realistic_drafts/hand_checks.json").read_text(encoding="utf-8"))
    fixed = [i for i, c in checks.items() if i.startswith("q-x-") and c["result"].startswith("fixed") and c["replace"]]
    assert found["originals"] == len(fixed) == 10
    # a citation of an entry the context does not hold; a conflict shown without ⚠
    assert {"q-x-046", "q-x-028"} <= set(found["rejected_for_their_error"])
