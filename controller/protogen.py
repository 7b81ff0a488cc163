"""Regenerate the job service's Python code from controller/jobservice.proto.

Run ``python -m controller.protogen`` after editing the .proto (needs Debian's protobuf-compiler
and protobuf-compiler-grpc). The generated modules are committed, so nothing else needs protoc.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROTO = "controller/jobservice.proto"
OUTPUTS = ("jobservice_pb2.py", "jobservice_pb2_grpc.py")


def generate(out_dir: Path) -> list[Path]:
    """Run protoc (and the grpc plugin) into ``out_dir``; return the generated files."""
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin")
    if not protoc or not plugin:
        raise RuntimeError(
            "protoc and grpc_python_plugin are needed (apt-get install protobuf-compiler protobuf-compiler-grpc)"
        )
    subprocess.run(
        [
            protoc,
            f"-I{ROOT}",
            f"--python_out={out_dir}",
            f"--grpc_out={out_dir}",
            f"--plugin=protoc-gen-grpc={plugin}",
            PROTO,
        ],
        check=True,
        cwd=ROOT,
    )
    return [out_dir / "controller" / name for name in OUTPUTS]


def main() -> int:
    """Regenerate controller/jobservice_pb2*.py in place; return the exit status."""
    with tempfile.TemporaryDirectory() as tmp:
        for path in generate(Path(tmp)):
            shutil.copy(path, HERE / path.name)
            print(f"wrote controller/{path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
