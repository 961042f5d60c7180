"""`gpuq`: one command for what people run, each subcommand the `main(argv)` of the module that
has always done it (so `gpuq promote ...` is `python -m gpu_queues.tools.promote ...`, and its
make target still runs the same), loaded only when asked for.

    gpuq <command> [args...]       gpuq <command> --help for its own options
    gpuq completion bash           a bash completion script: eval "$(gpuq completion bash)"
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import io
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_queues.invoked import invoked_as

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Command:
    module: str
    """The module whose main(argv) runs it."""
    summary: str
    make: str
    """The make target that runs the same (tests/unit/test_gpuq.py checks its recipe)."""
    when: dict[str, str] = field(default_factory=dict)
    """Another module for an option: `status --eta` is the estimates' module."""
    checkout: str | None = None
    """The module run instead where this is a gpu-queues checkout (its file is there): named,
    not imported, so the library stays below it (tests/unit/test_layers.py, BY_NAME)."""


COMMANDS: dict[str, Command] = {
    "status": Command(
        "gpu_queues.tools.status",
        "what the live cluster does now, per team (--eta: when each pending workload starts)",
        "status",
        when={"--eta": "gpu_queues.tools.eta"},
    ),
    "eta": Command(
        "gpu_queues.tools.eta",
        "start-time estimates of the pending workloads (the same as status --eta)",
        "status",
    ),
    "record": Command(
        "gpu_queues.tools.record",
        "the live cluster's recent Workloads as a what-if mix",
        "record",
    ),
    "what-if": Command(
        "gpu_queues.whatif.cli",
        "replay a workload mix on the stack's Kueue release, against a base revision too",
        "what-if",
        checkout="sandbox.replay.cli",
    ),
    "advise": Command(
        "gpu_queues.advise.cli",
        "search the stack's GPU quotas and limits for a better setting",
        "advise",
    ),
    "promote": Command(
        "gpu_queues.tools.promote",
        "promote what was tested in one stack to the next",
        "promote",
    ),
    "quota-diff": Command(
        "gpu_queues.tools.quota_diff",
        "the quota changes between two stack configs or revisions",
        "quota-diff",
    ),
    "kueue-diff": Command(
        "gpu_queues.tools.kueue_diff",
        "what a change does to a stack's Kueue release",
        "kueue-diff",
    ),
    "pin-kueue": Command(
        "gpu_queues.release.pin",
        "pin the Kueue release manifest in every stack, or move the pin",
        "pin-kueue",
    ),
}
COMPLETION = "completion"
# The checkout's packages the wheel leaves out (pyproject.toml): the policy pack the advisor
# checks candidates with, the sandbox.
CHECKOUT_PACKAGES = ("policies", "sandbox")


class UsageError(Exception):
    """The command line names no command gpuq has; the message says what it has."""


def module_for(name: str, argv: Sequence[str], root: Path = ROOT) -> str:
    """The module that runs `gpuq <name> <argv>`."""
    command = COMMANDS.get(name)
    if command is None:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(f"no command {name!r}{hint}; the commands: {', '.join(COMMANDS)}")
    for option, module in command.when.items():
        if option in argv:
            return module
    if command.checkout and checkout_file(command.checkout, root).is_file():
        if str(root) not in sys.path:  # run from outside the checkout: its packages by path
            sys.path.append(str(root))
        return command.checkout
    return command.module


def checkout_file(module: str, root: Path = ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def runner(module: str) -> Callable[[list[str]], int]:
    main: Callable[[list[str]], int] = importlib.import_module(module).main
    return main


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [
        "usage: gpuq <command> [args...]   (gpuq <command> --help: its options)",
        "",
        "commands:",
        *(f"  {name:<{width}}  {c.summary}" for name, c in COMMANDS.items()),
        f'  {COMPLETION:<{width}}  print a bash completion script: eval "$(gpuq completion bash)"',
        "",
        "Each runs what its make target runs (make status, make what-if, ...).",
    ]
    return "\n".join(lines)


def help_text(module: str) -> str:
    """What `<module> --help` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit), invoked_as("gpuq"):
        runner(module)(["--help"])
    return out.getvalue()


def options(help_output: str) -> list[str]:
    """The long options an argparse --help lists in its options section."""
    _, _, section = help_output.rpartition("\noptions:\n")
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", section)))


def completion_script() -> str:
    """A bash completion function for gpuq: its commands, then each command's options (read
    from its --help now, so run it again after an upgrade)."""
    cases = []
    for name, command in COMMANDS.items():
        found = set(options(help_text(module_for(name, []))))
        for module in command.when.values():
            found |= set(options(help_text(module)))
        cases.append(f'        {name}) opts="{" ".join(sorted(found))}" ;;')
    words = " ".join([*COMMANDS, COMPLETION])
    return "\n".join(
        [
            '# bash completion for gpuq: eval "$(gpuq completion bash)", or save it as',
            "# ~/.local/share/bash-completion/completions/gpuq",
            "_gpuq() {",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" opts=""',
            "    if [[ $COMP_CWORD -eq 1 ]]; then",
            f'        mapfile -t COMPREPLY < <(compgen -W "{words}" -- "$cur")',
            "        return",
            "    fi",
            '    case "${COMP_WORDS[1]}" in',
            *cases,
            '        completion) opts="bash" ;;',
            "    esac",
            "    if [[ $cur == -* || ${COMP_WORDS[1]} == completion ]]; then",
            '        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")',
            "    fi",
            "}",
            "complete -o default -F _gpuq gpuq",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name == COMPLETION:
        if rest != ["bash"]:
            print("gpuq completion: say which shell: gpuq completion bash", file=sys.stderr)
            return 2
        print(completion_script(), end="")
        return 0
    try:
        module = module_for(name, rest)
    except UsageError as exc:
        print(f"gpuq: {exc} (gpuq --help)", file=sys.stderr)
        return 2
    try:
        run = runner(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in CHECKOUT_PACKAGES:
            raise
        print(
            f"gpuq {name}: needs a gpu-queues checkout (its {exc.name} package is not part of "
            f"the installed library): run it in one (`make {COMMANDS[name].make}`)",
            file=sys.stderr,
        )
        return 2
    with invoked_as(f"gpuq {name}"):
        return run(rest)


if __name__ == "__main__":
    sys.exit(main())
