"""C functions of the program's parser, controls, actions and tables, and the entry points the
runtime's program descriptor names.

* The parser is one function, `uint32_t parse_<P>(ss_packet *p)`: its states are labels, `off` the bit
  offset, errors `goto parse_error`.
* A control instance has a frame struct `F_<C>` (its parameters: objects by pointer, scalars by value;
  and its control-local variables) and `int control_<C>(ss_packet *p, F_<C> *C)`, which runs the
  control-local initializers and the apply block.
* An action is `int action_<A>(ss_packet *p, F_<C> *C, parameters...)`: directional scalars as
  pointers to the caller's temporaries, objects as pointers, action data by value.
* A table is `int table_<T>(ss_packet *p, F_<C> *C, ss_apply_result *r)`: builds the key bytes, calls
  ss_table_lookup and runs the action it returns with the entry's data.
* Functions return 1 when `exit` ran. The entries (`ingress_entry`, ...) build the top-level frames
  from the packet and ignore that.
* A function reaches a register group's elements through one local pointer per group
  (`register_<first>`, externs.py). It is `restrict` (no other pointer reaches that memory while the
  function runs, so the compiler may keep header fields in registers across register stores and
  vectorise lane loops without alias checks) only in a function that calls no other generated
  function: a called action may use the same group through its own pointer, which would break that
  promise (undefined behaviour in C, whether or not the compiler makes use of it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from .. import ir
from ..ir.walk import walk
from .expressions import ExpressionEmitter, GeneratedNames, Scope
from .externs import HASH_ALGORITHMS
from .invariants import access_path, invariant_reads
from .layout import TypeLayout, pack_items
from .statements import StatementEmitter, parameter_member
from .values import literal, value_type, width_of
from .writer import CWriter, NameAllocator, Unsupported, member

ROLE_PARAMETERS = {  # what each v1model block's parameters are, in order
    "parser": ("packet", "hdr", "meta", "sm"),
    "verify": ("hdr", "meta"),
    "ingress": ("hdr", "meta", "sm"),
    "egress": ("hdr", "meta", "sm"),
    "compute": ("hdr", "meta"),
    "deparser": ("packet", "hdr"),
}


def controls_with_subcontrols(control: ir.Control) -> list[ir.Control]:
    """A control and its sub-control instances, sub-controls first (their frames come first)."""
    out: list[ir.Control] = []
    for sub in control.sub_controls:
        out += controls_with_subcontrols(sub)
    out.append(control)
    return out


class BlockEmitter:
    def __init__(self, program: ir.Program, layout: TypeLayout, names: GeneratedNames, allocator: NameAllocator):
        self.program = program
        self.layout = layout
        self.names = names
        self.allocator = allocator
        self.x = ExpressionEmitter(layout, names)
        self.statements = StatementEmitter(self.x, layout)
        self.frames = CWriter()  # frame struct declarations
        # parameters of the pipeline's blocks: distinct objects (headers, metadata, standard_metadata)
        self.block_parameters = {p for b in program.pipeline.blocks.values() for p in b.parameters}
        self.prototypes = CWriter()
        self.bodies = CWriter()
        self._generated_call: re.Pattern[str] | None = None  # a call of one of names.functions

    # ---------------------------------------------------------------- naming and analysis
    def declare_names(self) -> None:
        """C names of every action, table and control (before any body refers to them)."""
        for action in self.program.actions:
            self.names.functions[action] = self.allocator.fresh("action_" + action.qualified_name)
        for block in self.program.blocks():
            if isinstance(block, ir.Control):
                prefix = block.qualified_name
                self.names.functions[block] = self.allocator.fresh("control_" + prefix)
                self.names.frames[block] = self.allocator.fresh("F_" + prefix)
                for action in block.actions:
                    self.names.functions[action] = self.allocator.fresh("action_" + action.qualified_name)
                for table in block.tables:
                    self.names.functions[table] = self.allocator.fresh("table_" + table.qualified_name)
        for block in self.program.blocks():
            if isinstance(block, ir.Control):
                self._may_exit(block)

    def _may_exit(self, item: object) -> bool:
        """Whether an exit can end `item` (an action, table or control) and the code that called it."""
        known = self.names.may_exit.get(item)
        if known is not None:
            return known
        self.names.may_exit[item] = False  # P4 has no recursion; guards against revisiting
        if isinstance(item, ir.Table):
            result = any(self._may_exit(ref.action) for ref in item.actions) or self._may_exit(
                item.default_action.action
            )
        else:
            body = item.body
            result = False
            for node in walk(body):
                if isinstance(node, ir.Exit):
                    result = True
                elif isinstance(node, ir.ActionCall):
                    result = self._may_exit(node.action) or result
                elif isinstance(node, ir.TableApply):
                    result = self._may_exit(node.table) or result
                elif isinstance(node, ir.ControlApply):
                    result = self._may_exit(node.control) or result
        self.names.may_exit[item] = result
        return result

    @contextmanager
    def function(self, comment: str, signature: str, scope: Scope) -> Iterator[CWriter]:
        """`signature { body }` in the bodies, with the declarations the body asked for
        (scope.function_locals) at its top."""
        out = self.bodies
        out.write(f"/* {comment} */")
        loops = self.statements.lane_loops
        with out.block(signature):
            mark = len(out.lines)
            yield out
            calls = self._calls_generated_function("\n".join(out.lines[mark:]))
            qualifier = "" if calls else "restrict "
            pointers = [
                f"{ctype} *{qualifier}const register_{first} = ({ctype} *)p->registers[{first}].data;"
                for first, ctype in scope.register_groups.items()
            ]
            out.lines[mark:mark] = ["    " + line for line in pointers + scope.function_locals]
        if self.statements.lane_loops != loops:  # not inlined, and built for AVX2 too (ss_values.h)
            assert out.lines[mark - 1].startswith("static ")
            out.lines[mark - 1] = "SS_LANE_FUNCTION " + out.lines[mark - 1][len("static ") :]
        out.write("")

    def _calls_generated_function(self, body: str) -> bool:
        """Whether C code calls an action, table or control function of the program."""
        if self._generated_call is None:
            names = sorted(self.names.functions.values(), key=len, reverse=True)
            self._generated_call = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\(") if names else None
        return bool(self._generated_call and self._generated_call.search(body))

    # ---------------------------------------------------------------- actions
    def action(self, action: ir.Action, frame_type: str | None, control_scope: Scope) -> None:
        name = self.names.functions[action]
        scope = control_scope.function()
        params = ["ss_packet *p", f"{frame_type} *C" if frame_type else "void *C"]
        for parameter in action.parameters:
            pname = self.allocator.fresh("param_" + parameter.name)
            if ir.is_object(parameter.type):
                params.append(f"{self.layout.type_name(parameter.type)} *{pname}")
                scope.variables[parameter] = f"(*{pname})"
            elif parameter.direction in ("out", "inout"):
                params.append(f"{value_type(parameter.type, parameter.position)} *{pname}")
                scope.variables[parameter] = f"(*{pname})"
            else:
                params.append(f"{value_type(parameter.type, parameter.position)} {pname}")
                scope.variables[parameter] = pname
        signature = f"static int {name}({', '.join(params)})"
        self.prototypes.write(signature + ";")
        with self.function(f"action {action.qualified_name}", signature, scope) as out:
            out.write("(void)C;")
            for read in invariant_reads(action, self.block_parameters):
                local = self.x.temp("field")
                out.write(f"const {value_type(read.type)} {local} = {self.x.value(read, scope)};")
                scope.cached[access_path(read)] = local
            self.statements.block(out, action.body.statements, scope)
            out.write("return 0;")

    # ---------------------------------------------------------------- tables
    def table(self, table: ir.Table, frame_type: str, control_scope: Scope) -> None:
        name = self.names.functions[table]
        signature = f"static int {name}(ss_packet *p, {frame_type} *C, ss_apply_result *r)"
        self.prototypes.write(signature + ";")
        table_id = self.names.table_ids[table.qualified_name]
        scope = control_scope.function()
        with self.function(f"table {table.qualified_name}", signature, scope) as out:
            key_bytes = sum((k.width + 7) // 8 for k in table.keys)
            out.write(f"uint8_t key[{max(key_bytes, 1)}];")
            offset = 0
            for k in table.keys:
                nbytes = (k.width + 7) // 8
                value = self.x.value(k.expression, scope)
                if width_of(k.expression.type) > 64:
                    out.write(f"ss_store_be128(key + {offset}, {nbytes}, {value});")
                else:
                    out.write(f"ss_store_be(key + {offset}, {nbytes}, {value});")
                offset += nbytes
            out.write(f"const ss_action_call *call = ss_table_lookup(p, {table_id}, key);")
            if table.direct_meter is not None:  # the hit entry's cell marks the packet before the action runs
                out.write("const ss_action_call *entry_call = call->hit ? call : NULL;")
            if table.selector_keys:
                self._select_member(out, table, table_id, scope)
            if table.direct_meter is not None:
                meter = self.names.meter_ids[table.direct_meter.qualified_name]
                out.write(f"ss_direct_meter_mark(p, {meter}, call->hit ? entry_call : NULL);")
            out.write("r->hit = call->hit;")
            out.write("r->action = call->action;")
            refs = {ref.action.qualified_name: ref for ref in table.actions}
            default = table.default_action.action
            refs.setdefault(default.qualified_name, ir.TableAction(action=default))
            with out.block("switch (call->action)"):
                for qualified_name, ref in refs.items():
                    with out.block(f"case {self.names.action_ids[qualified_name]}:"):
                        self.statements.call_action(
                            out, ref.action, ref.bound_arguments, self._action_data(ref.action), scope
                        )
                        out.write("break;")
            out.write("return 0;")

    def _select_member(self, out: CWriter, table: ir.Table, table_id: int, scope: Scope) -> None:
        """A group entry: the member the action selector picks by its hash of the selector keys' bits
        (concatenated in key order, MSB first, zero bits up to a byte), as the Python back end does."""
        selector = table.implementation
        assert selector is not None
        argument = selector.constructor_arguments[0] if selector.constructor_arguments else None
        if not (isinstance(argument, ir.Constant) and isinstance(argument.type, ir.EnumType)):
            raise Unsupported(f"the hash algorithm of {selector.qualified_name} (not a constant)", table.position)
        algorithm = argument.type.member_name(argument.value)  # type: ignore[arg-type]
        if algorithm not in HASH_ALGORITHMS:
            raise Unsupported(f"the hash algorithm {algorithm} of {selector.qualified_name}", table.position)
        items = []
        for k in table.selector_keys:
            if k.width > 64:
                raise Unsupported(f"a selector key wider than 64 bits in table {table.qualified_name}", table.position)
            items.append((self.x.value(k.expression, scope), k.width))
        nbytes = (sum(w for _, w in items) + 7) // 8
        if algorithm == "identity" and nbytes > 8:  # the whole number mod n: ss_hash_bytes keeps 64 bits
            raise Unsupported(
                f"the identity hash of {selector.qualified_name} over more than 64 selector bits "
                f"(table {table.qualified_name})",
                table.position,
            )
        with out.block("if (call->action == SS_ACTION_GROUP)"):
            out.write(f"uint8_t selected[{max(nbytes, 1)}] = {{0}};")
            pack_items(out, "selected", items)
            hashed = f"ss_hash_bytes({HASH_ALGORITHMS[algorithm]}, selected, {nbytes})"
            out.write(f"call = ss_group_select(p, {table_id}, call, {hashed});")

    def _action_data(self, action: ir.Action) -> list[str]:
        codes, word = [], 0
        for parameter in action.data_parameters:
            if width_of(parameter.type) > 64:
                codes.append(f"((ss_u128)call->data[{word + 1}] << 64 | call->data[{word}])")
                word += 2
            else:
                codes.append(f"call->data[{word}]")
                word += 1
        return codes

    # ---------------------------------------------------------------- controls
    def control(self, control: ir.Control) -> None:
        frame_type = self.names.frames[control]
        scope = Scope()
        members: list[str] = []
        for parameter in control.parameters:
            slot = parameter_member(parameter)
            if ir.is_object(parameter.type):
                members.append(f"{self.layout.type_name(parameter.type)} *{slot};")
                scope.variables[parameter] = f"(*C->{slot})"
            elif isinstance(parameter.type, ir.ExternType):
                if parameter.type.name != "packet_out":
                    raise Unsupported(f"a control parameter of type {parameter.type}", parameter.position)
                members.append(f"ss_out_cursor *{slot};")
                scope.variables[parameter] = f"C->{slot}"
            else:
                members.append(f"{value_type(parameter.type, parameter.position)} {slot};")
                scope.variables[parameter] = f"C->{slot}"
        for local in control.variables:
            slot = parameter_member(local.variable)
            members.append(f"{self.layout.variable(local.variable.type, local.position)} {slot};")
            scope.variables[local.variable] = f"C->{slot}"
        with self.frames.block("typedef struct"):
            for line in members or ["uint8_t ss_empty;"]:
                self.frames.write(line)
        self.frames.lines[-1] = f"}} {frame_type};"
        self.frames.write("")
        for local in control.locals:
            if isinstance(local, ir.Action):
                self.action(local, frame_type, scope)
            elif isinstance(local, ir.Table):
                self.table(local, frame_type, scope)
        name = self.names.functions[control]
        signature = f"static int {name}(ss_packet *p, {frame_type} *C)"
        self.prototypes.write(signature + ";")
        scope = scope.function()
        with self.function(f"control {control.qualified_name} ({control.name})", signature, scope) as out:
            for local in control.variables:
                slot = f"C->{parameter_member(local.variable)}"
                if local.initializer is None:
                    out.write(f"memset(&{slot}, 0, sizeof {slot});")
                elif ir.is_object(local.variable.type):
                    out.write(f"{slot} = {self.x.object_value(local.initializer, scope)};")
                else:
                    out.write(f"{slot} = {self.x.value(local.initializer, scope)};")
            self.statements.block(out, control.body.statements, scope.child())
            out.write("return 0;")

    def control_entry(self, role: str, control: ir.Control, packet_types: dict[str, str]) -> str:
        """`static void <role>_entry(ss_packet *p)` (deparser: `uint32_t deparse_entry(p, out)`) of a
        v1model block."""
        bindings = [packet_types[what] if what != "packet" else None for what in ROLE_PARAMETERS[role]]
        return self.bound_control_entry(f"{role}_entry", control, bindings, deparser=role == "deparser")

    def bound_control_entry(
        self, name: str, control: ir.Control, bindings: list[str | None], deparser: bool, epilogue: tuple[str, ...] = ()
    ) -> str:
        """An entry function running `control` with its parameters bound to `bindings` (C pointers; None:
        the packet_out); `epilogue` runs after it. A deparser's returns the bytes it wrote to `out`."""
        frame_type = self.names.frames[control]
        out = self.bodies
        opening = (
            f"static uint32_t {name}(ss_packet *p, uint8_t *out)" if deparser else f"static void {name}(ss_packet *p)"
        )
        with out.block(opening):
            out.write(f"{frame_type} frame;")
            if deparser:
                out.write("ss_out_cursor cursor = {out, 0};")
            for parameter, binding in zip(control.parameters, bindings, strict=True):
                slot = f"frame.{parameter_member(parameter)}"
                out.write(f"{slot} = {binding};" if binding is not None else f"{slot} = &cursor;")
            out.write(f"(void){self.names.functions[control]}(p, &frame);")
            for line in epilogue:
                out.write(line)
            if deparser:
                out.write("return cursor.len;")
        out.write("")
        return name

    # ---------------------------------------------------------------- the parser
    def parser(self, parser: ir.Parser, packet_types: dict[str, str], unaligned: bool) -> str:
        """The parser of a v1model program."""
        bindings = [packet_types[what] if what != "packet" else None for what in ROLE_PARAMETERS["parser"]]
        return self.bound_parser(parser, bindings, unaligned)

    def bound_parser(self, parser: ir.Parser, bindings: list[str | None], unaligned: bool) -> str:
        """`uint32_t parse_<P>(ss_packet *p)` with the parameters bound to `bindings` (C pointers; None: the
        packet_in)."""
        name = self.allocator.fresh("parse_" + parser.qualified_name)
        scope = Scope(in_parser=True, unaligned=unaligned)
        labels = {s.name: self.allocator.fresh("state_" + s.name) for s in parser.states}
        with self.function(f"parser {parser.qualified_name}", f"static uint32_t {name}(ss_packet *p)", scope) as out:
            for parameter, binding in zip(parser.parameters, bindings, strict=True):
                if binding is None:
                    continue
                local = self.allocator.fresh("v_" + parameter.name)
                out.write(f"{self.layout.type_name(parameter.type)} *{local} = {binding};")
                scope.variables[parameter] = f"(*{local})"
            out.write("const uint8_t *data = p->data;")
            out.write("const uint64_t nbits = (uint64_t)p->len * 8;")
            out.write("uint64_t off = 0;")
            out.write("uint32_t err = 0;")
            for declaration in parser.locals:
                self.statements.statement(out, declaration, scope)
            out.write(f"goto {labels['start']};")
            for state in parser.states:
                out.write(f"{labels[state.name]}:")
                with out.block(""):
                    state_scope = scope.child()
                    self.statements.block(out, state.statements, state_scope)
                    self.transition(out, state.transition, labels, state_scope)
            out.write("accept:")
            out.write("p->parse_bits = (uint32_t)off;")
            out.write("return 0;")
            out.write("parse_error:")
            out.write("p->parse_bits = (uint32_t)off;")
            out.write("return err;")
        return name

    def transition(self, out: CWriter, t: ir.Transition, labels: dict[str, str], scope: Scope) -> None:
        def goto(state: str) -> str:
            return "goto accept;" if state in ("accept", "reject") else f"goto {labels[state]};"

        if not t.keys:
            assert t.next_state is not None
            out.write(goto(t.next_state))
            return
        keys = []
        for expression in t.keys:
            key = self.x.temp("key")
            out.write(f"{value_type(expression.type, expression.position)} {key} = {self.x.value(expression, scope)};")
            keys.append((key, expression.type))
        for case in t.cases:
            conditions = []
            for (key, key_type), keyset in zip(keys, case.keysets, strict=True):
                conditions += self.keyset_condition(key, key_type, keyset, scope)
            if not conditions:
                out.write(goto(case.next_state))
                return
            out.write(f"if ({' && '.join(conditions)}) {goto(case.next_state)}")
        out.write("err = 2; /* NoMatch */")
        out.write("goto parse_error;")

    def keyset_condition(self, key: str, key_type: ir.Type, keyset: ir.Keyset, scope: Scope) -> list[str]:
        if keyset.is_default:
            return []
        if keyset.value_set is not None:
            vs = keyset.value_set
            nb = (vs.type.width + 7) // 8  # type: ignore[attr-defined]
            bytes_ = self.x.temp("vs_key")
            store = "ss_store_be128" if nb > 8 else "ss_store_be"
            index = self.names.value_set_ids[vs.qualified_name]
            return [
                f"({{ uint8_t {bytes_}[{nb}]; {store}({bytes_}, {nb}, {key}); ss_value_set_match(p, {index}, {bytes_}); }})"
            ]
        assert keyset.value is not None
        value = self.x.value(keyset.value, scope)
        if keyset.mask is not None:
            mask = self.x.value(keyset.mask, scope)
            return [f"({key} & {mask}) == ({value} & {mask})"]
        if keyset.high is not None:
            high = self.x.value(keyset.high, scope)
            if isinstance(key_type, ir.BitType) and key_type.signed:
                sign = literal(1 << (key_type.width - 1), wide=key_type.width > 64)
                return [f"({value} ^ {sign}) <= ({key} ^ {sign})", f"({key} ^ {sign}) <= ({high} ^ {sign})"]
            return [f"{value} <= {key}", f"{key} <= {high}"]
        return [f"{key} == {value}"]

    # ---------------------------------------------------------------- field lists
    def copy_field_list(self, metadata: ir.StructType) -> str:
        """`copy_field_list(list, dst, src)`: the preserved user-metadata fields of each list."""
        out = self.bodies
        ctype = self.layout.type_name(metadata)
        with out.block("static void copy_field_list(int32_t list, void *dst_meta, const void *src_meta)"):
            out.write(f"{ctype} *dst = dst_meta;")
            out.write(f"const {ctype} *src = src_meta;")
            with out.block("switch (list)"):
                for key, paths in self.program.field_lists.items():
                    with out.block(f"case {self.names.field_list_ids[key]}:"):
                        for path in paths:
                            field = ".".join(member(part) for part in path)
                            out.write(f"dst->{field} = src->{field};")
                        out.write("break;")
                out.write("default: break;")
            out.write("(void)dst;")
            out.write("(void)src;")
        out.write("")
        return "copy_field_list"
