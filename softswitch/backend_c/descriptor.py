"""The program descriptor (`const ss_program ss_program_descriptor`) the runtime reads: the blocks'
entry points and, from ProgramInfo, every action, table, register, counter, digest, value set and
meter by name (meter ids: the indexed meters, then the direct meters).
Descriptor indices are positions in ProgramInfo's lists, so the names ProgramInfo gives and the
indices generated code uses agree by construction."""

from __future__ import annotations

from ..program import ProgramInfo, RegisterInfo
from .values import element_bytes, literal
from .writer import CWriter, string_literal

MATCH_KINDS = {"exact": "SS_MATCH_EXACT", "lpm": "SS_MATCH_LPM", "ternary": "SS_MATCH_TERNARY",
               "range": "SS_MATCH_RANGE", "optional": "SS_MATCH_OPTIONAL"}  # fmt: skip
COUNTER_UNITS = {"packets": "SS_COUNTER_PACKETS", "bytes": "SS_COUNTER_BYTES",
                 "packets_and_bytes": "SS_COUNTER_PACKETS_AND_BYTES"}  # fmt: skip
METER_UNITS = {"packets": "SS_METER_PACKETS", "bytes": "SS_METER_BYTES"}


def register_groups(registers: list[RegisterInfo]) -> list[tuple[int, int]]:
    """(group_offset, group_count) of each register: a run of consecutive registers with the same size
    and element size is one group, whose elements the runtime interleaves (element i of the group's
    register k at i * group_count + k). A program that reads the same index of many registers, as
    ina.p4 reads a slot's lane registers for every GRAD, then touches a few cache lines per packet
    instead of one per register (64 at K = 64, 256 at K = 256)."""

    def shape(r: RegisterInfo) -> tuple[int, int]:
        return (r.size, element_bytes(r.bitwidth) if r.bitwidth <= 128 else -r.bitwidth)

    groups: list[tuple[int, int]] = []
    start = 0
    for end in range(1, len(registers) + 1):
        if end == len(registers) or shape(registers[end]) != shape(registers[start]):
            groups += [(k, end - start) for k in range(end - start)]
            start = end
    return groups


def write_descriptor(
    out: CWriter,
    info: ProgramInfo,
    blocks: dict[str, str],
    sizes: dict[str, str],
    register_initial: dict[str, int] | None = None,
) -> None:
    """`blocks`: descriptor field -> C function (parse, ingress, ...); `sizes`: hdr_size, meta_size,
    max_deparsed as C expressions; `register_initial`: registers' initial element words by name (others 0)."""
    initial = register_initial or {}
    out.write("/* ---------------------------------------------------------------- program descriptor */")
    actions = []
    for i, action in enumerate(info.actions):
        params = _params(out, f"action_params_{i}", [(p.name, p.bitwidth) for p in action.params])
        actions.append(f"{{{string_literal(action.name)}, {len(action.params)}, {params}}}")
    _array(out, "ss_action_desc", "actions", actions)
    tables = []
    for i, table in enumerate(info.tables):
        keys = "NULL"
        if table.keys:
            keys = f"table_keys_{i}"
            entries = [f"{{{string_literal(k.name)}, {MATCH_KINDS[k.match_kind]}, {k.bitwidth}}}" for k in table.keys]
            out.write(f"static const ss_key_desc {keys}[] = {{{', '.join(entries)}}};")
        counted = int(table.direct_counter is not None)
        tables.append(f"{{{string_literal(table.name)}, {len(table.keys)}, {keys}, {table.size}, {counted}}}")
    _array(out, "ss_table_desc", "tables", tables)
    registers = [
        f"{{{string_literal(r.name)}, {r.bitwidth}, {r.size}, {int(r.signed)}, {offset}, {count}, "
        f"{literal(initial.get(r.name, 0))}}}"
        for r, (offset, count) in zip(info.registers, register_groups(list(info.registers)), strict=True)
    ]
    _array(out, "ss_register_desc", "registers", registers)
    counters = [f"{{{string_literal(c.name)}, {c.size}, {COUNTER_UNITS[c.unit]}}}" for c in info.counters]
    _array(out, "ss_counter_desc", "counters", counters)
    digests = []
    for i, digest in enumerate(info.digests):
        fields = _params(out, f"digest_fields_{i}", [(f.name, f.bitwidth) for f in digest.fields])
        digests.append(f"{{{string_literal(digest.name)}, {len(digest.fields)}, {fields}}}")
    _array(out, "ss_digest_desc", "digests", digests)
    value_sets = [f"{{{string_literal(v.name)}, {v.bitwidth}, {v.size}}}" for v in info.value_sets]
    _array(out, "ss_value_set_desc", "value_sets", value_sets)
    table_ids = {t.name: i for i, t in enumerate(info.tables)}
    meters = [f"{{{string_literal(m.name)}, {m.size}, {METER_UNITS[m.unit]}, -1}}" for m in info.meters]
    meters += [
        f"{{{string_literal(m.name)}, 0, {METER_UNITS[m.unit]}, {table_ids[m.table]}}}" for m in info.direct_meters
    ]
    _array(out, "ss_meter_desc", "meters", meters)
    out.write("")
    with out.block("const ss_program ss_program_descriptor ="):
        out.write(".abi_version = SS_ABI_VERSION,")
        out.write(f".name = {string_literal(info.name)},")
        for key, value in sizes.items():
            out.write(f".{key} = {value},")
        for key, value in blocks.items():
            out.write(f".{key} = {value},")
        for field, items in (
            ("actions", actions),
            ("tables", tables),
            ("registers", registers),
            ("counters", counters),
            ("digests", digests),
            ("value_sets", value_sets),
            ("meters", meters),
        ):
            out.write(f".n_{field} = {len(items)},")
            out.write(f".{field} = {field + '_desc' if items else 'NULL'},")
    out.lines[-1] = "};"


def _params(out: CWriter, name: str, params: list[tuple[str, int]]) -> str:
    if not params:
        return "NULL"
    entries = ", ".join(f"{{{string_literal(n)}, {w}}}" for n, w in params)
    out.write(f"static const ss_param_desc {name}[] = {{{entries}}};")
    return name


def _array(out: CWriter, ctype: str, name: str, items: list[str]) -> None:
    if not items:
        return
    out.write(f"static const {ctype} {name}_desc[] = {{")
    for item in items:
        out.write(f"    {item},")
    out.write("};")
