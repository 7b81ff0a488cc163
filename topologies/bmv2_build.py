"""A repository program compiled for real BMv2 by p4c's BMv2 back end, once, and kept under build/bmv2/.

``--target bmv2`` with no ``--device-config`` runs the program a user who names none would run on softswitch
(``controller.programs.default_program``): this module turns its P4 source into the BMv2 JSON and the P4Info
that the lab pushes over P4Runtime. p4c-bm2-ss takes 15-110 s for ina.p4's builds, so a compiled pair is
kept, named by a hash of every file under p4src/ and the source's name: any edit of the program compiles
it again, and two checkouts never share a stale one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from controller.programs import program_file
from topologies.errors import LabError

REPO = Path(__file__).resolve().parent.parent
P4SRC = REPO / "p4src"
CACHE = REPO / "build" / "bmv2"
# where ../shared/toolchain/install.sh puts the real tools, for a shell that has not put them on PATH
TOOLCHAIN_BIN = Path("/opt/p4-toolchain/bin")


def toolchain_tool(name: str) -> str | None:
    """A tool of the real P4 toolchain (p4c-bm2-ss, p4test, simple_switch_grpc): on PATH, else in the folder
    scripts/setup.sh installs it to; None if neither."""
    found = shutil.which(name)
    if found:
        return found
    candidate = TOOLCHAIN_BIN / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


def p4c_bm2_ss() -> str | None:
    """The p4c-bm2-ss executable, or None."""
    return toolchain_tool("p4c-bm2-ss")


def source_key(source: Path) -> str:
    """A hash of every P4 file under p4src/ and of the source's name: what a compiled pair depends on."""
    digest = hashlib.sha256(source.name.encode())
    for path in sorted(P4SRC.rglob("*.p4")):
        digest.update(str(path.relative_to(P4SRC)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def compiled(program: str, timeout: float = 600.0) -> tuple[Path, Path]:
    """The BMv2 JSON and the P4Info (text format) of ``program`` (a ``--program`` name or a P4 source path),
    compiled by p4c-bm2-ss on first use and taken from build/bmv2/ afterwards.

    Raises
    ------
    LabError
        No p4c-bm2-ss, or the compiler refused the program (its last lines in the message).
    """
    source = program_file(program)
    exe = p4c_bm2_ss()
    if exe is None:
        raise LabError(
            f"--target bmv2 needs the program compiled for BMv2: give --p4info and --device-config, or put "
            f"p4c-bm2-ss on PATH (../shared/toolchain/install.sh) to compile {source.name}"
        )
    key = source_key(source)
    json_path = CACHE / f"{source.stem}-{key}.json"
    p4info_path = CACHE / f"{source.stem}-{key}.p4info.txtpb"
    if json_path.exists() and p4info_path.exists():
        return json_path, p4info_path
    CACHE.mkdir(parents=True, exist_ok=True)
    # written under names of their own first (p4c reads the kind of file from its suffix), renamed when whole
    partial_json, partial_p4info = (path.with_name(f".{os.getpid()}-{path.name}") for path in (json_path, p4info_path))
    argv = [exe, "--arch", "v1model", "-o", str(partial_json), "--p4runtime-files", str(partial_p4info)]
    argv += ["-I", str(P4SRC), str(source)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LabError(f"p4c-bm2-ss did not compile {source.name} within {timeout:.0f} s") from None
    if done.returncode != 0:
        last = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise LabError(f"p4c-bm2-ss refused {source.name}: {last}")
    os.replace(partial_p4info, p4info_path)  # the JSON last: its presence says the pair is whole
    os.replace(partial_json, json_path)
    return json_path, p4info_path
