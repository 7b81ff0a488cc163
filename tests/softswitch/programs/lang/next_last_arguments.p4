/* `.next` as an out argument is an l-value evaluated once, before the call (P4_16 specification,
 * "Calling convention: call by copy in/copy out": arguments are evaluated left to right before the call,
 * out/inout values copied back in argument order when the callee returns). The sub-parsers below also
 * receive the stack inout and extract into it, which moves its nextIndex; the copy-back of the second
 * argument must still go to the element it named before the call. `.last` is not an l-value for p4c
 * (the spec's "L-values" section allows it; p4c refuses it as an out/inout argument): it goes in as an in argument,
 * a copy of the element it names at the call. By ctl.op:
 *   1 push_make(hdr.s, hdr.s.next), nextIndex 0: the argument is s[0]. The callee extracts s[0] into its
 *     copy of the stack (nextIndex 1) and makes e = (e1, e2); s is copied back, then e into s[0].
 *   2 after one extract (nextIndex 1), push_read(hdr.s, hdr.s.last, hdr.ctl.x): first is a copy of s[0];
 *     the callee extracts s[1] (nextIndex 2, its last now s[1]) and sets v = first.f, s[0]'s f, not s[1]'s.
 *   3 push_set(hdr.s, hdr.s.next.f), nextIndex 0: an out bit<8>; the callee extracts s[0] and sets
 *     v = 77; s copied back, then 77 into s[0].f.
 *   4 after three extracts (the stack is full), tail_make(hdr.tail, hdr.s.next): evaluating the second
 *     argument fails with error.StackOutOfBounds before the call, so the callee never runs and tail stays
 *     invalid (its byte is left as payload). Ingress writes what it sees into ctl.x.
 *   5 after one extract (nextIndex 1), the function overwrite_read(hdr.s, hdr.s.last, hdr.ctl.x): first
 *     is a copy of s[0] taken at the call; the function writes s[0].f = 55 and then v = first.f, the old
 *     value; s is copied back, then v into ctl.x. (A function a parser calls cannot move nextIndex:
 *     push_front/pop_front are refused there, as p4c refuses them once it has inlined the function.)
 *   6 after one extract, count_make(hdr.ctl.x, hdr.s[hdr.ctl.x]) with x = 0: a computed index into a
 *     sub-parser's out argument, the same rule: the callee increments its i; i is copied back first
 *     (x = 1), then e into s[0], not s[1]. */
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; bit<8> x; }
header elem_t { bit<8> f; bit<8> g; }
header tail_t { bit<8> t; }
struct headers_t { ctl_t ctl; elem_t[3] s; tail_t tail; }
struct meta_t { }

parser PushAndMake(packet_in pkt, inout elem_t[3] s, out elem_t e) {
    state start {
        pkt.extract(s.next);
        e.setValid();
        e.f = 0xe1;
        e.g = 0xe2;
        transition accept;
    }
}

parser PushAndRead(packet_in pkt, inout elem_t[3] s, in elem_t first, out bit<8> v) {
    state start {
        pkt.extract(s.next);
        v = first.f;
        transition accept;
    }
}

parser PushAndSet(packet_in pkt, inout elem_t[3] s, out bit<8> v) {
    state start {
        pkt.extract(s.next);
        v = 0x77;
        transition accept;
    }
}

parser TailAndMake(packet_in pkt, out tail_t t, out elem_t e) {
    state start {
        pkt.extract(t);
        e.setValid();
        e.f = 0xe1;
        e.g = 0xe2;
        transition accept;
    }
}

parser CountAndMake(packet_in pkt, inout bit<8> i, out elem_t e) {
    state start {
        i = i + 1;
        e.setValid();
        e.f = 0xe1;
        e.g = 0xe2;
        transition accept;
    }
}

void overwrite_read(inout elem_t[3] s, in elem_t first, out bit<8> v) {
    s[0].f = 0x55;
    v = first.f;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    PushAndMake() push_make;
    PushAndRead() push_read;
    PushAndSet() push_set;
    TailAndMake() tail_make;
    CountAndMake() count_make;
    state start {
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.op) {
            1: next_object;
            2: last_object;
            3: next_field;
            4: full_stack;
            5: last_function;
            6: computed_index;
            default: accept;
        }
    }
    state next_object {
        push_make.apply(pkt, hdr.s, hdr.s.next);
        transition accept;
    }
    state last_object {
        pkt.extract(hdr.s.next);
        push_read.apply(pkt, hdr.s, hdr.s.last, hdr.ctl.x);
        transition accept;
    }
    state next_field {
        push_set.apply(pkt, hdr.s, hdr.s.next.f);
        transition accept;
    }
    state full_stack {
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        tail_make.apply(pkt, hdr.tail, hdr.s.next);
        transition accept;
    }
    state last_function {
        pkt.extract(hdr.s.next);
        overwrite_read(hdr.s, hdr.s.last, hdr.ctl.x);
        transition accept;
    }
    state computed_index {
        pkt.extract(hdr.s.next);
        count_make.apply(pkt, hdr.ctl.x, hdr.s[hdr.ctl.x]);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.ctl.op == 4) {
            hdr.ctl.x = 0;
            if (sm.parser_error == error.StackOutOfBounds) { hdr.ctl.x = hdr.ctl.x | 0x01; }
            if (hdr.tail.isValid()) { hdr.ctl.x = hdr.ctl.x | 0x02; }
        }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.s);
        pkt.emit(hdr.tail);
    }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
