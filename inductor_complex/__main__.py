"""``python -m inductor_complex <command>``; ``demo`` is the only command so far."""

from __future__ import annotations

import argparse
import sys

from . import demo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_complex")
    commands = parser.add_subparsers(dest="command", metavar="command")
    demo.add_arguments(
        commands.add_parser("demo", help="compare stock torch.compile with ComplexToRealPass on a Llama model")
    )
    args = parser.parse_args(argv)  # an unknown command: usage and exit 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return 0 if demo.run(args).ok else 1


if __name__ == "__main__":
    sys.exit(main())
