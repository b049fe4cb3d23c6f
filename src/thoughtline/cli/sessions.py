"""``thoughtline sessions list|show|export|import|rm|branch|compact|restore|migrate``."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from thoughtline.cli.common import console, end_progress, open_store, plain_output, progress_line
from thoughtline.cli.importfile import EXPORT_FORMAT, ImportRejected
from thoughtline.termsafe import safe, safe_line

if TYPE_CHECKING:
    from thoughtline.messages import Message, Reasoning



def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _model_of(record: Any) -> str:
    provider = record.model_config.get("provider", {})
    return f"{provider.get('id', '?')}/{provider.get('model', '?')}"


def reasoning_summary(part: Reasoning, refs: list[Any]) -> dict[str, Any]:
    """Kind, origin, size and digests of one reasoning part (what ``show`` lists).

    ``digest`` is the content digest of the whole part as stored (readable text, signature, opaque
    data, origin, native record), so a part with readable reasoning only has one too. ``refs`` are
    the store's payload references for this part: the digests a corrupted payload would be
    reported under.
    """
    import orjson

    from thoughtline.messages import digest, part_to_json

    origin = part.origin
    readable = len((part.text or "").encode()) + len((part.summary or "").encode())
    return {
        "kind": part.kind,
        "origin": f"{origin.api}:{origin.provider}/{origin.model}" if origin else "",
        "bytes": readable + sum(r.size for r in refs),
        "digest": digest(orjson.dumps(part_to_json(part))),
        "payloads": [{"field": r.field, "bytes": r.size, "digest": r.digest} for r in refs],
        "complete": part.complete,
        "native": sorted(part.native),
    }


def _turn_summary(seq: int, message: Message, message_id: str) -> dict[str, Any]:
    from thoughtline.messages import Reasoning
    from thoughtline.store import encode_message

    refs = encode_message(message).refs
    thinking = {i for i, p in enumerate(message.parts) if isinstance(p, Reasoning)}
    preview = message.text or "; ".join(
        f"{r.call_id}: {r.content}" for r in message.tool_results)
    return {
        "seq": seq, "id": message_id, "role": message.role,
        "preview": preview[:120], "incomplete": message.incomplete,
        "tool_calls": [c.name for c in message.tool_calls],
        "reasoning": [reasoning_summary(p, [r for r in refs if r.part == i])
                      for i, p in enumerate(message.parts) if isinstance(p, Reasoning)],
        "native": sorted(message.native),
        # Opaque values outside reasoning parts (a tool call's or the message's native record,
        # e.g. a Gemini tool-call signature or Copilot's reasoning_opaque); part -1: the message.
        "payloads": [{"part": r.part, "field": r.field, "bytes": r.size, "digest": r.digest}
                     for r in refs if r.part not in thinking],
    }


def _load(ctx: click.Context, ref: str) -> tuple[Any, Any]:
    """A session's record and its verified history, by id, unique prefix or title. A turn whose
    stored row is corrupt is left out and reported in ``problems`` (the rest still loads)."""
    store = open_store(ctx)
    try:
        record = store.get_session(ref)
        return record, store.load_history(record.id, skip_damaged=True)
    finally:
        store.close()


def _damaged_turns(loaded: Any) -> list[int]:
    from thoughtline.store.records import ProblemKind

    return [p.seq for p in loaded.problems if p.kind is ProblemKind.TURN]


def _warn_damaged(record: Any, loaded: Any) -> None:
    """On stderr: which turns are missing from what was printed, and how to continue."""
    damaged = _damaged_turns(loaded)
    if not damaged:
        return
    turns = ", ".join(str(seq) for seq in damaged)
    click.echo(f"warning: turn(s) {turns} of session {record.id} are damaged and were left out. "
               f"To continue from the last good turn: thoughtline sessions branch {record.id} "
               f"--at {damaged[0]}", err=True)


@click.group()
def sessions() -> None:
    """List, show, export, import, remove, compact or restore stored sessions."""


@sessions.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("-n", "--limit", type=int, default=None, help="Show at most N sessions.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool, limit: int | None) -> None:
    """Sessions, most recently updated first."""
    store = open_store(ctx)
    try:
        records = store.list_sessions(limit=limit)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([{
            "id": r.id, "title": r.title, "provider": r.model_config.get("provider", {}).get("id"),
            "model": r.model_config.get("provider", {}).get("model"), "turns": r.turns,
            "created_at": r.created_at, "updated_at": r.updated_at, "parent": r.parent_id,
        } for r in records]))
        return
    if not records:
        click.echo("no sessions yet — start one with 'thoughtline chat' or 'thoughtline demo'")
        return
    rows = [(r.id[:12], safe_line(r.title) or "(untitled)", safe_line(_model_of(r)),
             str(r.turns), _when(r.updated_at)) for r in records]
    header = ("id", "title", "provider/model", "turns", "updated")
    # Aligned columns, written directly: no rich import on the path people run most (a 100-session
    # list starts in about 0.25 s). On a terminal the header is bold and ids are dimmed.
    styled = not plain_output()
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for number, row in enumerate([header, *rows]):
        cells = [cell.rjust(w) if i == 3 else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        if styled and number == 0:
            cells = [click.style(c, bold=True) for c in cells]
        elif styled:
            cells[0] = click.style(cells[0], fg="cyan")
        click.echo("  ".join(cells).rstrip())


@sessions.command()
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--generations", is_flag=True,
              help="List the session's generations (each compaction keeps the previous one).")
@click.pass_context
def show(ctx: click.Context, session: str, as_json: bool, generations: bool) -> None:
    """Turns with their reasoning carriers (kind, origin, bytes, digest) and learned verdicts."""
    if generations:
        _show_generations(ctx, session, as_json)
        return
    record, loaded = _load(ctx, session)
    turns = [_turn_summary(m.seq, m.message, m.id) for m in loaded.messages]
    cfg = record.model_config
    data = {
        "id": record.id, "title": record.title, "parent": record.parent_id,
        "fork_point": record.fork_point, "provider": cfg.get("provider", {}),
        "verdicts": cfg.get("verdicts", []), "fingerprints": cfg.get("fingerprints", []),
        "turns": turns,
        "problems": [{"seq": p.seq, "kind": p.kind.value, "part": p.part, "digest": p.digest,
                      "detail": p.detail}
                     for p in loaded.problems],
        "damaged_turns": _damaged_turns(loaded),
        "provider_reports": _provider_reports(ctx, record.id),
    }
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        _print_show(data)
    _warn_damaged(record, loaded)


def _provider_reports(ctx: click.Context, session_id: str) -> list[dict[str, Any]]:
    """What providers reported about this session's requests (e.g. stored thinking blocks the
    API dropped), read from the request log: it is about the requests, not the turns."""
    from thoughtline.cli.common import home_dir
    from thoughtline.requestlog import RequestLog

    found: list[dict[str, Any]] = []
    for number, record in enumerate(RequestLog(home_dir(ctx) / "logs").read(session=session_id)):
        for report in record.get("reports") or ():
            found.append({"request": number + 1, "report": report})
    return found


def _report_words(report: Any) -> str:
    if isinstance(report, dict) and "type" in report:
        where = f" at {report['path']}" if report.get("path") else ""
        why = f" ({report['reason']})" if report.get("reason") else ""
        return f"{report['type']}{where}{why}"
    return json.dumps(report, ensure_ascii=False)


def _print_show(data: dict[str, Any]) -> None:
    """The human form of ``show``. Every stored string is passed through ``termsafe``: titles,
    previews, origins and verdict reasons came from a provider or an imported file."""
    out = console()
    provider = {k: safe_line(v) for k, v in data["provider"].items()}
    out.print(f"session {data['id']}  {safe_line(data['title']) or '(untitled)'}", style="bold",
              markup=False)
    out.print(f"provider {provider.get('id')} · model {provider.get('model')} · "
              f"base URL {provider.get('base_url') or '(preset)'}", markup=False)
    if data["parent"]:
        out.print(f"branch of {data['parent']} at turn {data['fork_point']}", markup=False)
    damaged = set(data["damaged_turns"])
    for turn in data["turns"]:
        flag = " (incomplete)" if turn["incomplete"] else ""
        calls = f" → {safe_line(', '.join(turn['tool_calls']))}" if turn["tool_calls"] else ""
        out.print(f"[{turn['seq']:>3}] {turn['role']:<9} {turn['preview']!r}{calls}{flag}",
                  markup=False)
        _print_turn_details(out, turn)
    for seq in sorted(damaged):
        out.print(f"[{seq:>3}] DAMAGED   this turn's stored row is corrupt and was left out",
                  style="red", markup=False)
    out.print("learned verdicts:" if data["verdicts"] else "learned verdicts: none",
              markup=False)
    for v in data["verdicts"]:
        what = f"drop {', '.join(v['drop'])}" if v["drop"] else ""
        if v.get("pad"):
            what = (what + "; " if what else "") + "pad with the placeholder"
        out.print(safe_line(f"  {v['provider']} @ {v['host'] or '-'} / {v['model']}: {what}"
                            f"  ({v.get('reason', '')})"), markup=False)
    out.print(f"rejected-signature fingerprints: {len(data['fingerprints'])}", markup=False)
    for fingerprint in data["fingerprints"]:
        shown = fingerprint if isinstance(fingerprint, str) else json.dumps(fingerprint)
        out.print(f"  {safe_line(shown)}", markup=False)
    for report in data["provider_reports"]:
        out.print(safe_line(f"provider report (request {report['request']}): "
                            + _report_words(report["report"])), markup=False)
    for p in data["problems"]:
        where = "" if p["part"] < -1 else f" part {p['part']}"
        out.print(f"problem: turn {p['seq']}{where}: {safe(p['detail'])}", style="red",
                  markup=False)


def _print_turn_details(out: Any, turn: dict[str, Any]) -> None:
    for r in turn["reasoning"]:
        state = "" if r["complete"] else " INCOMPLETE"
        native = f" native={','.join(r['native'])}" if r["native"] else ""
        digests = " ".join([f"digest={r['digest'][7:19]}…",
                            *(f"{p['field']}={p['digest'][7:19]}…" for p in r["payloads"])])
        out.print(safe_line(f"        reasoning {r['kind']:<9} {r['bytes']:>7} B  {r['origin']}"
                            f"{native}{state}  {digests}"), style="dim", markup=False)
    if turn["native"]:
        out.print(safe_line(f"        message-level native: {', '.join(turn['native'])}"),
                  style="dim", markup=False)
    for p in turn["payloads"]:
        owner = "message" if p["part"] < 0 else f"part {p['part']}"
        out.print(f"        payload   {owner} {p['field']} {p['bytes']:>7} B  "
                  f"digest={p['digest'][7:19]}…", style="dim", markup=False)


@sessions.command()
@click.argument("session")
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "md"]), default="json",
              show_default=True)
@click.option("-o", "--output", type=click.File("w"), default="-", help="File (default stdout).")
@click.pass_context
def export(ctx: click.Context, session: str, fmt: str, output: Any) -> None:
    """Export a session. JSON keeps everything and re-imports to an identical session."""
    record, loaded = _load(ctx, session)
    from thoughtline.messages import message_to_json

    messages = [message_to_json(m.message) for m in loaded.messages]
    meta = {"id": record.id, "title": record.title, "created_at": record.created_at,
            "updated_at": record.updated_at, "model_config": dict(record.model_config)}
    if fmt == "json":
        json.dump({"format": EXPORT_FORMAT, "session": meta, "messages": messages}, output,
                  ensure_ascii=False)
        output.write("\n")
    elif fmt == "jsonl":
        output.write(json.dumps({"format": EXPORT_FORMAT, "session": meta},
                                ensure_ascii=False) + "\n")
        for m in messages:
            output.write(json.dumps(m, ensure_ascii=False) + "\n")
    else:
        output.write(_markdown(record.title, [m.message for m in loaded.messages]))
    _warn_damaged(record, loaded)


def _markdown(title: str, messages: list[Message]) -> str:
    """A readable rendering. Unlike the JSON forms it is not a copy of the stored bytes, so
    terminal control characters are made visible (``termsafe``): ``cat session.md`` is safe."""
    lines = [f"# {safe_line(title) or 'thoughtline session'}", ""]
    for message in messages:
        lines.append(f"## {message.role}{' (incomplete)' if message.incomplete else ''}")
        thought = message.reasoning_text()
        if thought:
            lines.extend(["", "<details><summary>reasoning</summary>", "", safe(thought), "",
                          "</details>"])
        if message.text:
            lines.extend(["", safe(message.text)])
        for call in message.tool_calls:
            lines.extend(["", f"tool call `{safe_line(call.name)}` (`{safe_line(call.id)}`): "
                              f"`{safe(call.arguments)}`"])
        for result in message.tool_results:
            lines.extend(["", f"tool result for `{safe_line(result.call_id)}`:", "", "```",
                          safe(result.content), "```"])
        lines.append("")
    return "\n".join(lines)


@sessions.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.pass_context
def import_(ctx: click.Context, file: str) -> None:
    """Import a JSON export as a new session with the identical history.

    The file is checked whole before anything is stored. Its provider URL and key variable are
    not trusted: a resumed import takes them from your presets or config.toml. Its request
    params and settings are kept but used only with chat --trust-provider.
    """
    from thoughtline.cli.importfile import read_export
    from thoughtline.modelconfig import HELD_KEY, IMPORTED_KEY

    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise click.UsageError(f"cannot read {file}: {exc.strerror or exc}") from exc
    source = "<stdin>" if file == "-" else file
    if _is_jsonl_export(raw):
        raise ImportRejected(f"cannot import {source}: it is an 'export --format jsonl' file, "
                             "which does not re-import; only 'export --format json' files do "
                             "(thoughtline sessions export SESSION --format json -o FILE); "
                             "nothing was imported")
    plan = read_export(raw, source)
    store = open_store(ctx)
    try:
        record = store.import_session(title=plan.title, model_config=plan.model_config,
                                      messages=plan.messages)
    finally:
        store.close()
    prov = plan.provider
    click.echo(f"imported {len(plan.messages)} messages as a new session; provider "
               f"{safe_line(prov.id)!r}, model {safe_line(prov.model)!r}. The file's base URL "
               f"({safe_line(prov.base_url) or 'none'}) and key variable "
               f"({safe_line(prov.key_env) or 'none'}) are not trusted: resuming uses the "
               f"local preset or config.toml for {safe_line(prov.id)!r}, or pass "
               "--trust-provider to chat to use the file's.", err=True)
    held = plan.model_config[IMPORTED_KEY].get(HELD_KEY, {})
    if held:
        names = [*held.get("params", {}), *held.get("settings", {})]
        click.echo(f"The file's request params and settings ({safe_line(', '.join(names))}) "
                   "are kept but not used unless you pass --trust-provider.", err=True)
    click.echo(record.id)


def _is_jsonl_export(raw: bytes) -> bool:
    """An ``export --format jsonl`` file: its first line is the session header alone."""
    first = raw.partition(b"\n")[0]
    try:
        head = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return (isinstance(head, dict) and head.get("format") == EXPORT_FORMAT
            and "session" in head and "messages" not in head)


@sessions.command()
@click.argument("session")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def rm(ctx: click.Context, session: str, yes: bool) -> None:
    """Remove a session."""
    store = open_store(ctx)
    try:
        record = store.get_session(session)
        if not yes:
            if not sys.stdin.isatty():
                raise click.UsageError("refusing to remove without confirmation: pass --yes")
            if not click.confirm(f"Remove session {record.id[:12]} "
                                 f"({safe_line(record.title) or 'untitled'}, "
                                 f"{record.turns} turns)?"):
                click.echo("kept")
                return
        store.delete_session(record.id)
    finally:
        store.close()
    click.echo(f"removed {record.id}")


@sessions.command()
@click.argument("session")
@click.option("--at", "at", type=click.IntRange(min=0), default=None, metavar="N",
              help="Keep the first N turns (default: all). 'sessions show' numbers them.")
@click.option("--title", default=None, help="Title of the new session.")
@click.pass_context
def branch(ctx: click.Context, session: str, at: int | None, title: str | None) -> None:
    """Start a new session from the first N turns of SESSION (nothing is copied or changed).

    Continue it with 'thoughtline chat -r NEW_ID'. Branching before a damaged turn is how a
    session with a corrupt stored message is rescued.
    """
    store = open_store(ctx)
    try:
        record = store.get_session(session)
        made = store.branch(record.id, at=at, title=title if title is not None else
                            f"{record.title or 'untitled'} (branch)")
    finally:
        store.close()
    click.echo(f"branched {made.turns} turn{'' if made.turns == 1 else 's'} of {record.id} into "
               "a new session; continue with: "
               f"thoughtline chat -r {made.id}", err=True)
    click.echo(made.id)


# --- compaction -----------------------------------------------------------------------------------


def _show_generations(ctx: click.Context, ref: str, as_json: bool) -> None:
    store = open_store(ctx)
    try:
        record = store.get_session(ref)
        found = store.list_generations(record.id)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps({"session": record.id,
                               "generations": [g.to_json() for g in found]}))
        return
    for g in found:
        note = g.note
        how = ""
        if note.get("ended_by") == "compaction":
            how = (f"  compacted to {note.get('turns_after')} turns, ~{note.get('tokens_before')}"
                   f" → ~{note.get('tokens_after')} tokens by {note.get('summarizer', '?')}")
        elif note.get("ended_by") == "restore":
            how = f"  replaced by a restore of generation {note.get('restored')}"
        mark = "*" if g.current else " "
        click.echo(f"{mark} generation {g.number:>3}  {g.turns:>5} turns  since "
                   f"{_when(g.created_at)}{how}")


@sessions.command()
@click.argument("session")
@click.option("--keep", type=click.IntRange(min=0), default=None, metavar="N",
              help="Keep at least the last N turns verbatim (default: [compaction] keep; unset, a "
                   "tail bounded by tokens).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def compact(ctx: click.Context, session: str, keep: int | None, as_json: bool) -> None:
    """Compact a session now: summarize its head into a checkpoint, keep the tail verbatim.

    Every kept turn keeps its reasoning exactly. The previous history stays in the store as a
    generation (see 'sessions show SESSION --generations'; undo with 'sessions restore').
    --json prints {"session", "compacted", "turns_before", "turns_after", "tokens_before",
    "tokens_after"} (and "reason" when nothing was compacted).
    """
    import asyncio
    from contextlib import ExitStack

    from thoughtline import compaction
    from thoughtline.cli.common import home_dir
    from thoughtline.cli.demo import emulated_provider
    from thoughtline.config import load_config
    from thoughtline.requestlog import RequestLog
    from thoughtline.session import Session

    home = home_dir(ctx)
    cfg = load_config(home)
    settings = compaction.load_settings(home, cfg)
    store = open_store(ctx)
    progress = None if as_json else progress_line()

    async def run() -> compaction.CompactionResult:
        opened = Session.resume(store, session, config=cfg, log=RequestLog(home / "logs"))
        # A demo session summarizes on a fresh emulator of its route, as chat -r answers it.
        with ExitStack() as cleanup:
            emulated = emulated_provider(opened.provider, opened.record.model_config, cleanup)
            if emulated is not None:
                opened.set_provider(emulated)
            try:
                return await compaction.compress(opened, keep=keep, settings=settings,
                                                 on_progress=progress)
            finally:
                await opened.aclose()

    try:
        result = asyncio.run(run())
    except KeyboardInterrupt:
        click.echo("\ninterrupted — the session is unchanged", err=True)
        raise SystemExit(130) from None
    finally:
        store.close()
    if progress is not None:
        end_progress()
    click.echo(json.dumps(result.to_json()) if as_json else result.describe())


@sessions.command()
@click.argument("session")
@click.option("--generation", "number", type=click.IntRange(min=0), required=True, metavar="N",
              help="The generation to continue from (see 'sessions show --generations').")
@click.pass_context
def restore(ctx: click.Context, session: str, number: int) -> None:
    """Continue a session from an earlier generation (the current one is kept as well)."""
    store = open_store(ctx)
    try:
        record = store.get_session(session)
        current = store.restore_generation(record.id, number)
    finally:
        store.close()
    click.echo(f"restored generation {number} of {record.id} as generation {current}")


@sessions.command()
@click.option("--to", "to", required=True, metavar="URL|PATH",
              help="The store to copy into: a postgresql:// URL (or another SQLite file).")
@click.option("--from", "from_", metavar="PATH", type=click.Path(dir_okay=True),
              help="The SQLite store to copy from (default: state.db in the home).")
@click.pass_context
def migrate(ctx: click.Context, to: str, from_: str | None) -> None:
    """Copy every session into another store, byte-identical, every digest verified.

    Safe to re-run: what the target already has is kept, turns added since are copied.
    Progress and problems go to stderr, one summary line to stdout. Exits 1 if anything failed
    to verify.
    """
    from pathlib import Path

    from thoughtline.cli.common import home_dir
    from thoughtline.store import STATE_DB, SQLiteStore
    from thoughtline.store import open_store as open_target
    from thoughtline.store.transfer import copy_store

    source_path = Path(from_).expanduser() if from_ else home_dir(ctx) / STATE_DB
    if source_path.is_dir():
        source_path = source_path / STATE_DB
    if not source_path.is_file():
        raise click.UsageError(f"no SQLite store at {source_path} (give --from PATH)")
    source = SQLiteStore(source_path)
    try:
        target = open_target(to, home_dir(ctx))
        try:
            same = getattr(target, "path", None)
            if same is not None and Path(same).resolve() == source_path.resolve():
                raise click.UsageError("--to names the store being copied")
            location = getattr(target, "location", to)
            click.echo(f"copying {source_path} to {location}", err=True)
            report = copy_store(source, target, progress=lambda line: click.echo(line, err=True))
        finally:
            target.close()
    finally:
        source.close()
    for problem in report.problems:
        click.echo(f"problem: {problem}", err=True)
    click.echo(report.summary(location))
    if report.problems:
        ctx.exit(1)
