"""The adapter's modules import each other without a cycle, at module level only, and use no
private name of one another (each has one reason to change: README, "Layout")."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = "dbt.adapters.lakerank"
ADAPTER = pathlib.Path(__file__).resolve().parents[2] / "adapter" / "dbt" / "adapters" / "lakerank"


def sibling_imports(path: pathlib.Path):
    """``(module, names, at_module_level)`` for each import of a sibling module in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [alias.name for alias in node.names]
            if node.module.startswith(PACKAGE + "."):
                yield node.module[len(PACKAGE) + 1:], names, id(node) in top
            elif node.module == PACKAGE:
                for name in names:
                    if (ADAPTER / f"{name}.py").exists():
                        yield name, [], id(node) in top
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    yield alias.name[len(PACKAGE) + 1:], [], id(node) in top


def graph():
    modules = {p.stem: p for p in ADAPTER.glob("*.py")}
    assert {"connections", "home", "session", "remote", "driver_ops", "serve"} <= set(modules)
    return modules, {name: list(sibling_imports(path)) for name, path in modules.items()}


def test_sibling_imports_are_at_module_level_and_public():
    _modules, imports = graph()
    nested = [(m, dep) for m, deps in imports.items() for dep, _names, top in deps if not top]
    private = [(m, dep, n) for m, deps in imports.items() for dep, names, _top in deps
               for n in names if n.startswith("_")]
    assert not nested, f"a sibling imported inside a function (a hidden cycle): {nested}"
    assert not private, f"a private name used across modules: {private}"


def test_import_graph_has_no_cycle():
    modules, imports = graph()
    edges = {m: sorted({dep for dep, _n, _t in deps if dep in modules and dep != "__init__"})
             for m, deps in imports.items()}
    done, path = set(), []

    def visit(m):
        if m in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(m):] + [m]))
        if m in done:
            return
        path.append(m)
        for dep in edges[m]:
            visit(dep)
        path.pop()
        done.add(m)

    for m in sorted(edges):
        visit(m)
    # the checker sees a cycle when there is one
    edges["home"] = ["session"]
    done.clear()
    try:
        visit("session")
    except AssertionError:
        return
    raise AssertionError("the cycle check missed home -> session -> home")
