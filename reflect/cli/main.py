"""The ``reflect`` command: parse, call the library, format. No logic of its own.

Exit codes: 0 done; 1 the operation failed; 2 misuse. ``capture``, ``recall``
and ``outcome`` exit 0 on bad input after a one-line warning, so memory never
breaks the agent loop.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from reflect import __version__
from reflect.base import config
from reflect.base.choices import SEMANTIC_MODES
from reflect.base.config import DEFAULT_MAX_TOKENS
from reflect.base.output import Handler, emit, first_line, format_option, when
from reflect.base.text import format_error
from reflect.capture.numbers import bounded
from reflect.cli.arguments import count, number
from reflect.cli.learn import add_learn
from reflect.cli.lessons import LESSON_COMMANDS, open_memory
from reflect.cli.pipe import closed_pipe
from reflect.cli.rules import add_rules

if TYPE_CHECKING:
    from reflect.base.answers import StoreState

LOOP_COMMANDS = {"capture", "recall", "outcome"}
PER_STEP = {*LOOP_COMMANDS, "hook"}  # a process per agent step or tool call


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The command ``argv``, in the environment ``env`` (the process's by default): the
    one place a command reads it, every setting it holds read from it once."""
    argv = sys.argv[1:] if argv is None else argv
    config.log_to_stderr(lazily=bool(argv) and argv[0] in PER_STEP)
    args = parser(argv[0] if argv else None).parse_args(argv)
    args.env = os.environ if env is None else env
    if args.command in LOOP_COMMANDS and not config.enabled(args.env):
        return 0
    handler: Handler = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # a closed pipe is found here, not at exit
        return code
    except BrokenPipeError:  # `reflect stats | head -1`: the reader had what it wanted
        return closed_pipe()
    except Exception as e:
        if args.command in LOOP_COMMANDS:
            config.warn(f"{args.command} failed ({e}); the agent loop goes on")
            return 0
        print(f"reflect: error: {e}", file=sys.stderr)
        return 1


@functools.cache  # built once: a helper's children inherit the parsers its warm-up built
def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line. Given the ``command`` about to run, only its part is built: a
    hook starts a process per tool call, and the ~40 parsers of all commands cost it
    ~10 ms. Anything else (``--help``, a typo) gets every command."""
    p = TopParser(prog="reflect", description="Failure memory for coding agents.")
    p.add_argument("--version", action="version", version=f"reflect {__version__}")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = p.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser)
    for name, add in COMMANDS.items():
        if command not in COMMANDS or name == command:
            add(sub)
    return p


class TopParser(argparse.ArgumentParser):
    """The command line's top: an option before the command that it does not know is said
    to be one, with the nearest it has (``--verison``: ``--version``), not taken for a
    missing COMMAND."""

    def parse_known_args(self, args: Iterable[str] | None = None, namespace: Any = None
                         ) -> tuple[Any, list[str]]:  # as argparse's: whatever namespace given
        args = sys.argv[1:] if args is None else list(args)
        options = [s for a in self._actions for s in a.option_strings]
        for arg in args:
            if not arg.startswith("-") or arg == "--":
                break
            if not any(option.startswith(arg) for option in options):  # a prefix is taken
                import difflib

                near = difflib.get_close_matches(arg, options, 1)
                self.error(f"unknown option {arg}" + (f"; did you mean {near[0]}?" if near
                                                      else ""))
        return super().parse_known_args(args, namespace)


class CommandParser(argparse.ArgumentParser):
    """A command's parser says what it did not understand itself, with its own usage
    (``reflect capture --bogus`` shows capture's, not the list of commands). Its
    subcommands' parsers are of this class too (argparse gives them the parent's)."""

    def parse_known_args(self, args: Iterable[str] | None = None, namespace: Any = None
                         ) -> tuple[Any, list[str]]:  # as argparse's: whatever namespace given
        if args is not None:
            args = self.dashed_values(list(args))
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def dashed_values(self, args: list[str]) -> list[str]:
        """``--exit-code -2**70``, ``--goal -x`` as ``--exit-code=-2**70``: argparse takes a
        value that begins with ``-`` (but for a plain negative number) for an option, and
        stops the command with a usage error; a value that is no option of this command is
        the value of the option before it, for the library to judge. A command that passes
        the rest on (``reflect run -- CMD``) is left as it is."""
        if any(a.nargs == argparse.REMAINDER for a in self._actions):
            return args
        options = [s for a in self._actions for s in a.option_strings]
        takes_value = [s for a in self._actions if a.nargs is None for s in a.option_strings]

        def named(arg: str, among: list[str]) -> bool:  # argparse takes --opt for --option
            return arg in among or (arg.startswith("--") and any(o.startswith(arg) for o in among))

        joined: list[str] = []
        i = 0
        while i < len(args):
            arg, value = args[i], args[i + 1] if i + 1 < len(args) else ""
            if arg == "--":
                return joined + args[i:]
            if (named(arg, takes_value) and value.startswith("-") and value != "-"
                    and not named(value, options)):
                joined.append(f"{arg}={value}")
                i += 2
            else:
                joined.append(arg)
                i += 1
        return joined


def command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
            handler: Handler | None, help: str) -> argparse.ArgumentParser:
    c = sub.add_parser(name, help=help, description=help)
    c.set_defaults(handler=handler)
    return c


def run_option(c: argparse.ArgumentParser, help: str = "run id (default: $REFLECT_RUN)") -> None:
    c.add_argument("--run", help=help)


def model_option(c: argparse.ArgumentParser) -> None:
    c.add_argument("--model", help="litellm model for lessons (default: $REFLECT_MODEL)")


def add_capture(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "capture", cmd_capture, "Record a failed iteration.")
    run_option(c)
    # capture reads its numbers leniently (the library warns and keeps the row)
    c.add_argument("--iteration", help="default: the run's next number")
    c.add_argument("--goal", default="", help="what the run is trying to do")
    c.add_argument("--phase", default="", help="where in the iteration it failed (test, build…)")
    c.add_argument("--action", default="", help="the command that failed")
    c.add_argument("--exit-code", help="its exit code")
    c.add_argument("--crash-file", metavar="F", help="a crash record (JSON) from the harness")
    c.add_argument("--error-file", metavar="F", help="error output to read, - for stdin")
    model_option(c)
    format_option(c)


def add_recall(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "recall", cmd_recall, "Print the block for the next iteration's prompt.")
    run_option(c)
    c.add_argument("--goal", default="", help="what the run is trying to do: lessons that fit")
    c.add_argument("--phase", default="", help="the phase about to run")
    c.add_argument("--iteration", type=number, help="the iteration about to run")
    c.add_argument("--action", default="",
                   help="the command about to run: lessons taught for it are recalled")
    c.add_argument("--max-tokens", type=number, default=DEFAULT_MAX_TOKENS,
                   help=f"the block's budget, four characters a token "
                        f"(default {DEFAULT_MAX_TOKENS})")
    c.add_argument("--semantic", choices=SEMANTIC_MODES, default=SEMANTIC_MODES[0],
                   help="cached: use vectors the worker made, queue the rest (default); "
                        "wait: load the embedding model here")
    format_option(c)


def add_outcome(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "outcome", cmd_outcome, "Report how an iteration ended.")
    run_option(c)
    c.add_argument("--iteration", type=number, required=True, help="the iteration that ended")
    ended = c.add_mutually_exclusive_group(required=True)
    ended.add_argument("--success", action="store_true",
                       help="it worked: credit what was shown, resolve the failures it got past")
    ended.add_argument("--failure", action="store_true",
                       help="it failed (credited when its failure is captured)")
    c.add_argument("--action", default="", help="the command that worked")
    model_option(c)
    format_option(c)


def add_worker(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "worker", cmd_worker, "Run queued jobs: model-written lessons, embeddings.")
    model_option(c)
    c.add_argument("--once", action="store_true", help="run the jobs due now, then exit")
    c.add_argument("--idle-exit", type=float, metavar="SECONDS", help="exit when idle this long")
    c.add_argument("--nice", type=int, default=0, help="lower this process's priority by N")


def add_status(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    format_option(command(sub, "status", cmd_status, "Queue, worker, model and spend."))


def add_failures(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "failures", None, "Inspect captured failures.")
    what = c.add_subparsers(dest="what", required=True, metavar="list|show")
    ls = what.add_parser("list", help="the latest failures, newest first")
    ls.set_defaults(handler=cmd_failures_list)
    run_option(ls, "only this run")
    ls.add_argument("--limit", type=count, default=20, help="at most N (default 20)",
                    metavar="N")
    ls.add_argument("--all", action="store_true",
                    help="with the exits that answered a question (grep found nothing)")
    format_option(ls)
    show = what.add_parser("show", help="one failure with its hint")
    show.set_defaults(handler=cmd_failures_show)
    show.add_argument("id", help="a failure id (F-...)")
    format_option(show)


def add_stats(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "stats", cmd_stats, "Counts by category, error type and run.")
    run_option(c, "only this run")
    format_option(c)


def add_clear(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "clear", cmd_clear, "Delete captured failures.")
    which = c.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", help="delete this run's failures")
    which.add_argument("--all", action="store_true", help="delete everything (needs --yes)")
    c.add_argument("--yes", action="store_true", help="confirm --all")


def add_hook(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from reflect.integrations.clients import CLIENTS  # here: a capture needs no client

    c = command(sub, "hook", cmd_hook,
                "Answer one hook event (JSON on stdin) of an agent's client.")
    c.add_argument("client", choices=list(CLIENTS),
                   help=f"whose event it is: {' or '.join(CLIENTS)}")


def add_install(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from reflect.integrations.clients import CLIENTS

    c = command(sub, "install", None, "Put reflect's hooks into an agent's settings.")
    client = c.add_subparsers(dest="client", required=True, metavar="|".join(CLIENTS))
    for name, registered in CLIENTS.items():
        i = client.add_parser(name, help=f"the hooks for {name}")
        i.set_defaults(handler=cmd_install)
        where = i.add_mutually_exclusive_group()
        for scope, (path, what) in registered.scopes.items():
            where.add_argument(f"--{scope}", dest="scope", action="store_const", const=scope,
                               help=f"{path}{what}")
        if name == "claude-code":
            where.add_argument("--plugin", metavar="DIR", help="write a plugin there instead")
        i.add_argument("--uninstall", action="store_true", help="remove reflect's hooks")


def add_mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command(sub, "mcp", cmd_mcp, "Serve the memory to an MCP client over stdio.")


def add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = command(sub, "run", cmd_run,
                "Run a test command; on failure capture it and print the block.")
    run_option(c)
    c.add_argument("--goal", default="", help="what the run is trying to do")
    c.add_argument("--phase", default="test", help="the phase of a failure (default test)")
    c.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the command, after --")


def cmd_hook(args: argparse.Namespace) -> int:
    from reflect.cli.hook import answer

    return answer(args.client, args.env)


def cmd_install(args: argparse.Namespace) -> int:
    from reflect.integrations.clients import DEFAULT_SCOPE, client

    extra: dict[str, Any] = {"plugin": args.plugin} if getattr(args, "plugin", None) else {}
    print(client(args.client).install(args.scope or DEFAULT_SCOPE, args.uninstall, **extra))
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:  # found, not imported: that comes later
        print("reflect: error: `reflect mcp` needs the MCP SDK, which is not installed; "
              "install it with `pip install 'reflect-memory[mcp]'`", file=sys.stderr)
        return 1
    from reflect.integrations import budget, mcp_start

    stdin = mcp_start.start()  # the client's handshake answered, and its lists, without the SDK
    from reflect.integrations import mcp  # the SDK: the rest of the start

    budget.leave(mcp.serve(stdin))  # the SDK's teardown is ~0.2 s of the client's wait


def cmd_run(args: argparse.Namespace) -> int:
    from reflect.integrations import run

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        print("reflect: error: no command to run; give it after --: "
              "`reflect run -- pytest -x`", file=sys.stderr)
        return 2
    return run.run(argv, run=args.run, goal=args.goal, phase=args.phase, env=args.env)


def cmd_capture(args: argparse.Namespace) -> int:
    from reflect.capture.entry import nothing_said, read_crash_file, read_error_file

    error_text: str | None = None
    crash: dict[str, Any] = {}
    problems: list[str] = []
    if args.error_file:
        error_text, problems = read_error_file(args.error_file, sys.stdin)
    if args.crash_file:
        crash, more = read_crash_file(args.crash_file)
        problems += more
    for problem in problems:
        config.warn(problem)
    if nothing_said(error_text, args.exit_code, crash):
        config.warn("capture: nothing recorded: no error text, exit code or crash file came "
                    "(give the step's error output with --error-file F, - for stdin, and its "
                    "--exit-code N)")
        return 0
    with open_memory(args.env, model=args.model, busy_timeout=config.STEP_BUSY_TIMEOUT) as mem:
        entry = mem.capture(
            run=args.run, iteration=args.iteration, goal=args.goal, phase=args.phase,
            action=args.action, exit_code=args.exit_code, error_text=error_text, crash=crash,
        )
        mem.ensure_worker()
    if entry is None:  # failure memory is off (``main`` returned before, but a caller may not)
        return 0
    if entry.source == "synthesized" and not problems:  # a problem said why already
        config.warn(f"capture: {entry.failure_id} recorded from its exit code alone: no error "
                    "text came (--error-file F, - for stdin)")
    emit(args, entry.to_dict(), f"{entry.failure_id} run {entry.run} iteration {entry.iteration}: "
         + format_error(entry.error_type, (entry.message or "\n").splitlines()[0]))
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    with open_memory(args.env, embed_here=args.semantic == SEMANTIC_MODES[1],
                     busy_timeout=config.STEP_BUSY_TIMEOUT) as mem:
        max_tokens = bounded(args.max_tokens, "--max-tokens", 0)
        rec = mem.recall(run=args.run, goal=args.goal, phase=args.phase,
                         iteration=bounded(args.iteration, "iteration", 0),
                         max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
                         action=args.action)
        # Said to a person at a terminal, not into a harness's log at every empty step.
        note = mem.elsewhere() if not rec.text and sys.stderr.isatty() else ""
    emit(args, rec.to_dict(), rec.text)
    if note:
        print(f"reflect: nothing to recall: {note}", file=sys.stderr)
    return 0


def cmd_outcome(args: argparse.Namespace) -> int:
    with open_memory(args.env, model=args.model, busy_timeout=config.STEP_BUSY_TIMEOUT) as mem:
        resolved = mem.outcome(run=args.run, iteration=bounded(args.iteration, "iteration", 0),
                               success=args.success, action=args.action)
        mem.ensure_worker()
    emit(args, {"resolved_failure_ids": resolved},
         f"resolved {len(resolved)} failure(s)" if resolved else "")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    if args.nice:
        os.nice(args.nice)
    with open_memory(args.env, model=args.model) as mem:
        if mem.model is None and mem.embeddings is None:
            print("reflect: no model and embeddings off (REFLECT_MODEL, REFLECT_EMBEDDINGS);"
                  " nothing to run", file=sys.stderr)
            return 0
        done = mem.run_worker(once=args.once, idle_exit=args.idle_exit)
    if args.once:
        print(f"ran {done} job(s)")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from reflect.integrations.heard import heard

    with open_memory(args.env) as mem:
        status = mem.status()
        hooks = heard(mem.home, args.env)
    jobs, cap = status.jobs, status.max_cost_usd
    lines = [
        f"model: {status.model or 'none (heuristic lessons only; set REFLECT_MODEL)'}",
        f"embeddings: {status.embeddings or 'on, no vectors yet (the worker makes them)'}",
        "jobs: " + (", ".join(f"{n} {state}" for state, n in sorted(jobs.items())) or "none"),
        f"spend today: ${status.spend_today_usd:.4f} in {status.calls_today} call(s)"
        + (f" (cap ${cap:.2f})" if cap is not None else ""),
        f"workers alive: {status.workers_alive}",
        store_line(status.store),
    ]
    if status.quarantined:
        lines.append(f"lessons quarantined: {status.quarantined} (kept for a person, never"
                     " recalled: `reflect lessons list --status quarantined`)")
    lines += [f"  job {j['id']} {j['kind']} {j['target']}: {j['reason']}"
              for j in status.failed_jobs]
    lines += [f"hooks: {h.text}" for h in hooks]
    emit(args, {**status.to_dict(), "hooks": [h.to_dict() for h in hooks]}, "\n".join(lines))
    return 0


def store_line(store: StoreState) -> str:
    bound = store["max_failures"]
    line = (f"store: {store['path']}, {store['bytes'] / 1e6:.1f} MB, {store['failures']:,}"
            f" failure(s)" + (f" of at most {bound:,}" if bound else ""))
    if store["kept_aside"]:
        line += (f"; {store['kept_aside']} capture(s) kept aside, replayed by the next"
                 " capture (`reflect doctor` if they stay)")
    return line


def cmd_failures_list(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        entries = mem.failures(run=args.run, limit=args.limit, benign=args.all)
    lines = [
        f"{e.failure_id}  {when(e.ts)}  {e.run}#{e.iteration}  {e.category:<11}  "
        f"{e.error_type}: {first_line(e.message, 80)}"
        for e in entries
    ]
    emit(args, {"failures": [e.to_dict() for e in entries]}, "\n".join(lines) or "no failures")
    return 0


def cmd_failures_show(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        entry = mem.failure(args.id)
    if entry is None:
        print(f"reflect: error: no failure {args.id}; `reflect failures list` shows the ids",
              file=sys.stderr)
        return 1
    fields = entry.to_dict()
    shown = {**fields, "ts": f"{when(entry.ts)} UTC"}  # JSON keeps the epoch seconds
    text = "\n".join(f"{k:>11}: {v}" for k, v in shown.items() if v not in ("", None))
    emit(args, fields, text)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        stats = mem.stats(run=args.run)
    lines = [f"failures: {stats.failures}",
             f"benign exits (not failures): {stats.benign}",
             f"most common error: {stats.most_common_error or '-'}"]
    for title, counts in (("by category", stats.by_category),
                          ("by error type", stats.by_error_type), ("by run", stats.by_run)):
        lines.append(f"{title}:")
        lines += [f"  {n:>6}  {name}" for name, n in counts.items()]
    emit(args, stats.to_dict(), "\n".join(lines))
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    if args.all and not args.yes:
        print("reflect: error: --all deletes every failure; add --yes to confirm", file=sys.stderr)
        return 2
    with open_memory(args.env) as mem:
        n = mem.clear(run=None if args.all else args.run)
    print(f"deleted {n} failure(s)")
    return 0


def add_eval(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from reflect.eval import add_eval_command  # not at import: a hook never evaluates

    add_eval_command(sub)


# name -> what adds it to the parser, in the order ``reflect --help`` lists them
COMMANDS = {
    "capture": add_capture, "recall": add_recall, "outcome": add_outcome,
    "worker": add_worker, "status": add_status, "failures": add_failures, "stats": add_stats,
    "clear": add_clear, "hook": add_hook, "install": add_install, "mcp": add_mcp,
    "run": add_run, **LESSON_COMMANDS, "rules": add_rules, "learn": add_learn,
    "eval": add_eval,
}
