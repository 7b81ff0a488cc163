/* softswitch native runtime: the contract between a program's generated C and the runtime.
 *
 * A program's C back end emits one translation unit that includes this header and defines
 *
 *     const ss_program ss_program_descriptor = { ... };
 *
 * The runtime (softswitch/native/src) is compiled into the same shared object. It owns all switch
 * state (tables, registers, counters, the packet replication engine), runs the v1model pipeline around
 * the program's blocks (parser, verifyChecksum, ingress, egress, computeChecksum, deparser), does port
 * I/O and talks to Python. The generated code owns the layout of the per-packet headers and user
 * metadata and the logic of the blocks. softswitch/native/README.md documents every item below.
 *
 * Rules for generated code:
 *   - no global mutable state: several switches may run one program in one process; all state is
 *     reached through the packet (p->sw);
 *   - headers and metadata are plain data without pointers into themselves: the runtime copies them
 *     with memcpy (multicast replicas, clones) and starts each packet from all-zero bytes
 *     (every header invalid, every metadata field 0);
 *   - values of bit<N> fields stay in [0, 2^N) (mask on every write); standard_metadata follows the
 *     same rule;
 *   - a fatal run-time error (e.g. a header stack index out of range) calls ss_packet_fail(), which
 *     does not return: the packet is dropped and counted as "errors", like the Python runtime.
 */
#ifndef SS_PROGRAM_H
#define SS_PROGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SS_ABI_VERSION 5

/* ------------------------------------------------------------------ constants */

#define SS_DROP_PORT 511
#define SS_MAX_PORTS 512
#define SS_MAX_PASSES 17 /* a received frame may go through ingress at most this often */
#define SS_MAX_FRAME 65535

/* standard_metadata.instance_type, BMv2's numbers */
#define SS_PKT_NORMAL 0
#define SS_PKT_INGRESS_CLONE 1
#define SS_PKT_EGRESS_CLONE 2
#define SS_PKT_RECIRC 4
#define SS_PKT_REPLICATION 5
#define SS_PKT_RESUBMIT 6

/* error codes (BMv2's numbering of core.p4's errors; user errors follow) */
#define SS_ERR_NO_ERROR 0
#define SS_ERR_PACKET_TOO_SHORT 1
#define SS_ERR_NO_MATCH 2
#define SS_ERR_STACK_OUT_OF_BOUNDS 3
#define SS_ERR_HEADER_TOO_SHORT 4
#define SS_ERR_PARSER_TIMEOUT 5
#define SS_ERR_PARSER_INVALID_ARGUMENT 6

/* match kinds of table keys */
#define SS_MATCH_EXACT 0
#define SS_MATCH_LPM 1
#define SS_MATCH_TERNARY 2
#define SS_MATCH_RANGE 3
#define SS_MATCH_OPTIONAL 4

/* counter units (all units count packets and bytes, as the Python runtime does; the unit is what the
 * control plane reports) */
#define SS_COUNTER_PACKETS 0
#define SS_COUNTER_BYTES 1
#define SS_COUNTER_PACKETS_AND_BYTES 2

/* meter units (v1model MeterType) and colours (BMv2's numbers) */
#define SS_METER_PACKETS 0
#define SS_METER_BYTES 1
#define SS_GREEN 0
#define SS_YELLOW 1
#define SS_RED 2

/* clone types (v1model CloneType) */
#define SS_CLONE_I2E 0
#define SS_CLONE_E2E 1

/* no field list: resubmit(), recirculate(), clone() without preserved metadata */
#define SS_NO_FIELD_LIST (-1)

/* hash / checksum algorithms (v1model HashAlgorithm values softswitch implements) */
#define SS_HASH_CRC16 0    /* CRC-16/ARC: poly 0x8005 reflected, init 0, no final xor (BMv2's crc16) */
#define SS_HASH_CRC32 1    /* zlib's crc32 */
#define SS_HASH_CSUM16 2   /* RFC 1071 Internet checksum */
#define SS_HASH_XOR16 3    /* xor of the 16-bit big-endian words (odd length: zero byte appended) */
#define SS_HASH_IDENTITY 4 /* the bytes as a big-endian number (low 64 bits) */

/* ------------------------------------------------------------------ standard_metadata
 * v1model's standard_metadata_t (softswitch/include/v1model.p4), each field in the smallest unsigned C
 * type that holds it. */
typedef struct ss_standard_metadata {
    uint16_t ingress_port;             /* bit<9> */
    uint16_t egress_spec;              /* bit<9>; 511 drops */
    uint16_t egress_port;              /* bit<9> */
    uint16_t mcast_grp;                /* bit<16> */
    uint16_t egress_rid;               /* bit<16> */
    uint8_t checksum_error;            /* bit<1> */
    uint8_t priority;                  /* bit<3> */
    uint32_t instance_type;            /* bit<32> */
    uint32_t packet_length;            /* bit<32> */
    uint32_t enq_timestamp;            /* bit<32> */
    uint32_t enq_qdepth;               /* bit<19> */
    uint32_t deq_timedelta;            /* bit<32> */
    uint32_t deq_qdepth;               /* bit<19> */
    uint32_t parser_error;             /* error */
    uint64_t ingress_global_timestamp; /* bit<48>, microseconds since the switch started */
    uint64_t egress_global_timestamp;  /* bit<48> */
} ss_standard_metadata;

/* architectures (ss_program.arch) */
#define SS_ARCH_V1MODEL 0
#define SS_ARCH_TNA 1

/* TNA: what the traffic manager and the deparsers are told by a pass's intrinsic metadata (the generated
 * ingress deparser entry fills tm_*, each deparser entry drop_ctl, from the program's own structs) */
#define SS_TNA_RECIRCULATION_LOCAL_PORT 68 /* local port 68 of a pipe recirculates (68, 196, 324, 452) */
#define SS_TNA_LOCAL_PORT_MASK 0x7F
typedef struct ss_tna_result {
    uint16_t ucast_egress_port; /* ingress_intrinsic_metadata_for_tm_t.ucast_egress_port */
    uint8_t ucast_valid;        /* 1: ingress wrote ucast_egress_port (unwritten: no unicast copy) */
    uint8_t bypass_egress;
    uint16_t mcast_grp_a, mcast_grp_b;
    uint8_t drop_ctl;           /* the deparser metadata's drop_ctl of the pass that ran last */
} ss_tna_result;

/* ------------------------------------------------------------------ the packet being processed */
typedef struct ss_switch ss_switch; /* opaque: one running device */
typedef struct ss_worker ss_worker; /* opaque: one pipeline thread's scratch */

typedef struct ss_packet {
    ss_switch *sw;            /* the device: tables, registers, counters */
    void *hdr;                /* the program's headers struct (hdr_size bytes) */
    void *meta;               /* the program's user metadata struct (meta_size bytes) */
    ss_standard_metadata sm;  /* standard_metadata */
    const uint8_t *data;      /* this pass's frame (read-only) */
    uint32_t len;             /* its length in bytes */
    uint32_t parse_bits;      /* set by the parser: bits consumed (extracted or advanced) */
    const uint8_t *payload;   /* bytes after the parsed headers (for *_with_payload checksums) */
    uint32_t payload_len;
    /* side effects of externs in the block that runs now (the runtime resets and reads them) */
    uint8_t clone_set, resubmit_set, recirculate_set;
    uint8_t clone_type;
    uint32_t clone_session;
    int32_t clone_list, resubmit_list, recirculate_list;
    uint32_t truncate; /* truncate(length) in egress; 0 = none */
    ss_worker *worker;
    struct ss_register *registers; /* the switch's registers, by descriptor index (generated code reads
                                      and writes their elements directly) */
    ss_tna_result tna; /* TNA programs: set by the deparser entries */
} ss_packet;

/* ------------------------------------------------------------------ the program descriptor */
typedef struct ss_param_desc {
    const char *name; /* the parameter's P4Info name */
    uint32_t bitwidth;
} ss_param_desc;

typedef struct ss_action_desc {
    const char *name; /* fully-qualified P4Info name, e.g. "InaIngress.set_job" or "NoAction" */
    uint32_t n_params;
    const ss_param_desc *params; /* directionless (control-plane) parameters, in order */
} ss_action_desc;

typedef struct ss_key_desc {
    const char *name; /* P4Info name of the match field, e.g. "hdr.ipv4.dst_addr" */
    uint32_t match_kind; /* SS_MATCH_* */
    uint32_t bitwidth;
} ss_key_desc;

typedef struct ss_table_desc {
    const char *name;
    uint32_t n_keys;
    const ss_key_desc *keys;
    uint32_t size;             /* max entries (TableFull beyond) */
    uint32_t direct_counter;   /* 1: a direct_counter counts hits per entry */
} ss_table_desc;

typedef struct ss_register_desc {
    const char *name;
    uint32_t bitwidth; /* 1..128 */
    uint32_t size;
    uint32_t is_signed; /* int<W>: stored as its W-bit two's complement pattern */
    /* interleaving (0, 0: alone): a group of `group_count` consecutive registers of one size and element
     * size stores element i of all of them together (register `group_offset` of the group at
     * i * group_count + group_offset), so code that reads the same index of many registers (ina.p4's
     * lanes) touches a few cache lines instead of one per register */
    uint32_t group_offset;
    uint32_t group_count;
    uint64_t initial; /* every element's value when the switch is created or loaded (TNA's Register(size,
                         initial)); reset() sets 0, as the Python runtime does */
} ss_register_desc;

typedef struct ss_counter_desc {
    const char *name;
    uint32_t size;
    uint32_t unit; /* SS_COUNTER_* */
} ss_counter_desc;

typedef struct ss_digest_desc {
    const char *name; /* p4c names a digest after its struct type */
    uint32_t n_fields;
    const ss_param_desc *fields;
} ss_digest_desc;

typedef struct ss_value_set_desc {
    const char *name; /* a parser's value_set, e.g. "P.tagged_types" */
    uint32_t bitwidth; /* of its values (and of the select key it matches) */
    uint32_t size;     /* members at most */
} ss_value_set_desc;

typedef struct ss_meter_desc {
    const char *name;     /* a meter or direct_meter, e.g. "I.rate" */
    uint32_t size;        /* cells of an indexed meter; 0 for a direct meter */
    uint32_t unit;        /* SS_METER_* */
    int32_t direct_table; /* a direct meter: the index of the table whose entries it meters; -1: indexed */
} ss_meter_desc;

typedef struct ss_program {
    uint32_t abi_version; /* SS_ABI_VERSION */
    const char *name;
    uint32_t hdr_size;     /* bytes of the headers struct */
    uint32_t meta_size;    /* bytes of the user metadata struct */
    uint32_t max_deparsed; /* an upper bound of the bytes the deparser emits (headers only) */

    /* blocks; any may be NULL (does nothing; a NULL parser consumes nothing) */
    uint32_t (*parse)(ss_packet *p);  /* returns an SS_ERR_* code, sets p->parse_bits */
    void (*verify_checksum)(ss_packet *p);
    void (*ingress)(ss_packet *p);
    void (*egress)(ss_packet *p);
    void (*compute_checksum)(ss_packet *p);
    uint32_t (*deparse)(ss_packet *p, uint8_t *out); /* writes the headers to out, returns bytes */

    /* copy the fields of field list `list` (an @field_list index, or an id the back end gives to a
     * resubmit/recirculate/clone3 data list) from src to dst user metadata; NULL: no field lists */
    void (*copy_field_list)(int32_t list, void *dst_meta, const void *src_meta);

    uint32_t n_actions;
    const ss_action_desc *actions; /* action ids are indices into this array */
    uint32_t n_tables;
    const ss_table_desc *tables;
    uint32_t n_registers;
    const ss_register_desc *registers;
    uint32_t n_counters;
    const ss_counter_desc *counters;
    uint32_t n_digests;
    const ss_digest_desc *digests;
    uint32_t n_value_sets;
    const ss_value_set_desc *value_sets; /* value set ids are indices here */
    uint32_t n_meters;
    const ss_meter_desc *meters; /* meter ids are indices here (indexed meters, then direct meters) */

    /* The architecture: SS_ARCH_V1MODEL (the fields above) or SS_ARCH_TNA. A TNA program's hdr is its
     * ingress context (ingress headers, metadata and intrinsic metadata), meta its egress context;
     * parse/ingress/deparse are the ingress parser, control and deparser, egress_parse/egress/
     * egress_deparse the egress ones; verify_checksum, compute_checksum and copy_field_list are NULL.
     * A parser reads `tna_ingress_prefix` (`tna_egress_prefix`) bytes of intrinsic metadata before the
     * frame, which write_tna_prefix writes from p->sm (ingress: ingress_port, ingress_global_timestamp
     * in ns; egress: egress_port, egress_rid, packet_length); the deparser entries set p->tna. */
    uint32_t arch;
    uint32_t tna_ingress_prefix, tna_egress_prefix;
    void (*write_tna_prefix)(const ss_packet *p, uint32_t egress, uint8_t *out);
    uint32_t (*egress_parse)(ss_packet *p);
    uint32_t (*egress_deparse)(ss_packet *p, uint8_t *out);
} ss_program;

/* ------------------------------------------------------------------ state the generated code reads */

/* A register: `size` elements of `elem_bytes` bytes (1, 2, 4, 8 or 16: the smallest that holds the
 * width; 16 = unsigned __int128), native byte order, element i at data + i * stride (stride =
 * elem_bytes * the group's register count: registers of a group are interleaved, see ss_register_desc). */
typedef struct ss_register {
    uint8_t *data;
    uint32_t size;
    uint32_t bitwidth;
    uint32_t elem_bytes;
    uint32_t is_signed;
    const char *name;
    uint32_t stride;     /* bytes from one element to the next */
    uint32_t owns_data;  /* 1: data is the group's allocation (the group's first register) */
} ss_register;

/* What a table lookup returns: the action to run and its action data. Action data is an array of
 * 64-bit words: each parameter takes ceil(bitwidth / 64) words (least significant word first), in
 * parameter order. */
typedef struct ss_action_call {
    uint32_t action;      /* index into ss_program.actions */
    uint32_t hit;         /* 1: an entry matched; 0: the default action */
    const uint64_t *data; /* action data words */
} ss_action_call;

/* ------------------------------------------------------------------ runtime functions */

/* Tables. `key` holds the key fields in declaration order, each as ceil(bitwidth / 8) big-endian
 * bytes (ss_key_bytes() of the table gives the total). A hit counts the entry's direct counter. */
const ss_action_call *ss_table_lookup(ss_packet *p, uint32_t table, const uint8_t *key);

/* Tables with an action selector (`implementation = action_selector(...)`): an entry that points at a
 * group of members returns a call whose action is SS_ACTION_GROUP; ss_group_select gives the member the
 * selector picks for `hash` (the selector's algorithm over the selector keys' bits): member number
 * hash % n of the group's n members (BMv2's order: by member handle, a member of weight w w times). An
 * empty group gives the table's default action (as a miss). */
#define SS_ACTION_GROUP 0xFFFFFFFFu
const ss_action_call *ss_group_select(ss_packet *p, uint32_t table, const ss_action_call *group, uint64_t hash);
uint32_t ss_key_bytes(const ss_switch *sw, uint32_t table);

/* A parser value set: whether `key` (ceil(bitwidth / 8) big-endian bytes) matches a member, i.e.
 * key & mask == value for one of the (value, mask) pairs the control plane added. */
int ss_value_set_match(ss_packet *p, uint32_t value_set, const uint8_t *key);

/* Registers and counters (index out of bounds: read 0, write ignored, count ignored). */
ss_register *ss_register_at(ss_switch *sw, uint32_t reg);
void ss_counter_count(ss_packet *p, uint32_t counter, uint64_t index);

/* Meters: RFC 2698 two-rate three-colour marking, colour-blind, per cell (BMv2's meters); a cell the
 * control plane has not configured marks every packet SS_GREEN. ss_meter_execute is
 * `meter.execute_meter(index, result)` (index out of bounds: GREEN); a table with a direct meter calls
 * ss_direct_meter_mark after its lookup (`hit`: the entry's call when an entry matched, else NULL) and
 * `direct_meter.read(result)` is ss_direct_meter_read. */
uint32_t ss_meter_execute(ss_packet *p, uint32_t meter, uint64_t index);
void ss_direct_meter_mark(ss_packet *p, uint32_t meter, const ss_action_call *hit);
uint32_t ss_direct_meter_read(ss_packet *p, uint32_t meter);

/* v1model externs that change what happens to the packet after the current block */
void ss_mark_to_drop(ss_packet *p);
void ss_clone(ss_packet *p, uint32_t clone_type, uint32_t session, int32_t field_list);
void ss_resubmit(ss_packet *p, int32_t field_list);
void ss_recirculate(ss_packet *p, int32_t field_list);
void ss_truncate(ss_packet *p, uint32_t length);
/* digest(receiver, data): `values` holds the digest struct's fields as words (the action data layout) */
void ss_digest(ss_packet *p, uint32_t digest, const uint64_t *values);

/* random(out, lo, hi): uniform in [lo, hi]; lo when lo > hi */
uint64_t ss_random(ss_packet *p, uint64_t lo, uint64_t hi);

/* log_msg(fmt, {values}): each "{}" in fmt takes the next value, printed in decimal (kind
 * SS_LOG_SIGNED: as a signed number of `bitwidth` bits; SS_LOG_BOOL: true/false). Only formats
 * when the switch has a log. */
#define SS_LOG_UNSIGNED 0
#define SS_LOG_SIGNED 1
#define SS_LOG_BOOL 2
typedef struct ss_log_value {
    uint32_t kind;
    uint32_t bitwidth;
    uint64_t value;
} ss_log_value;
void ss_log_msg(ss_packet *p, const char *fmt, uint32_t n, const ss_log_value *values);
void ss_assert_failed(ss_packet *p, const char *where);
int ss_log_enabled(const ss_packet *p);

/* A fatal error: drop the packet, count "errors", log `message`. Does not return. */
__attribute__((noreturn)) void ss_packet_fail(ss_packet *p, const char *message);
/* a header stack index out of range outside a parser: BMv2 aborts there, softswitch drops the packet */
__attribute__((noreturn)) void ss_stack_index_fail(ss_packet *p, uint64_t index, uint32_t size);

/* Hashes and checksums. A field list is serialised MSB first, zero-padded at the end to whole bytes
 * (ss_bits_put helps); a checksum "with payload" continues over p->payload. */
typedef struct ss_hash_state {
    uint32_t algo;
    uint32_t odd;       /* csum16/xor16: a byte waits for its pair */
    uint64_t acc;
    uint8_t pending;
} ss_hash_state;
void ss_hash_init(ss_hash_state *h, uint32_t algo);
void ss_hash_update(ss_hash_state *h, const uint8_t *data, size_t len);
uint64_t ss_hash_final(ss_hash_state *h);
uint64_t ss_hash_bytes(uint32_t algo, const uint8_t *data, size_t len);
/* v1model hash(): base + h % max (max == 0: base + h), truncated to `width` bits */
uint64_t ss_hash_extern(uint32_t algo, const uint8_t *data, size_t len, uint64_t base, uint64_t max, uint32_t width);

/* ------------------------------------------------------------------ inline helpers */

static inline uint64_t ss_mask64(uint32_t width) { return width >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1); }

/* `width` (<= 64) bits at bit offset `bitoff` (MSB first) of buf; the bytes must exist */
static inline uint64_t ss_bits_get(const uint8_t *buf, uint64_t bitoff, uint32_t width) {
    uint64_t v = 0;
    uint64_t first = bitoff >> 3, last = (bitoff + width + 7) >> 3;
    uint32_t extra = (uint32_t)((last << 3) - (bitoff + width));
    if (last - first <= 8) {
        for (uint64_t i = first; i < last; i++) v = (v << 8) | buf[i];
        return (v >> extra) & ss_mask64(width);
    }
    /* 9 bytes: the field straddles one more byte than a uint64_t holds */
    unsigned __int128 w = 0;
    for (uint64_t i = first; i < last; i++) w = (w << 8) | buf[i];
    return (uint64_t)(w >> extra) & ss_mask64(width);
}

/* stores `width` (<= 64) bits of v at bit offset `bitoff` (MSB first), other bits unchanged */
static inline void ss_bits_put(uint8_t *buf, uint64_t bitoff, uint32_t width, uint64_t v) {
    v &= ss_mask64(width);
    while (width) {
        uint64_t byte = bitoff >> 3;
        uint32_t used = (uint32_t)(bitoff & 7), room = 8 - used;
        uint32_t take = width < room ? width : room;
        uint32_t shift = room - take;
        uint8_t m = (uint8_t)(((1u << take) - 1) << shift);
        uint8_t bits = (uint8_t)((v >> (width - take)) << shift);
        buf[byte] = (uint8_t)((buf[byte] & ~m) | (bits & m));
        width -= take;
        bitoff += take;
    }
}

/* big-endian stores of key bytes */
static inline void ss_put_be(uint8_t *p, uint32_t nbytes, uint64_t v) {
    for (uint32_t i = nbytes; i-- > 0; v >>= 8) p[i] = (uint8_t)v;
}

/* element `index` of a register (in bounds) */
static inline void *ss_register_element(const ss_register *r, uint64_t index) {
    return r->data + index * r->stride;
}

static inline uint64_t ss_register_read(const ss_register *r, uint64_t index) {
    if (index >= r->size) return 0;
    const void *e = ss_register_element(r, index);
    switch (r->elem_bytes) {
    case 1: return *(const uint8_t *)e;
    case 2: return *(const uint16_t *)e;
    case 4: return *(const uint32_t *)e;
    default: return *(const uint64_t *)e; /* 16: the low word */
    }
}

static inline void ss_register_write(ss_register *r, uint64_t index, uint64_t value) {
    if (index >= r->size) return;
    value &= ss_mask64(r->bitwidth);
    void *e = ss_register_element(r, index);
    switch (r->elem_bytes) {
    case 1: *(uint8_t *)e = (uint8_t)value; break;
    case 2: *(uint16_t *)e = (uint16_t)value; break;
    case 4: *(uint32_t *)e = (uint32_t)value; break;
    case 8: *(uint64_t *)e = value; break;
    default: *(unsigned __int128 *)e = value; break;
    }
}

/* registers of 65..128 bits */
static inline unsigned __int128 ss_register_read128(const ss_register *r, uint64_t index) {
    if (index >= r->size) return 0;
    if (r->elem_bytes == 16) return *(const unsigned __int128 *)ss_register_element(r, index);
    return ss_register_read(r, index);
}

static inline void ss_register_write128(ss_register *r, uint64_t index, unsigned __int128 value) {
    if (index >= r->size) return;
    if (r->elem_bytes != 16) {
        ss_register_write(r, index, (uint64_t)value);
        return;
    }
    if (r->bitwidth < 128) value &= (((unsigned __int128)1) << r->bitwidth) - 1;
    *(unsigned __int128 *)ss_register_element(r, index) = value;
}

#endif
