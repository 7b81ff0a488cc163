"""``python -m topologies.inprocess serve TOPOLOGY.yaml ...``: see topologies/inprocess/serve.py."""

import argparse
import sys

from topologies.inprocess.serve import add_arguments, serve


def main(argv=None) -> int:
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
    args = ap.parse_args(argv)
    try:
        return serve(args)
    except Exception as exc:  # controller errors (unknown host, plan errors) are one line
        if type(exc).__name__.endswith("Error"):
            print(f"serve: error: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
