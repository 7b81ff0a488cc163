/* core.p4 for softswitch: the declarations every P4_16 program sees (P4_16 spec, "core library").
 * Written for softswitch from the specification; the compiler treats these names as built-ins. */
#ifndef _SOFTSWITCH_CORE_P4_
#define _SOFTSWITCH_CORE_P4_
/* the guard name p4c's core.p4 defines: programs and fragments test it with #ifdef */
#define _CORE_P4_

/* Standard parser errors; BMv2 numbers them in this order starting at 0. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* Input packet for parsers. */
extern packet_in {
    void extract<T>(out T hdr);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

/* Output packet for deparsers. */
extern packet_out {
    void emit<T>(in T hdr);
}

/* Stops the parser with error `toSignal` when `check` is false. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; the default of tables without a default_action. */
@noWarn("unused")
action NoAction() {}

/* Match kinds of table keys. */
match_kind {
    exact,
    ternary,
    lpm
}

#endif
