"""Loads tests/protocol/golden_vectors.json (shared by the codec, scapy and data-plane tests)."""

import json
from pathlib import Path

GOLDEN_PATH = Path(__file__).with_name("golden_vectors.json")


def load_golden() -> dict:
    data = json.loads(GOLDEN_PATH.read_text())
    for vector in data["valid"] + data["invalid"]:
        vector["bytes"] = bytes.fromhex("".join(vector["hex"].split()))
    return data


GOLDEN = load_golden()
VALID = GOLDEN["valid"]
INVALID = GOLDEN["invalid"]
