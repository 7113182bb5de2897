"""``python -m lens compile FILE``: the compilation cache filled before a job's ranks start.

``FILE`` is a ``.wasm`` component or a Lens config file (every wasm exporter it names), as for
the ``lens compile`` command. Exit codes: 0 every component is in the cache, 2 one does not load
(the message names it).
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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
