"""native/heap.py: the agents' malloc thresholds are the whole process's, so a rank can leave them."""

from native import heap


def test_the_thresholds_are_fixed_unless_the_environment_says_no(monkeypatch):
    monkeypatch.setenv("INA_KEEP_FREED_MEMORY", "0")
    assert heap.keep_freed_memory.__wrapped__() is False  # glibc's defaults are left alone
    monkeypatch.delenv("INA_KEEP_FREED_MEMORY")
    assert heap.keep_freed_memory.__wrapped__() is True  # Debian's C library is glibc: mallopt took both
