"""``python -m benchmarks [--quick] [--json PATH] [--only NAME ...] [--no-write]``.

Runs every scenario, prints one table, and (full runs) writes ``benchmarks/results/latest.json``
and ``latest.md``. ``--quick`` is a smoke run on small sizes (well under 30 s) that writes nothing
unless ``--json`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import (
    anthropic_rows,
    bedrock_rows,
    cli_start,
    gateway_floor,
    gateway_rows,
    gemini_rows,
    peer,
    postgres_rows,
    report,
    request_build,
    responses_rows,
    resume,
    store_append,
    stream_fold,
)
from benchmarks.measure import FULL, QUICK, Budget, Row

RESULTS = Path(__file__).resolve().parent / "results"


def scenarios(budget: Budget, quick: bool) -> dict[str, Callable[[], list[Row]]]:
    return {
        "request-build": lambda: request_build.run(budget, quick=quick),
        "resume": lambda: resume.run(quick=quick),
        "stream-fold": lambda: stream_fold.run(budget, quick=quick),
        "store": lambda: store_append.run(quick=quick),
        "store-postgres": lambda: postgres_rows.run(quick=quick),
        "cli": lambda: cli_start.run(quick=quick),
        "gateway": lambda: gateway_rows.run(quick),
        "gateway-floor": lambda: gateway_floor.run(quick),
        "peer": lambda: peer.run(quick=quick),
        "gemini": lambda: gemini_rows.run(budget, quick),
        "bedrock": lambda: bedrock_rows.run(budget, quick),
        "responses": lambda: responses_rows.run(budget, quick),
        "anthropic": lambda: anthropic_rows.run(budget, quick),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run on small sizes")
    parser.add_argument("--json", type=Path, help="also write every number to this JSON file")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these scenarios: " + ", ".join(scenarios(FULL, False)))
    parser.add_argument("--no-write", action="store_true",
                        help="do not write benchmarks/results/latest.{json,md}")
    args = parser.parse_args(argv)
    budget = QUICK if args.quick else FULL
    chosen = scenarios(budget, args.quick)
    unknown = set(args.only or ()) - set(chosen)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    load_before = os.getloadavg()
    started = time.perf_counter()
    rows: list[Row] = []
    for name, run in chosen.items():
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        rows.extend(run())
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr, flush=True)
    info = report.machine(load_before)
    info["elapsed_s"] = round(time.perf_counter() - started, 1)
    info["mode"] = "quick" if args.quick else "full"
    print(report.text_table(rows))
    print()
    for line in report.notes(rows):
        print(line)
    print(f"\n{info['cpu']}, {info['cores']} cores, Python {info['python']}, load average "
          f"{info['loadavg_before']} → {info['loadavg_after']}, {info['elapsed_s']} s")
    payload = {"machine": info, "rows": [r.to_json() for r in rows]}
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    if not args.quick and not args.no_write and not args.only:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "latest.json").write_text(json.dumps(payload, indent=2) + "\n")
        command = "python -m benchmarks"
        (RESULTS / "latest.md").write_text(report.markdown(rows, info, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
