"""``reflect eval``: subcommands registered on the main parser.

Parse, call the library, format. The evaluation modules (and numpy) are
imported inside the handlers, so ``reflect capture`` never loads them.
Exit codes: 0 done, 1 a file could not be read or written (the message says
how to fix it), 2 misuse of the command line.
"""

from __future__ import annotations

import argparse
import json
import sys

from reflect.base.choices import MEMORY_MODES, REPLAY_MODES, TRACE_FORMATS
from reflect.base.config import DEFAULT_MAX_TOKENS
from reflect.base.output import Handler, format_option

MAX_TOKENS = f"the block's budget in tokens (default {DEFAULT_MAX_TOKENS})"


def add_eval_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("eval", help="Evaluate failure memory on recorded or live runs.",
                       description="Evaluate failure memory on recorded or live runs.")
    what = c.add_subparsers(dest="what", required=True, metavar="convert|replay|compare|ab|effect")

    p = what.add_parser(
        "convert", help="convert published agent logs into a trace (JSONL)",
        description="Convert published agent logs into a trace: JSONL, one record per "
        "iteration with run, iteration, goal, phase, action, exit_code, error_text, success, ts.")
    p.set_defaults(handler=cmd_convert)
    p.add_argument("source", choices=TRACE_FORMATS, metavar="FORMAT",
                   help=" | ".join(TRACE_FORMATS))
    p.add_argument("paths", nargs="+", metavar="PATH", help="data files or directories")
    p.add_argument("-o", "--output", required=True, metavar="TRACE", help="the trace to write")

    p = what.add_parser(
        "replay", help="replay a trace through a fresh store and measure what was recalled",
        description="Replay a trace in order through a fresh store: recall before each "
        "iteration (mode on: every section; recency: this run's failures; off: nothing; "
        "baselines last3: the run's last three failures; popular: the recent section and "
        "the lessons of the causes seen in the most earlier runs), then capture it. "
        "Writes DIR/iterations.jsonl and DIR/summary.json.")
    p.set_defaults(handler=cmd_replay)
    p.add_argument("trace", metavar="TRACE", help="a trace (reflect eval convert writes one)")
    p.add_argument("--mode", choices=REPLAY_MODES, default="on",
                   help="what recall injects (default on; see above)")
    p.add_argument("--out", metavar="DIR", help="write iterations.jsonl and summary.json here")
    p.add_argument("--store", metavar="DIR",
                   help="keep the replay's store in this new directory (default: temporary)")
    p.add_argument("--max-tokens", type=_positive, default=DEFAULT_MAX_TOKENS, metavar="N",
                   help=MAX_TOKENS)
    p.add_argument("--embeddings", metavar="NAME",
                   help="embedding model for mode on: off, hash, or a model name "
                   "(default: $REFLECT_EMBEDDINGS, else the bundled model)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--scope-by-project", action="store_true",
                   help="give each run's project (the trace's `project`) a scope of its own,"
                   " as a team store scoped by project: no lesson crosses projects")
    p.add_argument("--actions", action="store_true",
                   help="tell each recall the step's command, as a client's PreToolUse hook"
                   " does (the block before the command runs)")
    format_option(p)

    p = what.add_parser(
        "compare", help="replays side by side with bootstrap intervals over runs",
        description="Compare replays (or A/B arms) side by side with 95% bootstrap intervals "
        "that resample runs.")
    p.set_defaults(handler=cmd_compare)
    p.add_argument("inputs", nargs="+", metavar="DIR", help="replay --out directories "
                   "(or their summary.json)")
    p.add_argument("--chart", nargs="?", const="compare.png", metavar="PNG",
                   help="also draw a PNG chart (default compare.png; needs matplotlib)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--resamples", type=_positive, default=2000, metavar="N",
                   help="bootstrap resamples (default 2000)")
    format_option(p)

    p = what.add_parser(
        "ab", help="live A/B: run an agent command on tasks with memory on and off",
        description="Run a real agent on tasks with memory on and off (one persistent store "
        "per arm), randomized by seed; reports repeat rates with intervals and wall time.")
    p.set_defaults(handler=cmd_ab)
    p.add_argument("--agent", required=True, metavar="CMD",
                   help="shell command with {prompt_file} (also {workdir}, {task}, {arm}, "
                   "{iteration})")
    p.add_argument("--tasks", required=True, metavar="JSONL",
                   help='one {"id": …, "goal": …} a line')
    p.add_argument("--trials", type=_positive, default=3, metavar="N",
                   help="attempts per task and arm; a task stops at its first success")
    p.add_argument("--arms", type=_arms, default=("on", "off"), metavar="A,B",
                   help="modes to compare (default on,off)")
    p.add_argument("--seed", type=int, default=0, help="order of tasks and arms, bootstrap")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="seconds per agent run before it is killed (default 600)")
    p.add_argument("--max-tokens", type=_positive, default=DEFAULT_MAX_TOKENS, metavar="N",
                   help=MAX_TOKENS)
    p.add_argument("--embeddings", metavar="NAME", help="embedding model for the on arm: off, "
                   "hash, or a model name (default: $REFLECT_EMBEDDINGS, else the bundled one)")
    p.add_argument("--out", default="reflect-ab", metavar="DIR",
                   help="each arm's store and results, DIR/ARM (default reflect-ab)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")

    p = what.add_parser(
        "effect", help="what each lesson changes, measured by the holdout (REFLECT_HOLDOUT)",
        description="Per lesson, how often its family followed once it was eligible, in runs "
        "that saw it and in runs the holdout kept it from, with Wilson intervals, the "
        "predicted rate beside both, the effect (withheld minus shown) with its interval, "
        "and the verdict (promoted, demoted). Reads the store (REFLECT_HOME or REFLECT_STORE).")
    p.set_defaults(handler=cmd_effect)
    p.add_argument("--chart", nargs="?", const="effect.png", metavar="PNG",
                   help="also draw the lessons by effect with intervals (default effect.png; "
                   "needs matplotlib)")
    format_option(p)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _arms(text: str) -> tuple[str, ...]:
    arms = tuple(a.strip() for a in text.split(",") if a.strip())
    if len(arms) < 2 or len(set(arms)) != len(arms) or not set(arms) <= set(MEMORY_MODES):
        raise argparse.ArgumentTypeError(
            f"give two or three distinct modes among {','.join(MEMORY_MODES)}, e.g. on,off")
    return arms


def _said(drawn: bool, path: str) -> None:
    """Where the chart went, or why there is none."""
    from reflect.eval._compare import INSTALL_CHARTS

    if drawn:
        print(f"chart: {path}", file=sys.stderr)
    else:
        print(f"reflect: note: no chart: matplotlib is not installed ({INSTALL_CHARTS})",
              file=sys.stderr)


def _fail(message: str) -> int:
    print(f"reflect: error: {message}", file=sys.stderr)
    return 1


def _eval_errors() -> tuple[type[Exception], ...]:
    from reflect.eval._ab import ABError
    from reflect.eval._compare import CompareError
    from reflect.eval._convert import ConvertError
    from reflect.eval._replay import ReplayError
    from reflect.eval._trace import TraceError

    return (ABError, CompareError, ConvertError, ReplayError, TraceError)


def _guarded(handler: Handler) -> Handler:
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except _eval_errors() as e:
            return _fail(str(e))
        except OSError as e:
            where = f" {e.filename}" if e.filename else ""
            return _fail(f"cannot read or write{where}: {e.strerror or e}; check the path "
                         "and its permissions")
    return run


@_guarded
def cmd_convert(args: argparse.Namespace) -> int:
    from reflect.eval._convert import convert
    from reflect.eval._trace import write_trace

    records = convert(args.source, args.paths)
    n = write_trace(args.output, records)
    runs = len({r.run for r in records})
    failures = sum(not r.success for r in records)
    print(f"{args.output}: {runs} runs, {n} iterations, {failures} failures")
    return 0


@_guarded
def cmd_replay(args: argparse.Namespace) -> int:
    from reflect.eval._compare import compare_summaries, table
    from reflect.eval._replay import replay
    from reflect.eval._trace import read_trace

    records = read_trace(args.trace)
    summary = replay(records, args.mode, args.out, store=args.store,
                     max_tokens=args.max_tokens, seed=args.seed, trace=args.trace,
                     embeddings=args.embeddings, scope_by_project=args.scope_by_project,
                     actions=args.actions)
    if args.format == "json":
        print(json.dumps(summary, ensure_ascii=False))
        return 0
    result = compare_summaries([(args.mode, summary)], seed=args.seed)
    print(table(result))
    if args.out:
        print(f"wrote {args.out}/iterations.jsonl and {args.out}/summary.json")
    return 0


@_guarded
def cmd_compare(args: argparse.Namespace) -> int:
    from reflect.eval._compare import chart, compare, table

    result = compare(args.inputs, seed=args.seed, resamples=args.resamples)
    print(json.dumps(result, ensure_ascii=False) if args.format == "json" else table(result))
    if args.chart:
        _said(chart(result, args.chart), args.chart)
    return 0


@_guarded
def cmd_effect(args: argparse.Namespace) -> int:
    from reflect.api.memory import Memory, port
    from reflect.eval._effect import chart, rows, table

    with Memory() as mem:
        inside = port(mem)
        effects = mem.effects()
        lessons = {e.lesson_id: inside.store.lesson(e.lesson_id) for e in effects}
        triggers = {i: lesson["trigger"] if lesson else "" for i, lesson in lessons.items()}
        rule = inside.holdout
    if args.format == "json":
        print(json.dumps({"holdout": rule.p, "effects": rows(effects, rule, triggers)},
                         ensure_ascii=False))
    else:
        print(table(effects, rule, triggers))
    if args.chart:
        _said(chart(effects, rule, args.chart), args.chart)
    return 0


@_guarded
def cmd_ab(args: argparse.Namespace) -> int:
    from reflect.eval._ab import read_tasks, run_ab
    from reflect.eval._compare import compare, table

    tasks = read_tasks(args.tasks)

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr)

    report = run_ab(args.agent, tasks, args.out, trials=args.trials, arms=args.arms,
                    seed=args.seed, timeout=args.timeout, max_tokens=args.max_tokens,
                    embeddings=args.embeddings, progress=progress)
    result = compare([f"{args.out}/{arm}" for arm in args.arms], seed=args.seed)
    print(table(result))
    walls = ", ".join(f"{arm} {s:.1f} s" for arm, s in report["wall_seconds"].items())
    print(f"agent wall time: {walls}; {len(tasks)} tasks x {args.trials} trials, "
          f"seed {args.seed}; details in {args.out}/")
    return 0
