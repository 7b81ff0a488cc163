"""The C entry points of a TNA program (softswitch/arch/tna.py): what the native runtime's TNA pipeline
(softswitch/native/src/ss_tna.c) calls, as the Python runtime's TnaPipeline (softswitch/runtime/tna.py)
calls the Python back end's blocks.

* Each gress has a context struct holding the objects its three blocks share: its headers, metadata
  and the intrinsic metadata the blocks declare (`pipeline.created_types`); the packet's `hdr` is the
  ingress context, `meta` the egress one, and every block's parameters are bound to members of it.
* The parser entries run the parser and then record its error in the from_parser metadata as TNA's
  flags (and the global timestamp), as TnaPipeline does after the parser.
* The deparser entries tell the runtime what the traffic manager and the deparser need (`p->tna`):
  the ingress one the unicast port (and whether ingress wrote it: a hidden flag of the for_tm struct
  that every store of ucast_egress_port sets), the multicast groups, bypass_egress and drop_ctl.
* `write_tna_prefix` writes the intrinsic metadata header the parser extracts before the frame (fields
  by name, the others 0), from the values the runtime puts in `p->sm`.
"""

from __future__ import annotations

from .. import ir
from ..runtime import tna as tna_runtime
from .blocks import BlockEmitter, controls_with_subcontrols
from .values import mask_code
from .writer import CWriter, member

# the hidden member of the for_tm struct a store of ucast_egress_port sets (layout.write_flags)
UCAST_WRITTEN = "ss_ucast_written"
WRITE_FLAGS = {(tna_runtime.INGRESS_FOR_TM, "ucast_egress_port"): UCAST_WRITTEN}
CONTEXT_TYPES = {"ingress": "ss_tna_ingress_context", "egress": "ss_tna_egress_context"}
CONTEXT_POINTERS = {"ingress": "p->hdr", "egress": "p->meta"}
# the intrinsic metadata header fields the runtime fills before a gress's parser runs, from p->sm
PREFIX_VALUES = {
    "ingress": {"ingress_port": "p->sm.ingress_port", "ingress_mac_tstamp": "p->sm.ingress_global_timestamp"},
    "egress": {
        "egress_port": "p->sm.egress_port",
        "egress_rid": "p->sm.egress_rid",
        "pkt_length": "p->sm.packet_length",
        "enq_qdepth": "p->sm.enq_qdepth",
        "deq_qdepth": "p->sm.deq_qdepth",
    },
}
TIMESTAMPS = {"ingress": "p->sm.ingress_global_timestamp", "egress": "p->sm.egress_global_timestamp"}
INTRINSIC_HEADERS = {"ingress": tna_runtime.INGRESS_INTRINSIC, "egress": tna_runtime.EGRESS_INTRINSIC}
FROM_PARSER = {"ingress": tna_runtime.INGRESS_FROM_PARSER, "egress": tna_runtime.EGRESS_FROM_PARSER}
FOR_DEPARSER = {"ingress": tna_runtime.INGRESS_FOR_DEPARSER, "egress": tna_runtime.EGRESS_FOR_DEPARSER}


class TnaEntries:
    """Writes a TNA program's context structs and entry points; `entries()` gives the descriptor's fields."""

    def __init__(self, program: ir.Program, emitter: BlockEmitter, unaligned: bool):
        self.program = program
        self.pipeline = program.pipeline
        self.emitter = emitter
        self.layout = emitter.layout
        self.unaligned = unaligned
        self.created = self.pipeline.created_types
        self.members = {key: member("m_" + key) for key in self.created}

    def gress_keys(self, gress: str) -> list[str]:
        return [key for key in self.created if key.startswith(gress + "_")]

    def context_types(self) -> CWriter:
        """The two context structs (after the program's types)."""
        out = CWriter()
        for gress, name in CONTEXT_TYPES.items():
            with out.block("typedef struct"):
                for key in self.gress_keys(gress):
                    out.write(f"{self.layout.type_name(self.created[key])} {self.members[key]};")
                out.write("uint8_t ss_end;")
            out.lines[-1] = f"}} {name};"
            out.write("")
        return out

    def _object(self, gress: str, key: str) -> str:
        """A pointer to one of a gress's objects in its context."""
        return f"(&(({CONTEXT_TYPES[gress]} *){CONTEXT_POINTERS[gress]})->{self.members[key]})"

    def _field(self, gress: str, key: str, field: str) -> str:
        name = field if field == UCAST_WRITTEN else member(field)  # the hidden flag is no P4 name
        return f"{self._object(gress, key)}->{name}"

    def _bindings(self, role: str) -> list[str | None]:
        gress = role.split("_")[0]
        bindings: list[str | None] = []
        for what in self.pipeline.parameter_roles[role]:
            if what == "packet":
                bindings.append(None)
            elif what in ("headers", "metadata"):
                bindings.append(self._object(gress, f"{gress}_{what}"))
            else:
                bindings.append(self._object(gress, what))
        return bindings

    def entries(self) -> dict[str, str]:
        """Writes the blocks and entry points; the descriptor's fields (functions and sizes)."""
        fields: dict[str, str] = {"arch": "SS_ARCH_TNA"}
        for gress in ("ingress", "egress"):
            parser = self.pipeline.blocks[f"{gress}_parser"]
            control = self.pipeline.blocks[gress]
            deparser = self.pipeline.blocks[f"{gress}_deparser"]
            assert isinstance(parser, ir.Parser)
            assert isinstance(control, ir.Control) and isinstance(deparser, ir.Control)
            parse = self.emitter.bound_parser(parser, self._bindings(f"{gress}_parser"), self.unaligned)
            fields["parse" if gress == "ingress" else "egress_parse"] = self._parser_entry(gress, parse)
            for block in (control, deparser):
                for sub in controls_with_subcontrols(block):
                    self.emitter.control(sub)
            fields[gress] = self.emitter.bound_control_entry(
                f"tna_{gress}_entry", control, self._bindings(gress), deparser=False
            )
            fields["deparse" if gress == "ingress" else "egress_deparse"] = self.emitter.bound_control_entry(
                f"tna_{gress}_deparser_entry",
                deparser,
                self._bindings(f"{gress}_deparser"),
                deparser=True,
                epilogue=self._deparser_epilogue(gress),
            )
        fields["write_tna_prefix"] = self._prefix_writer()
        fields["tna_ingress_prefix"] = str(self._prefix_bytes("ingress") + tna_runtime.PORT_METADATA_BYTES)
        fields["tna_egress_prefix"] = str(self._prefix_bytes("egress"))
        return fields

    def _parser_entry(self, gress: str, parse: str) -> str:
        """The parser, then its error as TNA's parser_err flags and the global timestamp (48 bits) in the
        from_parser metadata, if a block declares it."""
        name = f"tna_{gress}_parse_entry"
        out = self.emitter.bodies
        with out.block(f"static uint32_t {name}(ss_packet *p)"):
            out.write(f"uint32_t err = {parse}(p);")
            key = FROM_PARSER[gress]
            if key in self.created:
                out.write("uint32_t flags = 0;")
                with out.block("switch (err)"):
                    out.write("case 0: break;")
                    for code, flag in tna_runtime.PARSER_ERROR_FLAGS.items():
                        out.write(f"case {code}: flags = {flag}; break;")
                    out.write(f"default: flags = {tna_runtime.PARSER_ERROR_NO_MATCH}; break;")
                out.write(f"{self._field(gress, key, 'parser_err')} = flags;")
                out.write(f"{self._field(gress, key, 'global_tstamp')} = {TIMESTAMPS[gress]} & {mask_code(48)};")
            out.write("return err;")
        out.write("")
        return name

    def _deparser_epilogue(self, gress: str) -> tuple[str, ...]:
        lines = []
        if FOR_DEPARSER[gress] in self.created:
            lines.append(f"p->tna.drop_ctl = (uint8_t){self._field(gress, FOR_DEPARSER[gress], 'drop_ctl')};")
        tm = tna_runtime.INGRESS_FOR_TM
        if gress == "ingress" and tm in self.created:
            tm_fields = {f.name for f in self.created[tm].fields}
            for field in ("ucast_egress_port", "mcast_grp_a", "mcast_grp_b", "bypass_egress"):
                if field in tm_fields:
                    lines.append(f"p->tna.{field} = {self._field(gress, tm, field)};")
            lines.append(f"p->tna.ucast_valid = {self._field(gress, tm, UCAST_WRITTEN)};")
        return tuple(lines)

    def _prefix_bytes(self, gress: str) -> int:
        header = self.created.get(INTRINSIC_HEADERS[gress])
        if header is None:
            return 0
        assert isinstance(header, ir.HeaderType)
        return sum(ir.field_width(f.type) for f in header.fields) // 8

    def _prefix_writer(self) -> str:
        """`write_tna_prefix(p, egress, out)`: a gress's intrinsic metadata header as its parser extracts it
        (fields MSB first; the runtime zeroed the bytes)."""
        out = self.emitter.bodies
        name = "write_tna_prefix"
        with out.block(f"static void {name}(const ss_packet *p, uint32_t egress, uint8_t *out)"):
            for gress in ("ingress", "egress"):
                header = self.created.get(INTRINSIC_HEADERS[gress])
                with out.block(f"if ({int(gress == 'egress')} == egress)"):
                    offset = 0
                    for field in header.fields if isinstance(header, ir.HeaderType) else ():
                        width = ir.field_width(field.type)
                        value = PREFIX_VALUES[gress].get(field.name)
                        if value is not None:
                            out.write(f"ss_bits_put(out, {offset}, {width}, (uint64_t){value});")
                        offset += width
            out.write("(void)p;")
            out.write("(void)out;")
        out.write("")
        return name
