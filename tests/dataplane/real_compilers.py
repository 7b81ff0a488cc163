"""The real P4 compilers (p4c's p4c-bm2-ss and p4test, from ../shared/toolchain), found and run with a cache.

The tools are looked up on PATH, then in /opt/p4-toolchain/bin (where scripts/setup.sh installs them);
the Tofino TNA includes in $P4C_TOFINO_INCLUDE, then beside the tools. A compilation's result (exit status,
messages, output files) is kept under build/p4c/ keyed by the hash of the tool's version, its arguments and
every file under p4src/, so an unchanged program is not compiled again (p4c-bm2-ss takes 14-110 s).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from topologies.bmv2_build import toolchain_tool

REPO = Path(__file__).resolve().parents[2]
P4SRC = REPO / "p4src"
CACHE = REPO / "build" / "p4c"


tool = toolchain_tool  # the path of a toolchain binary, or None when it is not installed


def tofino_include() -> Path | None:
    """The directory holding tna.p4 for p4test (p4c's open-source Tofino back end's includes)."""
    candidates = [os.environ.get("P4C_TOFINO_INCLUDE")]
    p4test = tool("p4test")
    if p4test is not None:
        candidates.append(str(Path(p4test).resolve().parents[1] / "share" / "p4c" / "p4include-tofino"))
    for candidate in candidates:
        if candidate and (Path(candidate) / "tna.p4").is_file():
            return Path(candidate)
    return None


@dataclass
class Compilation:
    returncode: int
    messages: str
    outputs: Path  # the directory holding the files the tool wrote


def _sources_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(P4SRC.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def compile_cached(binary: str, arguments: list[str], outputs: list[str], timeout: float = 600) -> Compilation:
    """Runs `binary *arguments` in a cache directory (relative output names land there) unless a run with
    the same tool version, arguments and p4src/ files is cached; `outputs` are the files it must keep."""
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout
    key = hashlib.sha256(json.dumps([version, Path(binary).name, arguments, _sources_hash()]).encode()).hexdigest()
    directory = CACHE / key[:24]
    result = directory / "result.json"
    if result.is_file():
        saved = json.loads(result.read_text())
        if all((directory / name).is_file() for name in outputs) or saved["returncode"] != 0:
            return Compilation(saved["returncode"], saved["messages"], directory)
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([binary, *arguments], capture_output=True, text=True, timeout=timeout, cwd=directory)
    messages = done.stdout + done.stderr
    result.write_text(json.dumps({"returncode": done.returncode, "messages": messages, "arguments": arguments}))
    return Compilation(done.returncode, messages, directory)
