/* A hand-written program descriptor that drives the native runtime from test frames: not a P4
 * program, a fixture for the runtime's state, pipeline orchestration and port I/O.
 *
 * Frame layout: a 16-byte "test header" (parsed when the frame has 16 bytes, else PacketTooShort),
 * then payload. Byte 0 is a command for ingress, bytes 1..3 its arguments:
 *   0 FORWARD     egress_spec = b1
 *   1 MULTICAST   mcast_grp = b1 << 8 | b2
 *   2 DROP        mark_to_drop
 *   3 CLONE_I2E   clone session b1 (preserving field list 0 when b3), egress_spec = b2, meta.passes = 7
 *   4 RESUBMIT    meta.passes += 1; while passes < b1: resubmit (field list 0); then egress_spec = b2
 *   5 RECIRCULATE meta.passes += 1, egress_spec = b2; egress recirculates (field list 0) while passes < b1
 *   6 DIGEST      digest 0 (a = b1, b = b2 << 8 | b3), forward to port 1
 *   7 LOOKUP      table "exact16" on key b4 b5: action fwd(port) sets egress_spec, else drop
 *   8 STATEFUL    counter c0.count(b1); r32[b1] += b2 (old value to b4..b7); forward to b3
 *   9 CLONE_E2E   egress_spec = b2; egress of the original clones to session b1 (field list 0), passes = 9
 *  10 TRUNCATE    egress_spec = b2; egress truncates to b1 bytes
 *  11 FAIL        a fatal run-time error in ingress
 *  12 LOG         log_msg("u={} s={} b={}", b1, (int8)b2, b3 != 0), forward to port 1
 *  13 RANDOM      b4..b7 = random(b1, b2), forward to port 1
 * Egress writes b12 = instance_type, b13 = egress_port, b14 = egress_rid, b15 = meta.passes.
 * With no valid header (short frames), ingress forwards to port 2 unchanged: the I/O fixture
 * (port 1 -> 2) uses frames of any length whose first byte is 0 and second 2.
 */
#include "ss_program.h"

typedef struct {
    uint8_t valid;
    uint8_t b[16];
} fixture_hdr;

typedef struct {
    uint32_t passes;
    uint32_t other;
} fixture_meta;

enum { T_EXACT16, T_LPM, T_TERNARY, T_RANGE, T_OPTIONAL, T_WIDE, T_KEYLESS, N_TABLES };
enum { A_NOACTION, A_FWD, A_SET, A_WIDE, N_ACTIONS };

static uint32_t parse(ss_packet *p) {
    fixture_hdr *h = p->hdr;
    if (p->len < 16) return SS_ERR_PACKET_TOO_SHORT;
    memcpy(h->b, p->data, 16);
    h->valid = 1;
    p->parse_bits = 128;
    return SS_ERR_NO_ERROR;
}

static void ingress(ss_packet *p) {
    fixture_hdr *h = p->hdr;
    fixture_meta *m = p->meta;
    uint8_t *b = h->b;
    if (!h->valid) {
        p->sm.egress_spec = 2;
        return;
    }
    switch (b[0]) {
    case 0: p->sm.egress_spec = b[1]; break;
    case 1: p->sm.mcast_grp = (uint16_t)(b[1] << 8 | b[2]); break;
    case 2: ss_mark_to_drop(p); break;
    case 3:
        m->passes = 7;
        ss_clone(p, SS_CLONE_I2E, b[1], b[3] ? 0 : SS_NO_FIELD_LIST);
        p->sm.egress_spec = b[2];
        break;
    case 4:
        m->passes += 1;
        if (m->passes < b[1])
            ss_resubmit(p, 0);
        else
            p->sm.egress_spec = b[2];
        break;
    case 5:
        m->passes += 1;
        p->sm.egress_spec = b[2];
        break;
    case 6: {
        uint64_t values[2] = {b[1], (uint64_t)(b[2] << 8 | b[3])};
        ss_digest(p, 0, values);
        p->sm.egress_spec = 1;
        break;
    }
    case 7: {
        const ss_action_call *c = ss_table_lookup(p, T_EXACT16, b + 4);
        if (c->action == A_FWD)
            p->sm.egress_spec = (uint16_t)(c->data[0] & 0x1FF);
        else
            ss_mark_to_drop(p);
        break;
    }
    case 8: {
        ss_counter_count(p, 0, b[1]);
        ss_register *r = ss_register_at(p->sw, 1);
        uint64_t old = ss_register_read(r, b[1]);
        ss_register_write(r, b[1], old + b[2]);
        ss_put_be(b + 4, 4, old);
        p->sm.egress_spec = b[3];
        break;
    }
    case 9:
        m->passes = 9;
        p->sm.egress_spec = b[2];
        break;
    case 10: p->sm.egress_spec = b[2]; break;
    case 11: ss_packet_fail(p, "fixture command 11"); break;
    case 12: {
        ss_log_value v[3] = {{SS_LOG_UNSIGNED, 8, b[1]}, {SS_LOG_SIGNED, 8, b[2]}, {SS_LOG_BOOL, 1, b[3] != 0}};
        ss_log_msg(p, "u={} s={} b={}", 3, v);
        p->sm.egress_spec = 1;
        break;
    }
    case 13:
        ss_put_be(b + 4, 4, ss_random(p, b[1], b[2]));
        p->sm.egress_spec = 1;
        break;
    default: ss_mark_to_drop(p);
    }
}

static void egress(ss_packet *p) {
    fixture_hdr *h = p->hdr;
    fixture_meta *m = p->meta;
    uint8_t *b = h->b;
    if (!h->valid) return;
    if (b[0] == 5 && m->passes < b[1]) ss_recirculate(p, 0);
    if (b[0] == 9 && p->sm.instance_type == SS_PKT_NORMAL) ss_clone(p, SS_CLONE_E2E, b[1], 0);
    if (b[0] == 10) ss_truncate(p, b[1]);
    b[12] = (uint8_t)p->sm.instance_type;
    b[13] = (uint8_t)p->sm.egress_port;
    b[14] = (uint8_t)p->sm.egress_rid;
    b[15] = (uint8_t)m->passes;
}

static uint32_t deparse(ss_packet *p, uint8_t *out) {
    fixture_hdr *h = p->hdr;
    if (!h->valid) return 0;
    memcpy(out, h->b, 16);
    return 16;
}

static void copy_field_list(int32_t list, void *dst, const void *src) {
    if (list == 0) ((fixture_meta *)dst)->passes = ((const fixture_meta *)src)->passes;
}

static const ss_param_desc fwd_params[] = {{"port", 9}};
static const ss_param_desc set_params[] = {{"a", 32}, {"b", 48}};
static const ss_param_desc wide_params[] = {{"v", 128}};
static const ss_action_desc actions[] = {
    {"NoAction", 0, NULL},
    {"Fixture.fwd", 1, fwd_params},
    {"Fixture.set", 2, set_params},
    {"Fixture.wide", 1, wide_params},
};

static const ss_key_desc k_exact16[] = {{"hdr.k16", SS_MATCH_EXACT, 16}};
static const ss_key_desc k_lpm[] = {{"meta.vrf", SS_MATCH_EXACT, 8}, {"hdr.dst", SS_MATCH_LPM, 32}};
static const ss_key_desc k_ternary[] = {{"hdr.t16", SS_MATCH_TERNARY, 16}, {"hdr.e8", SS_MATCH_EXACT, 8}};
static const ss_key_desc k_range[] = {{"hdr.r12", SS_MATCH_RANGE, 12}, {"hdr.t9", SS_MATCH_TERNARY, 9}};
static const ss_key_desc k_optional[] = {{"hdr.o8", SS_MATCH_OPTIONAL, 8}, {"hdr.p20", SS_MATCH_LPM, 20}};
static const ss_key_desc k_wide[] = {{"hdr.mac", SS_MATCH_EXACT, 48}, {"hdr.v6", SS_MATCH_LPM, 128}};

static const ss_table_desc tables[] = {
    {"Fixture.exact16", 1, k_exact16, 4, 1},
    {"Fixture.lpm", 2, k_lpm, 1024, 0},
    {"Fixture.ternary", 2, k_ternary, 1024, 1},
    {"Fixture.range", 2, k_range, 1024, 0},
    {"Fixture.optional", 2, k_optional, 1024, 0},
    {"Fixture.wide", 2, k_wide, 1024, 0},
    {"Fixture.keyless", 0, NULL, 16, 0},
};

static const ss_register_desc registers[] = {
    {"Fixture.r8", 8, 16, 0},  {"Fixture.r32", 32, 16, 0}, {"Fixture.r48", 48, 4, 0},
    {"Fixture.r128", 128, 4, 0}, {"Fixture.s16", 16, 4, 1},
};

static const ss_counter_desc counters[] = {
    {"Fixture.c0", 8, SS_COUNTER_PACKETS_AND_BYTES},
    {"Fixture.c1", 4, SS_COUNTER_BYTES},
};

static const ss_param_desc learn_fields[] = {{"a", 8}, {"b", 16}};
static const ss_digest_desc digests[] = {{"learn_t", 2, learn_fields}};

const ss_program ss_program_descriptor = {
    .abi_version = SS_ABI_VERSION,
    .name = "fixture",
    .hdr_size = sizeof(fixture_hdr),
    .meta_size = sizeof(fixture_meta),
    .max_deparsed = 16,
    .parse = parse,
    .ingress = ingress,
    .egress = egress,
    .deparse = deparse,
    .copy_field_list = copy_field_list,
    .n_actions = N_ACTIONS,
    .actions = actions,
    .n_tables = N_TABLES,
    .tables = tables,
    .n_registers = 5,
    .registers = registers,
    .n_counters = 2,
    .counters = counters,
    .n_digests = 1,
    .digests = digests,
};

/* The header's inline bit helpers, exported for the tests (generated code calls them inline). */
__attribute__((visibility("default"))) uint64_t fixture_bits_get(const uint8_t *buf, uint64_t bitoff, uint32_t width) {
    return ss_bits_get(buf, bitoff, width);
}

__attribute__((visibility("default"))) void fixture_bits_put(uint8_t *buf, uint64_t bitoff, uint32_t width,
                                                             uint64_t value) {
    ss_bits_put(buf, bitoff, width, value);
}
