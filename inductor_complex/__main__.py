"""``python -m inductor_complex <command>``: ``demo``, or ``explain path/to/file.py:name``."""

from __future__ import annotations

import argparse
import sys

from . import demo, explain_cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_complex")
    commands = parser.add_subparsers(dest="command", metavar="command")
    demo.add_arguments(
        commands.add_parser("demo", help="compare stock torch.compile with ComplexToRealPass on a Llama model")
    )
    explain_cli.add_arguments(
        commands.add_parser("explain", help="what the pass does to a model, graph by graph (file.py:name)")
    )
    args = parser.parse_args(argv)  # an unknown command: usage and exit 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "explain":
        return explain_cli.run(args)
    return 0 if demo.run(args).ok else 1


if __name__ == "__main__":
    sys.exit(main())
