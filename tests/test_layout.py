"""The Odoo layer's layout, read from the source with ``ast`` (no Odoo needed):

- pv_agent/models and pv_agent/services import each other without a cycle;
- no models/ file imports the engine: the engine is reached only through pv_agent/services;
- services/ never imports a model module;
- models/ holds models only, and each model (own or Odoo's, extended) lives in one file;
- pv_agent/engine imports neither Odoo nor the addon outside it; its modules import each other
  without a cycle, and so do its stage packages (kb → index → retrieval → answer → evaluation,
  with config/types/textnorm/ollama/drift beside them).

Run: ``.venv/bin/python -m pytest tests/test_layout.py -q``
"""
from __future__ import annotations

import ast
from pathlib import Path

ADDON = Path(__file__).resolve().parent.parent / "pv_agent"
LAYERS = ("models", "services")


def module_name(path: Path) -> str:
    parts = path.relative_to(ADDON.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``module`` imports, anywhere in the file (function-level imports too), as
    absolute names under ``pv_agent``; ``from X import y`` counts as ``X.y`` and as ``X``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            name = name.removeprefix("odoo.addons.")
            if name.startswith("pv_agent"):
                found.add(name)
    return found


def import_graph(paths) -> dict[str, set[str]]:
    """Module → the modules among ``paths`` it imports."""
    files = {module_name(p): p for p in paths}
    graph = {}
    for module, path in files.items():
        imports = imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        inner = {m for m in imports if m in files and m != module}
        # ``from . import x`` names the package too; the edge is to x (the package is already loading)
        graph[module] = {m for m in inner if not (files[m].name == "__init__.py"
                                                   and any(o.startswith(m + ".") for o in inner))}
    return graph


def layer_graph() -> dict[str, set[str]]:
    """Module → the modules of models/ and services/ it imports."""
    return import_graph([p for layer in LAYERS for p in sorted((ADDON / layer).glob("*.py"))])


def engine_graph() -> dict[str, set[str]]:
    """Module → the engine modules it imports (every file under pv_agent/engine, any depth)."""
    return import_graph(sorted((ADDON / "engine").rglob("*.py")))


def stage_of(module: str) -> str:
    """``pv_agent.engine.index.sqlite_store`` → ``index``; a top-level module is its own stage."""
    return module.split(".")[2] if module.count(".") >= 2 else module


def stage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    stages: dict[str, set[str]] = {}
    for module, imports in graph.items():
        own = stage_of(module)
        stages.setdefault(own, set()).update(s for s in map(stage_of, imports) if s != own)
    return stages


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_checks_can_fail():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    lazy = "def f():\n    from ..engine.answer.ask import ask\n"
    assert "pv_agent.engine.answer.ask" in imported_modules(lazy, "pv_agent.models.x")
    assert "pv_agent.engine.answer.ask" in imported_modules("import odoo.addons.pv_agent.engine.answer.ask", "pv_agent.models.x")
    assert "pv_agent.models.y" in imported_modules("from ..models import y", "pv_agent.services.x")
    assert "pv_agent.models.y" in imported_modules("from . import y", "pv_agent.models", is_package=True)
    assert "pv_agent.engine.kb.markdown" in imported_modules("from ...kb import markdown as md",
                                                              "pv_agent.engine.answer.verification.facts")
    modules = {"pv_agent.engine.index.sqlite_store": {"pv_agent.engine.retrieval.retrieve"},
               "pv_agent.engine.retrieval.retrieve": {"pv_agent.engine.index.pg_store"}}
    assert find_cycle(stage_graph(modules)) == ["index", "retrieval", "index"]


def test_no_import_cycle_in_the_engine():
    graph = engine_graph()
    assert "pv_agent.engine.answer.ask" in graph and "pv_agent.engine.index.sqlite_store" in graph
    assert "pv_agent.engine.answer.prompts" in graph["pv_agent.engine.answer.ask"]
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph))
    stages = stage_graph(graph)
    assert {"kb", "index", "retrieval", "answer", "evaluation"} <= set(stages)
    assert find_cycle(stages) is None, "stage packages import each other: " + " → ".join(find_cycle(stages))


def test_the_engine_imports_no_odoo_and_nothing_of_the_addon():
    for path in sorted((ADDON / "engine").rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        odoo = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                and any(name.split(".")[0] == "odoo" for name in
                        ([a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]))
                and not getattr(n, "level", 0)]
        assert not odoo, f"{module} imports Odoo"
        outside = [m for m in imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
                   if m != "pv_agent" and not m.startswith("pv_agent.engine")]
        assert not outside, f"{module} imports the addon outside the engine: {outside}"


def test_no_import_cycle_in_models_and_services():
    graph = layer_graph()
    assert "pv_agent.services.index_access" in graph and "pv_agent.models.pv_agent_message" in graph
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph))


def test_models_reach_the_engine_only_through_services():
    offenders = {}
    for path in sorted((ADDON / "models").glob("*.py")):
        module = module_name(path)
        engine = sorted(m for m in imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
                        if m == "pv_agent.engine" or m.startswith("pv_agent.engine."))
        if engine:
            offenders[path.name] = engine
    assert not offenders, f"models/ importing the engine directly (use pv_agent/services): {offenders}"


def test_services_import_no_model():
    for path in sorted((ADDON / "services").glob("*.py")):
        imports = imported_modules(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
        assert not [m for m in imports if m.startswith("pv_agent.models")], path.name


def _model_classes(path: Path):
    """(model name, class name) of every Odoo model class in ``path``: its ``_name``, else its
    single ``_inherit``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef):
            continue
        attrs = {t.id: stmt.value for stmt in node.body if isinstance(stmt, ast.Assign)
                 for t in stmt.targets if isinstance(t, ast.Name)}
        name = attrs.get("_name") or attrs.get("_inherit")
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            yield name.value, node.name
        elif isinstance(name, ast.List) and len(name.elts) == 1:
            yield name.elts[0].value, node.name


def test_models_holds_one_file_per_model():
    files_of: dict[str, list[str]] = {}
    for path in sorted((ADDON / "models").glob("*.py")):
        if path.name == "__init__.py":
            continue
        models = list(_model_classes(path))
        assert models, f"models/{path.name} defines no model (helpers belong in pv_agent/services)"
        for model, _cls in models:
            files_of.setdefault(model, []).append(path.name)
    split = {model: files for model, files in files_of.items() if len(files) > 1}
    assert not split, f"a model defined or extended in several files (or twice in one): {split}"
    assert files_of["pv_agent.message"] == ["pv_agent_message.py"]
