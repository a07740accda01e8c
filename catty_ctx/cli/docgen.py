"""Man pages and shell completions generated from the CLI's own definitions.

One source of truth (as httpie does it): the typer/click command tree gives the names,
options, help texts and examples; this module renders them as roff pages and as static
bash, zsh and fish completion scripts. `python -m catty_ctx.cli.docgen` rewrites man/ and
completions/; a test fails when the committed files are stale.
"""
from __future__ import annotations

import enum
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import typer

from .._version import __version__
from ..errors import EXIT_MEANINGS, ExitCode
from .app import app, example_lines, load_commands
from .fastpath import CHOICES, as_written
from .registry import BY_NAME

SHELLS = ("bash", "zsh", "fish")

FILES = [
    ("SESSION/updates.jsonl", "the append-only event log, the source of truth"),
    ("SESSION/summary.json", "session metadata; its presence makes SESSION resumable"),
    ("SESSION/updates.jsonl.lock", "the writers' lock"),
    ("SESSION/updates.jsonl.batch", "while a batch that crosses a page is written, its start and end (the next writer cuts back what a kill left)"),
    ("SESSION/segments/", "the compaction archive: segment_NNN.md, INDEX.md, index.json"),
    ("SESSION/compaction_requests/", "one artifact per compaction: the summariser's exact input and output"),
    ("SESSION/blobs/", "content-addressed large payloads, named by their xxh3-128 hex"),
    ("SESSION/quarantine/", "bytes moved out of the log (a torn tail, a cut batch, invalid lines), with index.jsonl"),
]
ENVIRONMENT = [
    ("OPENAI_BASE_URL", "base URL of the OpenAI-compatible endpoint used by --summarizer openai:MODEL"),
    ("OPENAI_API_KEY", "its API key"),
    ("XDG_CACHE_HOME", "where usage keeps its per-file cache (XDG_CACHE_HOME/catty-ctx)"),
    ("XDG_CONFIG_HOME", "where instructions looks for global instruction files"),
    ("CATTY_CTX_DEBUG", "set to 1 to get a traceback instead of a one-line internal error"),
    ("CATTY_CTX_RETRY_BACKOFF", "seconds before a summariser's second attempt (default 3; later waits double)"),
]
EXIT_STATUS = [(str(int(code)), meaning) for code, meaning in EXIT_MEANINGS.items()]


@dataclass
class Opt:
    names: list[str]
    help: str
    metavar: str | None  # None for a flag
    choices: list[str] = field(default_factory=list)


@dataclass
class Cmd:
    path: list[str]  # e.g. ["segment", "grep"]
    help: str
    examples: list[str]
    arguments: list[tuple[str, str, list[str]]]  # (metavar, help, allowed values)
    options: list[Opt]
    subcommands: list[Cmd] = field(default_factory=list)
    summary: str = ""  # a command's line in the registry (top-level commands only)

    @property
    def brief(self) -> str:
        """What the lists of commands show: the registry's summary, else the help's first paragraph."""
        return self.summary or self.help.split("\n\n")[0]

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def page(self) -> str:
        return "-".join(["catty-ctx", *self.path])


def _choices(param: Any, path: list[str]) -> list[str]:
    """Allowed values of an option or argument: declared with its command (`fastpath.allow`),
    a click Choice, an Enum or a Literal annotation."""
    declared = CHOICES.get((" ".join(path), param.name))
    if declared:
        return list(declared)
    t = getattr(param, "type", None)
    if t is not None and getattr(t, "choices", None):
        return [str(c) for c in t.choices]
    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        return [str(e.value) for e in ann]
    if get_origin(ann) is Literal:
        return [str(a) for a in get_args(ann)]
    return []


def _describe(cmd: Any, path: list[str]) -> Cmd:
    arguments: list[tuple[str, str, list[str]]] = []
    options: list[Opt] = []
    for p in cmd.params:
        if getattr(p, "param_type_name", "") == "argument":
            arguments.append((p.metavar or p.name.upper(), as_written(getattr(p, "help", None) or ""), _choices(p, path)))
        elif getattr(p, "param_type_name", "") == "option":
            if getattr(p, "hidden", False):
                continue
            metavar = None if p.is_flag else (p.metavar or p.name.upper())
            options.append(Opt(list(p.opts) + list(p.secondary_opts), as_written(p.help or ""), metavar, _choices(p, path)))
    options.append(Opt(["-h", "--help"], "Show the help and exit.", None))
    c = Cmd(path, as_written(cmd.help or "").strip(), example_lines(as_written(cmd.epilog or "")), arguments, options)
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        if not getattr(sub, "hidden", False):
            c.subcommands.append(_describe(sub, [*path, name]))
    return c


def command_tree() -> Cmd:
    """The program's commands as typer declares them, the top level exactly the registry's."""
    load_commands()
    root = _describe(typer.main.get_command(app), [])
    declared = [c.path[0] for c in root.subcommands]
    if sorted(declared) != sorted(BY_NAME):
        raise RuntimeError(f"the commands declared ({', '.join(declared)}) are not the registry's ({', '.join(BY_NAME)})")
    for c in root.subcommands:
        c.summary = BY_NAME[c.path[0]].summary
    return root


def _all(cmd: Cmd) -> list[Cmd]:
    out = [cmd]
    for sub in cmd.subcommands:
        out.extend(_all(sub))
    return out


# -- man pages ---------------------------------------------------------------------------


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.splitlines():
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def _paragraphs(text: str) -> str:
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    return "\n.PP\n".join(_roff(p) for p in paras)


def _synopsis(cmd: Cmd) -> str:
    words = ["catty-ctx", *cmd.path]
    if cmd.subcommands:
        return f".B {' '.join(words)}\n.I COMMAND\n[\\fIOPTIONS\\fR]"
    args = " ".join(f"\\fI{_roff(m)}\\fR" for m, _, _ in cmd.arguments)
    return f".B {' '.join(words)}\n[\\fIOPTIONS\\fR] {args}".rstrip()


def man_page(cmd: Cmd, root: Cmd) -> str:
    title = cmd.page.upper()
    first = cmd.help.split("\n\n")[0] if cmd.help else ""
    out = [
        f'.TH "{title}" "1" "" "catty-ctx {__version__}" "catty-ctx manual"',
        ".SH NAME",
        f"{cmd.page} \\- {_roff(' '.join(first.split()))}",
        ".SH SYNOPSIS",
        _synopsis(cmd),
        ".SH DESCRIPTION",
        _paragraphs(cmd.help) or _roff(cmd.name),
    ]
    if cmd.arguments:
        out.append(".SH ARGUMENTS")
        for metavar, help_, allowed in cmd.arguments:
            text = " ".join(help_.split()) + (" One of: " + ", ".join(allowed) + "." if allowed else "")
            out += [".TP", f"\\fI{_roff(metavar)}\\fR", _roff(text)]
    if cmd.subcommands:
        out.append(".SH COMMANDS")
        for sub in cmd.subcommands:
            out += [".TP", f"\\fB{_roff(sub.path[-1])}\\fR", _roff(" ".join(sub.brief.split())) + f" See \\fB{sub.page}\\fR(1)."]
    out.append(".SH OPTIONS")
    for opt in cmd.options:
        names = ", ".join(f"\\fB{_roff(n)}\\fR" for n in opt.names)
        if opt.metavar:
            names += f" \\fI{_roff(opt.metavar)}\\fR"
        help_ = " ".join(opt.help.split())
        if opt.choices:
            help_ += " One of: " + ", ".join(opt.choices) + "."
        out += [".TP", names, _roff(help_)]
    out.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        out += [".TP", f"\\fB{code}\\fR", _roff(meaning)]
    out.append(".SH FILES")
    for path, meaning in FILES:
        out += [".TP", f"\\fI{_roff(path)}\\fR", _roff(meaning)]
    out.append(".SH ENVIRONMENT")
    for name, meaning in ENVIRONMENT:
        out += [".TP", f"\\fB{name}\\fR", _roff(meaning)]
    examples = cmd.examples or [e for sub in cmd.subcommands for e in sub.examples[:1]]
    if examples:
        out.append(".SH EXAMPLES")
        for ex in examples:
            out += [".PP", ".nf", ".RS 4", _roff(ex), ".RE", ".fi"]
    if not cmd.path:
        see = [f"\\fB{c.page}\\fR(1)" for c in _all(root) if c.path]
    elif cmd.subcommands:
        see = ["\\fBcatty-ctx\\fR(1)"] + [f"\\fB{s.page}\\fR(1)" for s in cmd.subcommands]
    else:
        see = ["\\fBcatty-ctx\\fR(1)"]
    out += [".SH SEE ALSO", ", ".join(see)]
    return "\n".join(out) + "\n"


# -- completions -------------------------------------------------------------------------


def _option_words(cmd: Cmd) -> list[str]:
    return [n for o in cmd.options for n in o.names]


def _short(text: str, width: int) -> str:
    """TEXT on one line, at most WIDTH characters, cut between words (an ellipsis says so)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: width - 1].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…"


def bash_completion(root: Cmd) -> str:
    cases = []
    for cmd in _all(root):
        key = " ".join(cmd.path) or "__root__"
        words = [s.path[-1] for s in cmd.subcommands] + _option_words(cmd)
        if not cmd.path:
            words.append("--version")
        cases.append(f'        "{key}") opts="{" ".join(sorted(set(words)))}" ;;')
    choice_cases = []
    argument_cases = []
    valued: set[str] = set()
    for cmd in _all(root):
        for opt in cmd.options:
            if opt.metavar:
                valued.update(opt.names)
            if opt.choices:
                for n in opt.names:
                    choice_cases.append(f'        "{" ".join(cmd.path)}|{n}") COMPREPLY=($(compgen -W "{" ".join(opt.choices)}" -- "$cur")); return ;;')
        for index, (_metavar, _help, allowed) in enumerate(cmd.arguments):
            if allowed:
                argument_cases.append(f'        "{" ".join(cmd.path)}|{index}") COMPREPLY=($(compgen -W "{" ".join(allowed)}" -- "$cur")); return ;;')
    groups = " ".join(sorted({" ".join(c.path) for c in _all(root) if c.subcommands and c.path}))
    return f"""# bash completion for catty-ctx (generated; do not edit)
_catty_ctx() {{
    local cur prev path="" npos=0 w i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local groups=" {groups} "
    local valued=" {" ".join(sorted(valued))} "
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        if [[ "$w" == -* ]]; then
            [[ "$valued" == *" $w "* ]] && ((i++))
            continue
        fi
        if [[ -z "$path" ]]; then path="$w"
        elif [[ "$groups" == *" $path "* && "$path" != *" "* ]]; then path="$path $w"
        else ((npos++))
        fi
    done
    case "$path|$prev" in
{chr(10).join(choice_cases)}
    esac
    if [[ "$cur" != -* && "$valued" != *" $prev "* ]]; then
        case "$path|$npos" in
{chr(10).join(argument_cases)}
        esac
    fi
    local opts=""
    case "${{path:-__root__}}" in
{chr(10).join(cases)}
    esac
    if [[ "$cur" == -* || -z "$path" || "$groups" == *" $path "* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o filenames -F _catty_ctx catty-ctx
"""


def _zsh_escape(text: str) -> str:
    return text.replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh_completion(root: Cmd) -> str:
    funcs = []
    for cmd in _all(root):
        fname = "_catty_ctx" + "".join("_" + p.replace("-", "_") for p in cmd.path)
        specs = []
        for opt in cmd.options:
            help_ = _zsh_escape(_short(opt.help, 70))
            action = ""
            if opt.metavar:
                action = f":{opt.metavar.lower()}:" + (f"({' '.join(opt.choices)})" if opt.choices else "_files")
            names = opt.names
            if len(names) == 1:
                specs.append(f"'{names[0]}[{help_}]{action}'")
            else:
                specs.append(f"'({' '.join(names)})'{{{','.join(names)}}}'[{help_}]{action}'")
        if cmd.subcommands:
            subs = " ".join(f"'{s.path[-1]}:{_zsh_escape(_short(s.brief, 60))}'" for s in cmd.subcommands)
            body = f"""    local -a subcmds
    subcmds=({subs})
    _arguments -C \\
        {' '.join(specs)} \\
        '1: :->cmd' '*:: :->args'
    case $state in
        cmd) _describe 'command' subcmds ;;
        args) case $words[1] in
{chr(10).join(f'            {s.path[-1]}) {fname}_{s.path[-1].replace("-", "_")} ;;' for s in cmd.subcommands)}
        esac ;;
    esac"""
        else:
            positional = [f"'{i + 1}:{_zsh_escape(m.lower())}:({' '.join(allowed)})'" for i, (m, _h, allowed) in enumerate(cmd.arguments) if allowed]
            body = f"    _arguments {' '.join(specs + positional)} '*:file:_files'"
        funcs.append(f"{fname}() {{\n{body}\n}}")
    return "#compdef catty-ctx\n# zsh completion for catty-ctx (generated; do not edit)\n\n" + "\n\n".join(funcs) + '\n\nif [ "$funcstack[1]" = "_catty-ctx" ]; then\n    _catty_ctx "$@"\nelse\n    compdef _catty_ctx catty-ctx\nfi\n'


def fish_completion(root: Cmd) -> str:
    lines = ["# fish completion for catty-ctx (generated; do not edit)", "complete -c catty-ctx -f"]
    top = [s.path[-1] for s in root.subcommands]
    lines.append(f"complete -c catty-ctx -n 'not __fish_seen_subcommand_from {' '.join(top)}' -l version -d 'Print the version and exit'")
    for sub in root.subcommands:
        desc = _short(sub.brief, 60).replace("'", "\\'")
        lines.append(f"complete -c catty-ctx -n 'not __fish_seen_subcommand_from {' '.join(top)}' -a {sub.path[-1]} -d '{desc}'")
    for cmd in _all(root):
        if not cmd.path:
            continue
        cond = " && ".join(f"__fish_seen_subcommand_from {p}" for p in cmd.path)
        for sub in cmd.subcommands:
            desc = _short(sub.brief, 60).replace("'", "\\'")
            lines.append(f"complete -c catty-ctx -n '{cond}' -a {sub.path[-1]} -d '{desc}'")
        for opt in cmd.options:
            parts = []
            for n in opt.names:
                parts.append(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}")
            desc = _short(opt.help, 60).replace("'", "\\'")
            extra = ""
            if opt.metavar:
                extra = f" -x -a '{' '.join(opt.choices)}'" if opt.choices else " -r -F"
            lines.append(f"complete -c catty-ctx -n '{cond}' {' '.join(parts)}{extra} -d '{desc}'")
        first = cmd.arguments[0][2] if cmd.arguments else []
        if first:  # its values until one of them is given, files after it
            lines.append(f"complete -c catty-ctx -n '{cond}; and not __fish_seen_subcommand_from {' '.join(first)}' -a '{' '.join(first)}'")
        if not cmd.subcommands:
            after = f"; and __fish_seen_subcommand_from {' '.join(first)}" if first else ""
            lines.append(f"complete -c catty-ctx -n '{cond}{after}' -F")
    return "\n".join(lines) + "\n"


def completion(shell: str) -> str:
    root = command_tree()
    return {"bash": bash_completion, "zsh": zsh_completion, "fish": fish_completion}[shell](root)


def generated_files() -> dict[str, str]:
    """Every generated file, by its path relative to the project root."""
    root = command_tree()
    files = {f"man/{c.page}.1": man_page(c, root) for c in _all(root)}
    files["completions/catty-ctx.bash"] = bash_completion(root)
    files["completions/_catty-ctx"] = zsh_completion(root)
    files["completions/catty-ctx.fish"] = fish_completion(root)
    return files


USAGE = "usage: python -m catty_ctx.cli.docgen [PROJECT_ROOT]"


def main(argv: list[str] | None = None) -> ExitCode:
    """Write man/ and completions/ under the given project root (default: the current folder)."""
    args = argv if argv is not None else sys.argv[1:]
    # An option is never a folder name: `docgen --help` once wrote a tree named "--help".
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(USAGE if args[0] in ("-h", "--help") else f"docgen: unknown argument {args[0]!r}\n{USAGE}", file=sys.stderr)
        return ExitCode.OK if args[0] in ("-h", "--help") else ExitCode.USAGE
    base = Path(args[0]) if args else Path.cwd()
    if not (base / "catty_ctx").is_dir():
        print(f"docgen: {base} is not the project root (no catty_ctx/ in it)", file=sys.stderr)
        return ExitCode.USAGE
    for rel, text in generated_files().items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {rel}")
    for old in list((base / "man").glob("catty-ctx*.1")):
        if f"man/{old.name}" not in generated_files():
            old.unlink()
            print(f"removed {old.relative_to(base)}")
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
