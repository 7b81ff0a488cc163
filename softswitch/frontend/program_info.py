"""ProgramInfo (what the control plane can address, by P4 name) read off a checked IR Program.

Lists keep the order the program declares things in: top-level actions, the parser, then each
control of the pipeline with its locals in order (sub-control instances where they are declared)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import ir
from ..ir.walk import block_nodes, walk
from ..program import (
    ActionInfo,
    ActionProfileInfo,
    ActionRef,
    ConstEntry,
    ControllerHeaderInfo,
    CounterInfo,
    DigestInfo,
    DirectCounterInfo,
    DirectMeterInfo,
    FieldInfo,
    KeyInfo,
    MeterInfo,
    ParamInfo,
    ProgramInfo,
    RegisterInfo,
    TableInfo,
    ValueSetInfo,
)


def program_info(program: ir.Program) -> ProgramInfo:
    info = ProgramInfo(name=program.name, arch=program.pipeline.architecture)
    for t in program.headers:
        annotation = ir.find_annotation(t.annotations, "controller_header")
        if annotation and annotation.arguments:
            fields = tuple(FieldInfo(f.name, ir.field_width(f.type)) for f in t.fields)
            info.controller_headers.append(ControllerHeaderInfo(annotation.arguments[0], fields))
    declared: list[ir.Action] = []  # p4c lists the actions a table names or code calls, as declared
    used: set[str] = set()
    digests: dict[str, DigestInfo] = {}
    profiles: dict[str, tuple[ir.ExternInstance, list[str]]] = {}
    for item in _declarations(program):
        if isinstance(item, ir.Table):
            info.tables.append(_table_info(item))
            if item.implementation is not None:
                profile = item.implementation
                profiles.setdefault(profile.qualified_name, (profile, []))[1].append(item.qualified_name)
            used.update(action.qualified_name for action in _table_actions(item))
        elif isinstance(item, ir.ExternInstance):
            _add_extern(info, item)
        else:
            if isinstance(item, ir.Action):
                declared.append(item)
            for node in block_nodes(item) if isinstance(item, (ir.Action, ir.Parser)) else walk(item):
                if isinstance(node, ir.ActionCall):
                    used.add(node.action.qualified_name)
                elif isinstance(node, ir.ExternFunctionCall) and node.function == "digest":
                    digest_type = node.type_arguments[0]
                    assert isinstance(digest_type, ir.StructType)
                    fields = tuple(FieldInfo(f.name, ir.field_width(f.type)) for f in digest_type.fields)
                    digests.setdefault(digest_type.name, DigestInfo(digest_type.name, fields))
    for block in program.blocks():
        if isinstance(block, ir.Parser):
            for vs in block.value_sets:
                width = vs.type.width  # type: ignore[attr-defined]
                info.value_sets.append(ValueSetInfo(vs.qualified_name, width, vs.size, _p4_id(vs.annotations)))
    info.actions = [_action_info(a) for a in declared if a.qualified_name in used]
    info.action_profiles = [_action_profile_info(p, tables) for p, tables in profiles.values()]
    info.digests = list(digests.values())
    return info


Declared = ir.Action | ir.Table | ir.ExternInstance | ir.Parser | ir.Statement


def _declarations(program: ir.Program) -> Iterator[Declared]:
    """Actions, tables, extern instances, parsers, variable declarations and apply bodies of the
    program, in declaration order."""
    yield from program.actions

    def control(c: ir.Control) -> Iterator[Declared]:
        for local in c.locals:
            if isinstance(local, ir.Control):
                yield from control(local)
            else:
                yield local
        yield c.body

    for block in program.pipeline.blocks.values():
        if isinstance(block, ir.Parser):
            yield block
        else:
            yield from control(block)


def _table_actions(table: ir.Table) -> list[ir.Action]:
    actions = [a.action for a in table.actions]
    if table.default_action.action not in actions:
        actions.append(table.default_action.action)
    return actions


def _p4_id(annotations: tuple[ir.Annotation, ...]) -> int | None:
    """The value of an @id annotation (P4Info keeps it as the object's id)."""
    a = ir.find_annotation(annotations, "id")
    if a is None or not a.arguments or not isinstance(a.arguments[0], int):
        return None
    return a.arguments[0]


def _texts(annotations: tuple[ir.Annotation, ...]) -> tuple[str, ...]:
    """Annotations as P4Info lists them: as written, without @name and @id (P4Info has fields for them)."""
    return tuple(a.text or "@" + a.name for a in annotations if a.name not in ("name", "id"))


def _action_info(action: ir.Action) -> ActionInfo:
    params = tuple(
        ParamInfo(p.name, ir.field_width(p.type), p4_id=_p4_id(p.annotations)) for p in action.data_parameters
    )
    return ActionInfo(action.qualified_name, params, _texts(action.annotations), _p4_id(action.annotations))


def _key_infos(table: ir.Table) -> tuple[KeyInfo, ...]:
    """The match fields. p4c numbers them over all key elements, the `selector` ones (which P4Info
    leaves out) included: a field keeps its position in the key as its id."""
    if not table.selector_keys:
        return tuple(KeyInfo(k.name, k.match_kind, k.width, _p4_id(k.annotations)) for k in table.keys)
    position = {id(k): i for i, k in enumerate(table.all_keys, start=1)}
    return tuple(KeyInfo(k.name, k.match_kind, k.width, _p4_id(k.annotations) or position[id(k)]) for k in table.keys)


def _table_info(table: ir.Table) -> TableInfo:
    return TableInfo(
        table.qualified_name,
        _key_infos(table),
        tuple(ActionRef(a.action.qualified_name, a.scope) for a in table.actions),
        table.default_action.action.qualified_name,
        table.default_action.arguments,
        table.default_action.is_const,
        tuple(ConstEntry(e.matches, e.action.qualified_name, e.arguments, e.priority) for e in table.entries),
        table.entries_are_const,
        table.size,
        table.direct_counter.qualified_name if table.direct_counter else None,
        _texts(table.annotations),
        _p4_id(table.annotations),
        table.direct_meter.qualified_name if table.direct_meter else None,
        ir.has_annotation(table.annotations, "hidden"),
        table.implementation.qualified_name if table.implementation else None,
        tuple(KeyInfo(k.name, k.match_kind, k.width, _p4_id(k.annotations)) for k in table.selector_keys),
    )


def _action_profile_info(profile: ir.ExternInstance, tables: list[str]) -> ActionProfileInfo:
    args = profile.constructor_arguments
    selector = profile.kind == "action_selector"
    size = _value(args[1] if selector else args[0])
    max_group = ir.find_annotation(profile.annotations, "max_group_size")
    max_group_size = 0  # (p4c: only a selector's @max_group_size counts; the annotation is not listed)
    if selector and max_group is not None and max_group.arguments and isinstance(max_group.arguments[0], int):
        max_group_size = max_group.arguments[0]
    return ActionProfileInfo(
        profile.qualified_name,
        size,
        tuple(sorted(tables)),  # p4c keeps the tables of a profile in a set of names
        selector,
        _enum_name(args[0]) if selector else None,
        tuple(a for a in _texts(profile.annotations) if not a.startswith("@max_group_size")),
        _p4_id(profile.annotations),
        max_group_size,
    )


def _add_extern(info: ProgramInfo, instance: ir.ExternInstance) -> None:
    args = instance.constructor_arguments
    p4_id = _p4_id(instance.annotations)
    if instance.kind == "register":
        element = instance.type.type_arguments[0]
        assert isinstance(element, ir.BitType)
        info.registers.append(
            RegisterInfo(instance.qualified_name, element.width, _value(args[0]), element.signed, p4_id)
        )
    elif instance.kind == "Register":  # TNA: a struct of two halves is one word, the first field high
        element = instance.type.type_arguments[0]
        width = sum(ir.field_width(f.type) for f in element.fields) if isinstance(element, ir.StructType) else 0
        signed = False
        if isinstance(element, ir.BitType):
            width, signed = element.width, element.signed
        info.registers.append(RegisterInfo(instance.qualified_name, width, _value(args[0]), signed, p4_id))
    elif instance.kind == "counter":
        unit = _enum_name(args[1]).lower()  # TNA's CounterType_t members are upper case
        info.counters.append(CounterInfo(instance.qualified_name, _value(args[0]), unit, p4_id))
    elif instance.kind == "meter":
        info.meters.append(MeterInfo(instance.qualified_name, _value(args[0]), _enum_name(args[1]), p4_id))
    elif instance.kind == "direct_meter":
        assert instance.table is not None
        info.direct_meters.append(DirectMeterInfo(instance.qualified_name, instance.table, _enum_name(args[0]), p4_id))
    elif instance.kind == "direct_counter":
        assert instance.table is not None
        info.direct_counters.append(
            DirectCounterInfo(instance.qualified_name, instance.table, _enum_name(args[0]).lower(), p4_id)
        )


def _value(e: ir.Expression) -> int:
    assert isinstance(e, ir.Constant) and isinstance(e.value, int)
    return e.value


def _enum_name(e: ir.Expression) -> str:
    assert isinstance(e, ir.Constant) and isinstance(e.type, ir.EnumType)
    return e.type.member_name(_value(e))
