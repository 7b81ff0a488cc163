#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine: system packages (when root), then a virtual
# environment with torch (pinned CPU wheel first) and the project in editable mode.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

need_apt=()
# gcc + libc headers: the native data path (softswitch back end, batched agent I/O) compiles C at run time
# protoc + grpc plugin: the job service test regenerates controller/jobservice_pb2*.py and compares
# openssl: the TLS tests make a CA and certificates
for pkg in gcc libc6-dev iproute2 mininet ethtool protobuf-compiler protobuf-compiler-grpc openssl; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "setup: installing Debian packages: ${need_apt[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "setup: not root, skipping Debian packages (${need_apt[*]}); mininet tests will skip"
    fi
fi

# the real P4 toolchain (p4c-bm2-ss, p4test, simple_switch_grpc) when ../shared/toolchain ships it: the
# tests that hold the P4 programs to the real compilers find it in /opt/p4-toolchain/bin (or on PATH)
toolchain=../shared/toolchain/install.sh
if [ -f "$toolchain" ]; then
    if [ "$(id -u)" = 0 ] || [ -w /opt/p4-toolchain ]; then
        bash "$toolchain" /opt/p4-toolchain >/dev/null || echo "setup: the P4 toolchain did not install; its tests will skip"
    else
        echo "setup: not root, skipping the P4 toolchain ($toolchain); its tests will skip"
    fi
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-$(cat pyproject.toml scripts/setup.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
    "$VENV/bin/python" -c 'import torch' 2>/dev/null || {
        echo "setup: installing torch==2.13.0 (CPU)"
        "$VENV/bin/pip" install -q torch==2.13.0
    }
    echo "setup: installing the project and its Python dependencies"
    "$VENV/bin/pip" install -q -e '.[dev]'
    rm -f "$VENV"/.installed-*
    touch "$stamp"
fi

# Debian's mininet lives in the system interpreter's dist-packages; expose only that module.
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -d /usr/lib/python3/dist-packages/mininet ] && [ ! -e "$site/mininet" ]; then
    ln -s /usr/lib/python3/dist-packages/mininet "$site/mininet"
fi
