"""``python -m topologies.inprocess serve TOPOLOGY.yaml ...``: see topologies/inprocess/serve.py."""

import argparse
import sys

from topologies.errors import USER_ERRORS
from topologies.inprocess.serve import add_arguments, serve


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m topologies.inprocess",
        description="the in-process network (softswitch, p4src/ina.p4) for other processes",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    add_arguments(
        sub.add_parser(
            "serve",
            help="network + job service + server agent + attach endpoints; "
            "one JSON line, then serve until stdin closes or SIGTERM",
        )
    )
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return serve(args)
    except USER_ERRORS as exc:  # one line (unknown host, plan errors); anything else shows its traceback
        print(f"serve: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
