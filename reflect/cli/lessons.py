"""``reflect lessons``, ``teach``, ``injections``, ``consolidate``, ``doctor``, ``export``,
``import``, ``progress``: what a person uses to inspect and steer what the agent is told,
and to keep the store sound."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflect.base.choices import EXPORT_FORMATS
from reflect.base.output import emit, first_line, format_option, when
from reflect.cli.arguments import count

if TYPE_CHECKING:
    from reflect.api.memory import Memory
    from reflect.base.answers import ArmRate, Measured
    from reflect.base.records import Lesson


def open_memory(env: Mapping[str, str], *, model: str | None = None,
                **settings: Any) -> Memory:
    """The library's ``Memory``, imported when a command opens it: the commands that need
    none of it (``reflect hook``, ``reflect install``) start without loading it. ``env``:
    the command's environment (``args.env``), its run context made from it here;
    ``settings``: fields of ``reflect.Settings``."""
    from reflect.api.context import RunContext
    from reflect.api.memory import Memory
    from reflect.api.settings import Settings

    return Memory(context=RunContext.from_env(env, model=model, settings=Settings(**settings)))


LESSON_ID = "a lesson id (L-...)"


def add_lessons(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("lessons", help="Inspect and steer lessons.")
    what = c.add_subparsers(dest="what", required=True,
                            metavar="list|show|search|pin|unpin|forget|quarantine|release|feedback")
    ls = what.add_parser("list", help="lessons, newest first")
    ls.add_argument("--status", default="active",
                    choices=["active", "superseded", "quarantined", "all"],
                    help="which lessons (default active)")
    ls.add_argument("--ineffective", action="store_true",
                    help="only lessons that repeatedly failed to prevent their failure")
    ls.add_argument("--limit", type=count, default=50, metavar="N",
                    help="at most N (default 50)")
    format_option(ls)
    ls.set_defaults(handler=cmd_list)
    show = what.add_parser("show", help="one lesson with its provenance")
    show.add_argument("id", help=LESSON_ID)
    format_option(show)
    show.set_defaults(handler=cmd_show)
    find = what.add_parser("search", help="lessons matching words")
    find.add_argument("text", help="words of its trigger or guidance")
    format_option(find)
    find.set_defaults(handler=cmd_search)
    for name, handler, help in (("pin", cmd_pin, "keep it: never removed by upkeep"),
                                ("unpin", cmd_unpin, "let upkeep judge it again"),
                                ("forget", cmd_forget, "delete it everywhere it lives"),
                                ("release", cmd_release, "back into recall")):
        p = what.add_parser(name, help=help)
        p.add_argument("id", help=LESSON_ID)
        p.set_defaults(handler=handler)
    q = what.add_parser("quarantine", help="out of recall, with the reason")
    q.add_argument("id", help=LESSON_ID)
    q.add_argument("--why", required=True, help="the reason, kept with it")
    q.set_defaults(handler=cmd_quarantine)
    fb = what.add_parser("feedback", help="a person's verdict moves its confidence")
    fb.add_argument("id", help=LESSON_ID)
    verdict = fb.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--good", action="store_true", help="it helped: more confident")
    verdict.add_argument("--bad", action="store_true", help="it misled: less confident")
    fb.set_defaults(handler=cmd_feedback)


def add_teach(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser("teach", help='Teach a lesson: "when <trigger>: <guidance>".')
    t.add_argument("text", help='"when <trigger>: <guidance>"')
    t.set_defaults(handler=cmd_teach)


def add_injections(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    inj = sub.add_parser("injections", help="What recall put into which prompt.")
    inj.add_argument("--run", help="only this run")
    inj.add_argument("--limit", type=count, default=50, metavar="N",
                     help="at most N (default 50)")
    format_option(inj)
    inj.set_defaults(handler=cmd_injections)


def add_consolidate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    con = sub.add_parser("consolidate", help="Decay, remove weak lessons and old history.")
    format_option(con)
    con.set_defaults(handler=cmd_consolidate)


def add_doctor(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doc = sub.add_parser("doctor", help="What is wrong with the store and how to recover.")
    doc.add_argument("--repair", action="store_true",
                     help="keep a damaged store aside, start a new one, replay what was kept"
                          " aside, drop the oldest failures past REFLECT_MAX_FAILURES")
    format_option(doc)
    doc.set_defaults(handler=cmd_doctor)


def add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ex = sub.add_parser("export", help="Write the confident lessons (markdown or jsonl).")
    ex.add_argument("--format", choices=EXPORT_FORMATS, default="markdown",
                    help="markdown: a house-rules file to commit (default); jsonl: for "
                         "reflect import")
    ex.add_argument("-o", "--output", metavar="FILE", help="default: standard output")
    ex.set_defaults(handler=cmd_export)


def add_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    im = sub.add_parser("import", help="Read lessons exported from another store (jsonl).")
    im.add_argument("file", help="a file of reflect export --format jsonl")
    im.set_defaults(handler=cmd_import)


def add_progress(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pr = sub.add_parser("progress", help="Is memory helping? Repeat rate over runs.")
    pr.add_argument("--min-runs", type=int, default=5, metavar="N",
                    help="runs needed before early and recent runs are compared (default 5)")
    format_option(pr)
    pr.set_defaults(handler=cmd_progress)


def tally(credit: float) -> str:
    """Wins and losses are shared among the lessons of one block (a third of a win each):
    a tenth is as fine as a person reads them."""
    return f"{round(credit, 1):g}"


def line(lesson: Lesson) -> str:
    flags = " [pinned]" if lesson.pinned else ""
    # A lesson no rule had a hint for says what worked, or only when it applies.
    says = lesson.guidance or (f"what worked: {lesson.resolution}" if lesson.resolution else "")
    return (f"{lesson.id}  {lesson.kind:<9} conf {lesson.confidence:.2f}  "
            f"won {tally(lesson.wins)} lost {tally(lesson.losses)}{flags}  "
            f"when {first_line(lesson.trigger, 60)}"
            + (f": {first_line(says, 70)}" if says else ""))


def cmd_list(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        rows = mem.lessons(status=None if args.status == "all" else args.status,
                           ineffective=args.ineffective, limit=args.limit)
    emit(args, {"lessons": [r.to_dict() for r in rows]},
         "\n".join(line(r) for r in rows) or "no lessons")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        lesson = mem.lesson(args.id)
    fields = ("id", "status", "kind", "trigger", "guidance", "resolution", "category",
              "confidence", "wins", "losses", "injected", "pinned", "quarantine", "model",
              "cost_usd", "scope")
    shown = {**lesson.to_dict(), "wins": tally(lesson.wins), "losses": tally(lesson.losses)}
    text = [f"{k:>10}: {shown[k]}" for k in fields if shown.get(k) not in ("", None)]
    text.append(f"{'created':>10}: {when(lesson.created)}")
    text.append(f"{'outcomes':>10}: {lesson.outcomes or '-'}")
    text += [f"   failure: {f['id']} {f['run']}#{f['iteration']} {f['error_type']}: "
             f"{first_line(f['message'], 70)}" for f in lesson.failures]
    text += [f"   history: {h['id']} {h['kind']} {h['status']}" for h in lesson.history]
    if lesson.holdout:
        text += holdout_lines(lesson.holdout)
    emit(args, lesson.to_dict(), "\n".join(text))
    return 0


def holdout_lines(effect: Measured) -> list[str]:
    """What the holdout measured: its family's rate after it became eligible, per arm."""
    def arm(a: ArmRate) -> str:
        lo, hi = a["interval"]
        return (f"{100 * a['rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] in "
                f"{a['runs']} run(s)")

    lo, hi = effect["effect_interval"]
    return [f"{'shown':>10}: {arm(effect['shown'])}",
            f"{'withheld':>10}: {arm(effect['withheld'])}",
            f"{'predicted':>10}: {100 * effect['predicted']:.1f}%",
            f"{'effect':>10}: {100 * effect['effect']:+.1f} points [{100 * lo:+.1f}, "
            f"{100 * hi:+.1f}]" + (f" {effect['verdict']}" if effect["verdict"] else "")]


def cmd_search(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        rows = mem.search_lessons(args.text)
    emit(args, {"lessons": [r.to_dict() for r in rows]},
         "\n".join(line(r) for r in rows) or "no match")
    return 0


def _act(args: argparse.Namespace, action: str, done: str, **options: Any) -> int:
    """A person's control, then one line that says what it did (silence reads as nothing
    done)."""
    with open_memory(args.env) as mem:
        getattr(mem, action)(args.id, **options)
    print(f"{args.id} {done}")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    return _act(args, "pin", "pinned: upkeep never removes it")


def cmd_unpin(args: argparse.Namespace) -> int:
    return _act(args, "pin", "unpinned: upkeep judges it again", pinned=False)


def cmd_forget(args: argparse.Namespace) -> int:
    return _act(args, "forget", "forgotten: its text is deleted from the store")


def cmd_release(args: argparse.Namespace) -> int:
    return _act(args, "release", "released: back in recall")


def cmd_quarantine(args: argparse.Namespace) -> int:
    return _act(args, "quarantine", "quarantined: out of recall", why=args.why)


def cmd_feedback(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        lesson = mem.feedback(args.id, good=args.good)
    print(f"{lesson.id} confidence now {lesson.confidence:.2f}")
    return 0


def cmd_teach(args: argparse.Namespace) -> int:
    from reflect.recall.taught import cues

    with open_memory(args.env) as mem:
        lesson_id = mem.teach(args.text)
        lesson = mem.lesson(lesson_id)
    reason = lesson.quarantine
    print(lesson_id)
    cue, loose = cues(lesson.trigger)
    print(f"reflect: taught {lesson_id}: when {lesson.trigger}: {lesson.guidance}",
          file=sys.stderr)
    print("reflect: it is never recalled: its trigger has no word a recall could match; teach"
          " it again with words a goal, phase or command would have" if not cue else
          "reflect: recalled when a recall's goal, phase, command or latest error has at least"
          f" half of: {', '.join(cue)}" + (" (or a word that begins or ends with one)"
                                           if loose else ""), file=sys.stderr)
    if reason:
        print(f"reflect: {lesson_id} is quarantined: it {reason}; `reflect lessons release "
              f"{lesson_id}` puts it into recall if that is what you mean", file=sys.stderr)
    return 0


def cmd_injections(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        rows = mem.injections(run=args.run, limit=args.limit)
    text = "\n".join(
        f"{when(r.ts)}  {r.run}#{r.iteration}  #{r.rank} {r.section:<6} "
        f"{r.lesson_id}  score {r.score:.3f}  {r.outcome or 'pending'}" for r in rows)
    emit(args, {"injections": [r.to_dict() for r in rows]}, text or "no injections")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        report = mem.consolidate()
    emit(args, report.to_dict(), f"removed {len(report.removed_lessons)} lesson(s), "
                                 f"{report.deleted_failures} old failure(s), "
                                 f"{report.deleted_injections} old injection(s); "
                                 f"the file shrank by {report.reclaimed_bytes / 1e6:.1f} MB")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    mem = open_memory(args.env)
    from reflect.integrations.heard import heard
    from reflect.store import Finding

    done = mem.repair() if args.repair else []  # what cannot be repaired raises, exit 1
    findings = [*mem.doctor(),
                *(Finding("hooks", h.ok, h.text) for h in heard(mem.home, args.env))]
    ok = all(f.ok for f in findings)
    emit(args, {"ok": ok, "repaired": done, "findings": [f.to_dict() for f in findings]},
         "\n".join([*done, *(f"{f.what}: {'ok' if f.ok else 'PROBLEM'}: {f.text}"
                              for f in findings)]))
    return 0 if ok else 1


def cmd_export(args: argparse.Namespace) -> int:
    from reflect.api.exchange import write_atomically

    with open_memory(args.env) as mem:
        text = mem.export(args.format)
    if args.output:
        write_atomically(Path(args.output), text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    with open_memory(args.env) as mem:
        report = mem.import_lessons(args.file)
    for number, message in report.errors:
        print(f"reflect: {args.file}:{number}: {message}", file=sys.stderr)
    print(f"imported {report.imported}, merged {report.merged}, skipped {report.skipped}, "
          f"quarantined {report.quarantined} (`reflect lessons list --status quarantined`), "
          f"{len(report.errors)} bad line(s)")
    return 1 if report.errors else 0


def cmd_progress(args: argparse.Namespace) -> int:
    from reflect.api.repeat_rates import render

    with open_memory(args.env) as mem:
        data = mem.progress(min_runs=args.min_runs)
    emit(args, data.to_dict(), render(data))
    return 0


# name -> what adds it to the parser (``reflect.cli.main`` builds only the command that runs)
LESSON_COMMANDS = {
    "lessons": add_lessons, "teach": add_teach, "injections": add_injections,
    "consolidate": add_consolidate, "doctor": add_doctor, "export": add_export,
    "import": add_import, "progress": add_progress,
}
