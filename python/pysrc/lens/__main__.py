"""The ``lens`` command's Python-side subcommands.

- ``python -m lens compile FILE``: the compilation cache filled before a job's ranks start.
  ``FILE`` is a ``.wasm`` component or a Lens config file (every wasm exporter it names), as for
  the ``lens compile`` command. Exit codes: 0 every component is in the cache, 2 one does not
  load (the message names it).
- ``python -m lens report RUN_DIR [--perfetto]``: the run drawn as ``RUN_DIR/report.html`` (or
  its spans as ``RUN_DIR/trace.json``), as ``lens report`` does. Exit codes: 0 written, 2 the
  folder is missing, empty or not writable.
"""

from __future__ import annotations

import argparse
import sys

import lens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lens")
    commands = parser.add_subparsers(dest="command", required=True)
    compile_cmd = commands.add_parser(
        "compile", help="compile a .wasm exporter, or a config's, into the compilation cache"
    )
    compile_cmd.add_argument("file", help="a .wasm component or a Lens config file (.toml)")
    compile_cmd.add_argument(
        "--fuel", action="store_true", help="for exporters with a fuel budget (fuel_per_call)"
    )
    report_cmd = commands.add_parser(
        "report", help="draw a run folder as one HTML page (or a Perfetto trace)"
    )
    report_cmd.add_argument("run_dir", help="the run folder (JSON-lines files, summary.json)")
    report_cmd.add_argument(
        "--perfetto", action="store_true", help="write the spans as a trace-event file instead"
    )
    report_cmd.add_argument("--config", help="the run's config file (shown redacted)")
    report_cmd.add_argument("--out", help="where to write (default: in the run folder)")
    report_cmd.add_argument("--straggler-threshold", type=float, default=0.1)
    args = parser.parse_args(argv)
    if args.command == "report":
        return _report(args)
    try:
        compiled = lens.compile(args.file, fuel=args.fuel)
    except lens.ExporterLoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not compiled:
        print(f"{args.file}: no wasm exporters")
    for path, exporters, cached, seconds in compiled:
        what = "already in the cache" if cached else f"compiled in {seconds:.1f} s"
        print(f"{path} ({', '.join(exporters)}): {what}")
    return 0


def _report(args: argparse.Namespace) -> int:
    try:
        written = lens.report(
            args.run_dir,
            perfetto=args.perfetto,
            config=args.config,
            out=args.out,
            straggler_threshold=args.straggler_threshold,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(written["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
