"""The shape of the package, checked from its source: no import cycle among catty_ctx modules
(every import statement counts, function-local ones and type-only ones too, and importing a
submodule runs its package's __init__), and nothing at the top level of the project but the
design card's folders, docs/, bench/, .ci/, README and metadata."""
from __future__ import annotations

import ast
import functools
import subprocess
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "catty_ctx"
TOP_LEVEL = {
    "pyproject.toml", "README.md", ".gitignore",  # metadata
    "catty_ctx", "tests", "fixtures", "man", "completions",  # the design card
    "docs", "bench", ".ci",
    "plugins", ".claude-plugin", ".agents",  # the plugin and the marketplaces of Claude Code and Codex (docs/agents.md)
}


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module at PATH, in `ast.walk`'s order: parsed and walked once for all the checks."""
    return tuple(ast.walk(ast.parse(path.read_text(), str(path))))


def modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package __init__)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return found


def imported_names(module: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Every dotted name an import statement may load (`from a import b` may load a.b)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
    else:
        base = []
    target = ".".join(base + ([node.module] if node.module else []))
    return [target] + [f"{target}.{alias.name}" for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, (path, is_pkg) in mods.items():
        for node in nodes(path):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in imported_names(module, is_pkg, node):
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # a.b.c runs a and a.b first
                    dep = ".".join(parts[:i])
                    # The importer's own packages are already running when it runs.
                    if dep in mods and dep != module and not module.startswith(dep + "."):
                        graph[module].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_counts_function_local_and_package_imports() -> None:
    graph = import_graph()
    # cli/inspect.py imports the library inside its command function, to start fast
    assert "catty_ctx.inspect.session" in graph["catty_ctx.cli.inspect"]
    # importing catty_ctx.session.segments runs catty_ctx.compact.pipeline's __init__
    assert any(dep == "catty_ctx.compact.pipeline" for deps in graph.values() for dep in deps)


def test_no_import_cycle_among_catty_ctx_modules() -> None:
    assert cycles(import_graph()) == []


# The wings from the bottom up (docs/architecture.md): a module may import its own rung and the
# rungs below it, never one above. `eval` sits over `agents` because `eval --native` runs the
# hooks' own reminder as the agents receive it.
WINGS = (
    ("leaves", {"errors", "defaults", "visible", "redact", "patterns", "_version"}),
    ("session", {"session"}),
    ("view", {"view"}),
    ("fleet", {"fleet"}),
    ("formats", {"formats", "importers", "sources"}),
    ("mechanisms", {"inspect", "repair", "prune", "compact", "usage", "writeback", "fork", "subagents", "agent_compact",
                    "appending", "instructions"}),
    ("readers", {"html", "export", "search", "index"}),
    ("agents", {"agents", "proxy"}),
    ("eval", {"eval"}),
    ("cli", {"cli", "__main__", ""}),
)


def wing_of(module: str) -> int | None:
    """The rung of MODULE (catty_ctx.X... by its X; the package itself is the API, with the CLI)."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return next((i for i, (_, names) in enumerate(WINGS) if top in names), None)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            mine, theirs = wing_of(module), wing_of(dep)
            if mine is None or theirs is None:
                found.append(f"{module}: not in a wing" if mine is None else f"{dep}: not in a wing")
            elif theirs > mine:
                found.append(f"{module} ({WINGS[mine][0]}) imports {dep} ({WINGS[theirs][0]})")
    return sorted(set(found))


def test_the_wing_checker_finds_a_planted_upward_import() -> None:
    planted = {"catty_ctx.session.store": {"catty_ctx.view.fold"}, "catty_ctx.view.fold": {"catty_ctx.session.store"},
               "catty_ctx.cli.x": {"catty_ctx.agents.hooks"}, "catty_ctx.nowhere": {"catty_ctx.errors"}}
    assert upward_imports(planted) == ["catty_ctx.nowhere: not in a wing",
                                       "catty_ctx.session.store (session) imports catty_ctx.view.fold (view)"]


def test_no_lower_wing_imports_a_higher_one() -> None:
    assert upward_imports(import_graph()) == []


def test_every_top_level_module_or_package_is_in_a_wing() -> None:
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert sorted(t for t in tops - {"__init__"} if wing_of(f"catty_ctx.{t}") is None) == []


LOOSE_MAX = 20  # modules at the package root: the API, the leaves and the few that sit between wings
INIT_MAX = 60  # a package __init__ holds names and a docstring, not machinery


def test_few_modules_stay_loose_at_the_package_root() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= LOOSE_MAX, loose


def test_no_package_init_holds_machinery() -> None:
    big = {str(p.relative_to(ROOT)): n for p in sorted(PACKAGE.rglob("__init__.py")) if (n := len(p.read_text().splitlines())) > INIT_MAX}
    assert big == {}


# Every import inside a function of the package, and why it is not at the top: the light run it
# keeps light (the start-up tests and `plain_run_loads` tests hold those runs), or the optional
# engine only some runs need. Key: (module, what it imports). An import missing here fails, and so
# does an entry no import uses any more: the count falls as the reasons do.
STARTUP = "tests/test_startup.py"
LOCAL_IMPORTS = {
    ("__main__.py", "cli.app"): f"--version is answered before the CLI is imported ({STARTUP})",
    ("__main__.py", "cli.errors"): f"--version is answered before the CLI is imported ({STARTUP})",
    ("__main__.py", "."): f"a cached usage answer is printed before the CLI is imported: the config is checked then ({STARTUP})",
    ("__init__.py", "importlib"): f"a cached usage answer loads no importlib (the API's names only when asked for) ({STARTUP})",
    ("__main__.py", "cli.plain"): f"a usage line is read before the CLI is imported, for a cached answer ({STARTUP})",
    ("__main__.py", "usage.warm"): f"a cached usage answer is looked up only for a usage command line ({STARTUP})",
    ("agents/hooks.py", "mirror"): f"a hook with nothing to do loads no mirror ({STARTUP})",
    ("agents/hooks.py", "."): f"a hook with nothing to do loads no mirror ({STARTUP})",
    ("agents/statusline.py", "subprocess"): f"the status line spawns its refresh only when the day's cost is stale ({STARTUP})",
    ("agents/statusline.py", "usage"): f"the status line loads no ledger ({STARTUP})",
    ("cli/app.py", "agents.hooks"): f"only a hook or the status line under an unusable config warns through the hooks' log ({STARTUP})",
    ("patterns.py", "regex"): "a fixed string or a light run never loads the regular expression engine",
    ("session/files.py", "shutil"): "files imports only errno, os, re and stat: the quick paths' writes (the status line's caches)",
    ("session/files.py", "tempfile"): "files imports only errno, os, re and stat: the quick paths' writes (the status line's caches)",
    ("agents/transcript_tally.py", "msgspec"): f"the status line loads no ledger and no JSON library of the readers ({STARTUP})",
    ("agents/transcript_tally.py", "usage"): f"the status line loads no ledger ({STARTUP})",
    ("cli/app.py", "typer"): f"the fast commands and --help start without typer ({STARTUP}, tests/cli/test_registry.py)",
    ("cli/errors.py", "typer"): "the fast commands start without typer",
    ("cli/fastpath.py", "inspect"): "the fast parser declares typer commands only when typer parses",
    ("cli/fastpath.py", "typer"): "the fast commands start without typer",
    ("cli/fork.py", "writeback.pipeline"): "a plain fork loads no write-back (tests/cli/test_fork_cli.py)",
    ("cli/proxy.py", "proxy.main"): "the proxy (aiohttp, the extra catty-ctx[proxy]) loads only when `proxy` serves",
    ("cli/hook.py", "agents"): f"a hook run loads no installer ({STARTUP})",
    ("cli/mcp.py", "agents.mcp_server"): "the recall server's SDK is an extra, loaded only by `mcp`, while it answers the handshake",
    ("cli/output.py", "msgspec.json"): "a table or JSON Lines run loads no msgspec",
    ("cli/output.py", "rich"): f"output to a pipe loads no rich ({STARTUP})",
    ("cli/usage.py", "fleet.cluster"): "Dask only with --scheduler",
    ("cli/usage.py", "typer"): "usage starts without typer",
    ("compact/summarizers.py", "transport"): "the extractive summariser loads no HTTP client",
    ("defaults.py", "tomllib"): f"the config parser only when a config file exists ({STARTUP})",
    ("defaults.py", "tomli"): "the config parser on 3.10, only when a config file exists",
    ("fleet/cluster.py", "logging"): "Dask only with --scheduler",
    ("fleet/cluster.py", "distributed"): "Dask only with --scheduler",
    ("fleet/cluster.py", "asyncio"): f"asyncio only to close a cluster client ({STARTUP} keeps it out of a plain read)",
    ("fleet/runner.py", "multiprocessing"): "worker processes only for a ROOT worth them",
    ("fleet/urls.py", "fsspec"): "fsspec only for a URL ROOT",
    ("fleet/urls.py", "fsspec.registry"): "fsspec only for a URL ROOT",
    ("formats/ownership.py", "importers.detect"): "a catty log's writer loads no importer (the probe of a foreign file only)",
    ("formats/grok.py", "json"): "the usage walk loads no JSON library until it meets a grok session",
    ("formats/grok.py", "urllib.parse"): "the usage walk loads no URL parser (a bucket's name only)",
    ("formats/grok.py", "pathlib"): "the usage walk loads no pathlib (the listing of sessions only)",
    ("session/compressed.py", "shutil"): "the warm usage answer loads no shutil (the zstd program is looked for only for a compressed rollout)",
    ("formats/roots.py", "importers.detect"): "the importers sit above the registry: the one import up, at run time",
    ("formats/roots.py", "database"): f"sqlite3 only for an agent's database ({STARTUP})",
    ("session/compressed.py", "subprocess"): f"zstd runs only for a compressed rollout ({STARTUP})",
    ("session/jsonl.py", "orjson"): f"the status line reads lines without orjson ({STARTUP})",
    ("session/store.py", "filelock"): f"a plain read takes no lock ({STARTUP})",
    ("sources.py", "importers.pipeline"): f"a catty session's read loads no importer ({STARTUP})",
    ("subagents.py", "usage.pipeline"): "--agents loads the ledger only for a subagent's bill",
    ("usage/cachefiles.py", "pathlib"): "the warm usage answer reads its cache without pathlib",
    ("usage/cachefiles.py", "session.files"): f"the warm usage answer writes no cache (re's import) ({STARTUP})",
    ("usage/pricefiles.py", "errors"): f"the warm usage answer loads no enum (an unreadable price table only) ({STARTUP})",
    ("usage/walk.py", "errors"): f"the warm usage answer loads no enum (a missing PATH only) ({STARTUP})",
    ("usage/walk.py", "fleet.urls"): f"the warm usage answer loads no errors (a URL PATH only) ({STARTUP})",
    ("usage/warm.py", "times"): "the warm usage answer to no date loads no datetime",
    ("usage/library.py", "re"): f"the warm usage answer loads no re (a model's names are tried when the index lacks it) ({STARTUP})",
    ("usage/copies.py", "msgspec.structs"): "the warm usage answer needs no record copies",
    ("usage/filescan.py", "orjson"): "a scan decodes whole records through msgspec; orjson for the odd one",
    ("usage/filescan.py", "session.store"): "catty logs are validated only under --strict",
    ("usage/filescan.py", "fleet.urlcopy"): "catty logs of a URL are validated only under --strict",
    ("usage/filescan.py", "shutil"): "a URL's log only is copied to a temporary file",
    ("usage/filescan.py", "tempfile"): "a URL's log only is copied to a temporary file",
    ("usage/opencode.py", "formats.database"): "sqlite3 only for opencode's database (a cold scan of logs loads none)",
    ("fleet/workers.py", "tempfile"): "a worker's results go to a memfd where the system has one (the usage scan's start loads no tempfile)",
    ("usage/library.py", "genai_prices"): "the price library only when the price index lacks a model",
    ("usage/library.py", "genai_prices.types"): "the price library only when the price index lacks a model",
    ("usage/library.py", "."): "the shipped price table only when the price index lacks a model",
    ("usage/library.py", "importlib.util"): "the price library's stand-in front module only when the library is loaded",
    ("usage/library.py", "types"): "the price library's stand-in front module only when the library is loaded",
    ("usage/library.py", "datetime"): "the warm usage answer loads no datetime (the library's periods are read when it is loaded)",
    ("usage/pipeline.py", "session.jsonl"): "stdin's name only when a log is piped in",
    ("usage/pipeline.py", "copies"): "the warm usage answer needs no dedupe",
    ("usage/pipeline.py", "ledger"): "the warm usage answer needs no fold",
    ("usage/pipeline.py", "prices"): "the warm usage answer prices nothing",
    ("usage/pipeline.py", "times"): "the warm usage answer to no date loads no datetime",
    ("usage/pipeline.py", "shutil"): "a URL PATH's copies only",
    ("usage/pipeline.py", "tempfile"): "a URL PATH's copies only",
    ("usage/pipeline.py", "fleet.runner"): "the warm usage answer loads no runner",
    ("usage/pipeline.py", "fanout"): "the warm usage answer scans nothing",
    ("usage/pipeline.py", "filescan"): "the warm usage answer scans nothing",
    ("usage/pipeline.py", "library"): "the warm usage answer resolves no price",
    ("usage/pipeline.py", "kept"): "a run with --no-cache keeps no ledger",
    ("usage/prices.py", "msgspec"): "prices decoded only when a ledger is priced",
    ("usage/times.py", "msgspec"): "dates decoded only when a ledger is built",
    ("usage/times.py", "zoneinfo"): "time zones only with --timezone or a zone to name",
    ("usage/walk.py", "gemini"): "the walk sniffs a Gemini document only when it meets one",
    ("usage/walk.py", "lines"): "the walk decodes a line only when it sniffs one",
}


def function_local_imports() -> set[tuple[str, str]]:
    """(module, imported module) of every import statement inside a function of the package."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for fn in nodes(path):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    if isinstance(n, ast.Import):
                        found |= {(rel, a.name) for a in n.names}
                    elif isinstance(n, ast.ImportFrom):
                        found.add((rel, (n.module or ".").split(".")[0] if not n.level and n.module and n.module.split(".")[0] in ("rich", "typer") else (n.module or ".")))
    return found


def test_every_function_local_import_names_its_reason() -> None:
    found = function_local_imports()
    assert sorted(found - set(LOCAL_IMPORTS)) == [], "an import inside a function needs its reason in LOCAL_IMPORTS"
    assert sorted(set(LOCAL_IMPORTS) - found) == [], "a reason no import uses any more"
    assert all(reason.strip() for reason in LOCAL_IMPORTS.values())


def test_nothing_at_the_top_level_but_the_design_cards_folders() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout
        tracked = [p.name for p in ROOT.iterdir() if not p.name.startswith(".") or p.name == ".ci"]
    assert {rel.split("/")[0] for rel in tracked} <= TOP_LEVEL


def test_no_private_name_is_used_outside_its_module() -> None:
    """`from x import _name` and `obj._name` (not self's or cls's) reach into another module."""
    leaks = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = {n.name for n in nodes(path) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        own |= {n.attr for n in nodes(path) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
        for node in nodes(path):
            if isinstance(node, ast.ImportFrom):
                leaks += [f"{path.name}: import {a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value.id if isinstance(node.value, ast.Name) else ""
                if base not in ("self", "cls", "os", "sys") and node.attr not in own:
                    leaks.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert leaks == []


# Modules that may rename files, and why; every other whole-file write goes through
# files.replace_file / files.write_file (temp, fsync, rename, fsync the folder).
RENAMERS = {
    "session/files.py": "the one whole-file writer",
    "session/new.py": "place_new_session: a built session folder goes in place by one rename (a folder is no file to rewrite)",
}


def test_only_the_whole_file_writer_renames_files() -> None:
    """os.replace / os.rename / shutil.move / Path.rename outside the writer would be a second
    writer with its own idea of durability."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in nodes(path):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            base = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
            name = node.func.attr
            if (base == "os" and name in ("replace", "rename", "renames")) or (base == "shutil" and name == "move") or name == "rename":
                found.append(path.relative_to(PACKAGE).as_posix())
    assert sorted(set(found)) == sorted(RENAMERS)


# Modules that read lines themselves, and why; every other reader of a log, an item stream or
# another agent's JSONL goes through jsonl.py (its limit, torn-tail rule and file:line text).
LINE_READERS = {
    "session/jsonl.py": "the one reader",
    "session/compressed.py": "the decompression limit counts what a stream gives: it passes readline on to jsonl's reader",
    "formats/ownership.py": "a probe of a few lines within a small byte budget: a cut line is a clue, not an error",
    "importers/claude": "a subagent file's first line, read to match it to its session (a probe)",
    "compact/transport.py": "an HTTP answer's event-stream lines, each bounded by the answer's byte cap",
    "agents/mcp_start.py": "the MCP wire's first line, bounded, read as the SDK's transport reads the rest (the handshake answered before it loads)",
}


def test_only_the_reader_reads_lines() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in nodes(path):
            if isinstance(node, ast.Attribute) and node.attr in ("readline", "readlines"):  # called, or bound first
                found.append(path.relative_to(PACKAGE).as_posix())
    assert [f for f in found if not any(f.startswith(allowed) for allowed in LINE_READERS)] == []
    assert "session/jsonl.py" in found


# Calls whose argument is a process exit status.
EXIT_CALLS = {"Exit", "SystemExit", "exit", "_exit"}


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _raw_numbers(expr: ast.AST | None) -> list[ast.Constant]:
    """The int literals EXPR may evaluate to (through `a if c else b`, `a or b`, tuples)."""
    if isinstance(expr, ast.Constant):
        return [expr] if type(expr.value) is int else []
    if isinstance(expr, ast.IfExp):
        return _raw_numbers(expr.body) + _raw_numbers(expr.orelse)
    if isinstance(expr, ast.BoolOp):
        return [c for v in expr.values for c in _raw_numbers(v)]
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in expr.elts for c in _raw_numbers(e)]
    return []


def _is_code_name(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "code" or name.endswith("exit_code")


def raw_exit_numbers(sources: dict[str, str]) -> list[str]:
    """Exit statuses written as numbers rather than `ExitCode` members: the argument of an
    exit call, an `exit_code=` keyword, a `code` variable, and what a function whose result
    becomes the exit status returns (`sys.exit(main())`)."""
    trees = {name: ast.parse(text, name) for name, text in sources.items()}
    status_fns = {"exit_code_for"}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _call_name(node) in EXIT_CALLS:
                status_fns |= {_call_name(a) for a in node.args if isinstance(a, ast.Call)}
    found = []
    for name, tree in trees.items():
        suspects: list[ast.AST | None] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                if _call_name(node) in EXIT_CALLS:
                    suspects += node.args
                suspects += [k.value for k in node.keywords if k.arg == "exit_code"]
            elif isinstance(node, ast.Assign) and any(_is_code_name(t) for t in node.targets):
                suspects.append(node.value)
            elif isinstance(node, ast.AnnAssign) and _is_code_name(node.target):
                suspects.append(node.value)
            elif isinstance(node, ast.Compare) and any(_is_code_name(n) for n in (node.left, *node.comparators)):
                suspects += [node.left, *node.comparators]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in status_fns:
                suspects += [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
        found += [f"{name}:{c.lineno}: {c.value}" for s in suspects for c in _raw_numbers(s)]
    return sorted(set(found))


def test_the_exit_number_finder_finds_planted_numbers() -> None:
    planted = (
        "def main():\n    return 2\n"
        "def run():\n    raise typer.Exit(1)\n"
        "def check():\n    raise Oops('x', exit_code=75 if a else ExitCode.DATA)\n"
        "def go():\n    code = 0\n    sys.exit(main())\n"
        "def fine(errors):\n    raise typer.Exit(errors[0].exit_code)\n"
    )
    assert raw_exit_numbers({"m.py": planted}) == ["m.py:2: 2", "m.py:4: 1", "m.py:6: 75", "m.py:8: 0"]


def test_no_raw_exit_number_in_the_cli() -> None:
    """Every exit status in cli/ (and the entry point) names an `errors.ExitCode` member."""
    paths = [*sorted((PACKAGE / "cli").rglob("*.py")), PACKAGE / "__main__.py"]
    assert raw_exit_numbers({str(p.relative_to(ROOT)): p.read_text() for p in paths}) == []


def _is_cli_param(annotation: ast.AST | None) -> bool:
    """A typer parameter: `Annotated[..., typer.Option(...)]` or a shared `XxxOpt` / `XxxArg` alias."""
    if isinstance(annotation, ast.Name):
        return annotation.id.endswith(("Opt", "Arg"))
    return annotation is not None and any(
        isinstance(n, ast.Call) and _call_name(n) in ("Option", "Argument") for n in ast.walk(annotation))


def literal_defaults(sources: dict[str, str], library_strings: set[str]) -> list[str]:
    """CLI parameters whose default is a number written out, or a string one of the library's
    defaults holds: each must name the library's constant instead."""
    found = []
    for name, text in sources.items():
        for fn in ast.walk(ast.parse(text, name)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = fn.args.posonlyargs + fn.args.args
            pairs = list(zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults))
            pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None]
            for arg, default in pairs:
                if not _is_cli_param(arg.annotation) or not isinstance(default, ast.Constant):
                    continue
                value = default.value
                if (type(value) in (int, float)) or (isinstance(value, str) and value in library_strings):
                    found.append(f"{name}:{default.lineno}: {arg.arg} = {value!r}")
    return found


def _library_strings() -> set[str]:
    from catty_ctx import defaults

    return {v for k, v in vars(defaults).items() if k.isupper() and isinstance(v, str)}


def test_the_literal_default_finder_finds_planted_literals() -> None:
    planted = (
        "def cmd(s: SessionArg, lock: LockTimeoutOpt = 30.0, n: Annotated[int, typer.Option('--n')] = 3,\n"
        "        mode: Annotated[str, typer.Option('--mode')] = 'summary', ok: Annotated[int, typer.Option('--k')] = K,\n"
        "        flag: Annotated[bool, typer.Option('--f')] = False, width: int = 60) -> None: ...\n"
    )
    assert literal_defaults({"m.py": planted}, {"summary"}) == ["m.py:1: lock = 30.0", "m.py:1: n = 3", "m.py:2: mode = 'summary'"]


def test_cli_defaults_name_the_librarys_constants() -> None:
    """No option default in cli/ retypes a library value: numbers and the library's default
    strings come from `catty_ctx.defaults` (which the mechanisms read too)."""
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted((PACKAGE / "cli").rglob("*.py"))}
    assert literal_defaults(sources, _library_strings()) == []


MAX_LINES = 600  # one mechanism per module reads in one sitting


HEADROOM = 540  # a module near the limit gets split before it is squeezed: none within 10 % of it


def test_every_module_keeps_its_headroom() -> None:
    near = {str(p.relative_to(ROOT)): n for p in sorted(PACKAGE.rglob("*.py")) if (n := len(p.read_text().splitlines())) > HEADROOM}
    assert near == {}


def test_no_module_is_over_600_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in sorted(PACKAGE.rglob("*.py")) if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
