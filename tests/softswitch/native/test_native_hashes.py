"""The runtime's hash and checksum algorithms against the Python runtime's (softswitch/runtime/support.py)
on random data, streaming across odd splits, the hash() extern's base/max/width, and the header's bit
helpers against Python integer arithmetic."""

from __future__ import annotations

import ctypes
import random

import pytest
from native_fixture import fixture_program

from softswitch.runtime import support

ALGORITHMS = {"crc16": 0, "crc32": 1, "csum16": 2, "xor16": 3, "identity": 4}


@pytest.fixture(scope="module")
def lib():
    return fixture_program().library


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_hashes_match_the_python_runtime(lib, name):
    rng = random.Random(name)
    for size in [0, 1, 2, 3, 7, 8, 20, 21, 64, 1500] + [rng.randrange(300) for _ in range(200)]:
        data = rng.randbytes(size)
        expected = support.HASHES[name](data)
        if name == "identity":
            expected &= (1 << 64) - 1  # the runtime keeps the low 64 bits
        assert lib.api.ss_hash_bytes(ALGORITHMS[name], data, len(data)) == expected, (name, data.hex())


def test_csum16_of_all_zeros_and_of_ones_complement_zero(lib):
    assert lib.api.ss_hash_bytes(2, bytes(20), 20) == 0xFFFF
    assert lib.api.ss_hash_bytes(2, b"\xff\xff", 2) == 0  # RFC 1071: a non-zero sum of 0xFFFF checks to 0


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_the_hash_extern_matches_compute_hash(lib, name):
    rng = random.Random(f"extern-{name}")
    for _ in range(300):
        nbits = rng.randrange(1, 200)
        value = rng.getrandbits(nbits)
        base, maximum, width = rng.randrange(1 << 16), rng.choice([0, 1, 7, 1 << 10, 65536]), rng.choice([8, 16, 32])
        data = support.bits_to_bytes(value, nbits)
        expected = support.compute_hash(name, value, nbits, base, maximum, width)
        got = lib.api.ss_hash_extern(ALGORITHMS[name], data, len(data), base, maximum, width)
        assert got == expected, (name, nbits, value, base, maximum, width)


def test_bit_helpers_match_integer_arithmetic(lib):
    get, put = lib.cdll.fixture_bits_get, lib.cdll.fixture_bits_put
    get.restype, get.argtypes = ctypes.c_uint64, [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint32]
    put.restype, put.argtypes = None, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint64]
    rng = random.Random(3)
    for _ in range(3000):
        size = 24
        data = rng.randbytes(size)
        width = rng.randint(1, 64)
        offset = rng.randrange(size * 8 - width + 1)
        whole = int.from_bytes(data, "big")
        field = (whole >> (size * 8 - offset - width)) & ((1 << width) - 1)
        assert get(data, offset, width) == field
        value = rng.getrandbits(width)
        buf = ctypes.create_string_buffer(data, size)
        put(ctypes.addressof(buf), offset, width, value)
        shift = size * 8 - offset - width
        expected = (whole & ~(((1 << width) - 1) << shift)) | (value << shift)
        assert int.from_bytes(buf.raw, "big") == expected
