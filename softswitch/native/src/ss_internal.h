/* softswitch native runtime: internal structures (not for generated code). */
#ifndef SS_INTERNAL_H
#define SS_INTERNAL_H

#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>

#include "ss_program.h"

#define SS_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ errors of the control API
 * Control functions return 0 or one of these; ss_last_error() gives the message. */
#define SS_OK 0
#define SS_E_EXISTS 1
#define SS_E_NOT_FOUND 2
#define SS_E_FULL 3
#define SS_E_INVALID 4
#define SS_E_NOMEM 5
#define SS_E_IO 6

/* ------------------------------------------------------------------ hash map on byte keys
 * Open addressing, linear probing, backward-shift deletion; values are pointers to objects that
 * hold their own key bytes (the map stores the hash and the pointer). */
typedef struct ss_map_slot {
    uint64_t hash; /* 0 = empty (hashes are forced non-zero) */
    void *value;
} ss_map_slot;

typedef const uint8_t *(*ss_map_key_fn)(const void *value);

typedef struct ss_map {
    ss_map_slot *slots;
    uint64_t mask; /* capacity - 1 */
    uint64_t count;
    uint32_t key_len;
    ss_map_key_fn key_of;
} ss_map;

uint64_t ss_hash_key(const uint8_t *key, uint32_t len);
int ss_map_init(ss_map *m, uint32_t key_len, ss_map_key_fn key_of);
void ss_map_free(ss_map *m);
void *ss_map_get(const ss_map *m, const uint8_t *key, uint64_t hash);
int ss_map_put(ss_map *m, void *value, uint64_t hash); /* key must not be present */
void *ss_map_remove(ss_map *m, const uint8_t *key, uint64_t hash);

/* ------------------------------------------------------------------ meters (ss_meter.c) */
typedef struct ss_meter_cell {
    double cir, cburst, pir, pburst; /* rates in units per second, bursts in units */
    double committed, peak;          /* tokens in the two buckets */
    double last;                     /* when the buckets were last filled (seconds) */
    uint32_t configured;
} ss_meter_cell;

typedef struct ss_meter {
    const ss_meter_desc *desc;
    ss_meter_cell *cells; /* indexed meters: desc->size cells */
    uint32_t color;       /* direct meters: the colour the table's last lookup marked */
} ss_meter;

/* ------------------------------------------------------------------ action profiles (ss_profile.c)
 * The members and groups of an action profile/selector. An entry of a table it implements points at a
 * member's or a group's call (ss_entry.run), read at lookup as BMv2 resolves members at lookup: a
 * change to a member or a group is one write under sw->lock, whatever number of entries use it. A member
 * and a group keep their address while they exist (a modify swaps the member's data, a group's change
 * its member array), and cannot be deleted while an entry (or, for a member, a group) points at it. */
typedef struct ss_member {
    ss_action_call call; /* action + data (call.data: an allocation of its own, swapped by a modify) */
    uint64_t entries;    /* table entries that point at it */
    uint64_t slots;      /* places in groups' member arrays that point at it */
    uint8_t key[8];      /* the map key: the member id (int64, native byte order) */
} ss_member;

typedef struct ss_group {
    ss_action_call call; /* action SS_ACTION_GROUP: what a lookup of an entry that points here returns */
    uint32_t n;          /* members in selection order (a member of weight w w times) */
    ss_member **members;
    uint64_t entries;    /* table entries that point at it */
    uint8_t key[8];      /* the map key: the group id */
} ss_group;

typedef struct ss_profile {
    ss_map members, groups;
} ss_profile;

/* ss_ctl_table_read's action of an entry that points at a member (one that points at a group: SS_ACTION_GROUP) */
#define SS_ACTION_MEMBER 0xFFFFFFFEu

/* The member or group `id` of profile `profile` (the caller holds sw->lock), or NULL with the error set. */
ss_member *ss_profile_member(ss_switch *sw, uint32_t profile, int64_t id);
ss_group *ss_profile_group(ss_switch *sw, uint32_t profile, int64_t id);
void ss_profiles_free(ss_switch *sw);

/* ------------------------------------------------------------------ tables */
typedef struct ss_entry {
    struct ss_entry *prev, *next; /* insertion order (read-back order, tie-break order) */
    uint64_t seq;                 /* insertion number: lower wins a priority tie */
    int64_t priority;             /* 0 for exact/lpm tables */
    uint64_t packets, bytes;      /* direct counter */
    ss_action_call call;          /* action + data (call.data points into this block) */
    const ss_action_call *run;    /* what a lookup returns: &call, or a profile member's or group's call */
    ss_member *member;            /* a table with an action profile: the member or group `run` is of */
    ss_group *group;
    uint8_t *spec;       /* 2 * key_bytes: values (low for range) then masks (high for range) */
    uint8_t *present;    /* n_keys bytes: 1 where the entry named the field */
    uint8_t *index_key;  /* the map key (see ss_table.c) */
    uint8_t *cmp_value;  /* scan tables: value & mask, range fields zero (cmp_bytes) */
    uint8_t *cmp_mask;
    uint32_t n_words;    /* action data words */
    ss_meter_cell *meter_cell; /* the table's direct meter cell of this entry (NULL: not configured) */
} ss_entry;

typedef struct ss_table {
    const ss_table_desc *desc;
    const ss_program *prog;
    uint32_t n_keys;
    uint32_t key_bytes;       /* sum of ceil(width / 8) */
    uint32_t *key_offset;     /* byte offset of each key field */
    uint32_t *key_width;      /* bytes of each key field */
    uint32_t mode;            /* SS_MODE_* */
    int lpm_field;            /* lpm mode: the prefix-matched field */
    uint32_t index_key_len;
    uint32_t cmp_bytes;       /* scan: key_bytes rounded up to 8 */
    uint32_t n_range;
    uint32_t *range_fields;
    ss_map map;               /* identity / exact / lpm index */
    ss_entry *first, *last;   /* insertion order */
    uint64_t count;
    uint64_t next_seq;
    ss_entry **sorted;        /* scan mode: by (priority desc, seq asc) */
    uint64_t sorted_cap;
    uint32_t *lpm_len_count;  /* lpm mode: entries per prefix length (0..width) */
    uint32_t *lpm_lens;       /* active prefix lengths, longest first */
    uint32_t n_lpm_lens;
    ss_action_call default_call;
    uint64_t *default_data;   /* room for the largest action's data */
    uint8_t *scratch;         /* lookup scratch (one pipeline thread at a time under the lock) */
} ss_table;

#define SS_MODE_NONE 0
#define SS_MODE_EXACT 1
#define SS_MODE_LPM 2
#define SS_MODE_SCAN 3

int ss_table_init(ss_table *t, const ss_program *prog, const ss_table_desc *desc);
/* the entry with this match spec and priority (the caller holds sw->lock), or NULL */
ss_entry *ss_table_find_entry(ss_table *t, const uint8_t *spec, int64_t priority);
void ss_table_free(ss_table *t);
uint32_t ss_action_words(const ss_program *prog, uint32_t action);

/* ------------------------------------------------------------------ value sets */
typedef struct ss_value_set {
    const ss_value_set_desc *desc;
    uint32_t key_bytes;
    uint32_t n;       /* members */
    uint8_t *members; /* n x (value, mask), key_bytes each */
} ss_value_set;

/* ------------------------------------------------------------------ counters, PRE */
typedef struct ss_counter {
    uint64_t *packets, *bytes;
    uint32_t size;
    const ss_counter_desc *desc;
} ss_counter;

typedef struct ss_replica {
    uint16_t port;
    uint16_t rid;
} ss_replica;

typedef struct ss_replica_list {
    uint64_t id;
    uint64_t seq; /* creation order, for read-back */
    uint32_t n;
    uint32_t truncate; /* clone sessions */
    ss_replica r[];
} ss_replica_list;

typedef struct ss_pre {
    ss_replica_list *groups[65536]; /* by group id (1..65535) */
    ss_replica_list **sessions;     /* sorted by id */
    uint32_t n_sessions, cap_sessions;
    uint64_t next_seq;
} ss_pre;

ss_replica_list *ss_pre_session(const ss_pre *pre, uint64_t id);

/* ------------------------------------------------------------------ records: outputs and events
 * A record is a header followed by `len` bytes, padded to 8. Kinds: */
#define SS_REC_FRAME 1     /* port, frame bytes */
#define SS_REC_PACKET_IN 2 /* frame for the cpu port, to on_packet_in */
#define SS_REC_DIGEST 3    /* aux = digest index, bytes = field words */
#define SS_REC_LOG 4       /* text */
typedef struct ss_record {
    uint32_t kind;
    int32_t port;
    uint32_t len;
    uint32_t aux;
    uint32_t input; /* index of the input frame in its batch */
    uint32_t pad;
} ss_record;

typedef struct ss_bytes {
    uint8_t *data;
    size_t len, cap;
} ss_bytes;

int ss_bytes_reserve(ss_bytes *b, size_t extra);
void ss_bytes_free(ss_bytes *b);

/* ------------------------------------------------------------------ statistics (sw.stats) */
enum {
    SS_STAT_RECEIVED,
    SS_STAT_TRANSMITTED,
    SS_STAT_DROPPED,
    SS_STAT_PARSER_ERRORS,
    SS_STAT_MALFORMED,
    SS_STAT_ERRORS,
    SS_STAT_RESUBMITTED,
    SS_STAT_RECIRCULATED,
    SS_STAT_CLONED,
    SS_STAT_REPLICATED,
    SS_STAT_TO_CPU,
    SS_STAT_FROM_CPU,
    SS_STAT_DIGESTS,
    SS_STAT_LOOP_LIMIT_DROPS,
    SS_STAT_BUFFER_LIMIT_DROPS,
    SS_STAT_STACK_INDEX_DROPS,
    SS_STAT_COUNT
};

/* ------------------------------------------------------------------ pipeline scratch */
typedef struct ss_job {
    const uint8_t *data;
    uint32_t len;
    uint16_t port;
    uint8_t itype;
    int32_t list;       /* field list to restore, or SS_NO_FIELD_LIST */
    const void *saved;  /* user metadata the list is restored from (malloc'd) */
    uint8_t *owned;     /* a recirculated frame's bytes (malloc'd) */
} ss_job;

#define SS_MAX_CONTEXTS 24

/* Where a worker's outputs go: records in `out` (sync API) or a port I/O sink. */
typedef void (*ss_emit_fn)(ss_worker *w, uint16_t port, const uint8_t *data, uint32_t len);

struct ss_worker {
    ss_switch *sw;
    ss_job *jobs;
    uint32_t n_jobs, cap_jobs;
    uint8_t *contexts;   /* SS_MAX_CONTEXTS packet contexts, used as a stack */
    uint32_t ctx_stride;
    uint32_t ctx_top;
    uint8_t *deparse_buf;
    uint32_t deparse_cap;
    ss_bytes out;        /* records */
    ss_bytes digests;    /* digest records of the ingress pass that runs now */
    uint32_t input;      /* index of the frame being processed */
    int discard_frames;  /* count outputs but do not keep frame records */
    ss_emit_fn emit;     /* NULL: records in out */
    void *emit_ctx;
    jmp_buf *fail_jmp;
    const char *fail_message;
    uint32_t fail_stat;  /* nonzero: the failure is a BMv2 limit, counted in this stat (fail_text says which) */
    char fail_text[128];
    uint64_t outputs;    /* frames emitted since the last reset */
    uint64_t now_us;     /* the timestamp of the frame being processed (µs since the switch started) */
    uint64_t now_ns;     /* the same in ns (TNA's timestamps) */
    uint8_t *tna_in;     /* TNA: intrinsic metadata + the received frame, as the ingress parser reads it */
    uint8_t *tna_frame;  /* TNA: the frame the ingress deparser made (the traffic manager's copies share it) */
    uint8_t *tna_egress_in; /* TNA: intrinsic metadata + a copy's frame, as the egress parser reads it */

    uint32_t buffer_limit; /* the longest frame BMv2's packet buffer holds for this one (+ headroom) */
};

int ss_worker_init(ss_worker *w, ss_switch *sw);
void ss_worker_free(ss_worker *w);
/* reads the clock for the frames processed next (one read per batch) */
void ss_worker_clock(ss_worker *w);
/* runs one received frame through the pipeline (the caller holds sw->lock) */
void ss_worker_process(ss_worker *w, uint16_t port, const uint8_t *data, uint32_t len);
/* the pipeline's pieces ss_tna.c shares with the v1model pipeline of ss_pipeline.c */
ss_packet *ss_ctx_push(ss_worker *w);
void ss_ctx_pop(ss_worker *w);
int ss_add_job(ss_worker *w, const uint8_t *data, uint32_t len, uint16_t port, uint8_t itype, int32_t list,
               const void *meta);
void ss_emit(ss_worker *w, uint16_t port, const uint8_t *data, uint32_t len);
/* TNA (ss_tna.c): the buffers of a worker, and one pass of a job through the six blocks */
int ss_tna_worker_init(ss_worker *w);
void ss_tna_worker_free(ss_worker *w);
void ss_tna_run_pass(ss_worker *w, const ss_job *job);
int ss_record_add(ss_bytes *out, uint32_t kind, int32_t port, uint32_t aux, uint32_t input, const void *data,
                  uint32_t len);

/* ------------------------------------------------------------------ event queue (to Python) */
typedef struct ss_events {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    ss_bytes buf;          /* records not yet taken */
    size_t start;          /* taken bytes at the front */
    size_t limit;          /* bytes kept at most; beyond, events are dropped and counted */
    uint64_t dropped;
    int closed;
} ss_events;

void ss_events_push(ss_events *q, const ss_bytes *records, size_t from);

/* ------------------------------------------------------------------ the switch */
struct ss_switch {
    const ss_program *prog;
    pthread_mutex_t lock; /* pipeline batches and control writes */
    ss_table *tables;
    ss_register *registers;
    ss_counter *counters;
    ss_value_set *value_sets;
    ss_meter *meters;
    ss_pre *pre;
    ss_profile **profiles;     /* action profiles, numbered by ss_ctl_profile_add */
    uint32_t n_profiles;
    uint64_t stats[SS_STAT_COUNT];
    int32_t cpu_port;          /* -1: none */
    int packet_in_enabled;     /* outputs to cpu_port become packet-in records */
    int log_enabled;
    uint32_t headroom; /* bytes a deparser may add to a received frame (ss_switch_set_headroom) */
    uint64_t assert_failures;
    uint64_t t0_ns;
    int meter_clock_set;       /* 1: meters read meter_clock (tests) instead of the monotonic clock */
    double meter_clock;        /* seconds */
    uint64_t rng[2];
    ss_worker sync;            /* the worker of calls from Python */
    ss_worker io_worker;       /* the worker of the port I/O thread */
    ss_events *events;         /* packet-ins, digests and log lines of the I/O thread (may be NULL) */
    /* the depth of the queue behind each egress port (what its real queue holds: the kernel qdisc in front
       of a veth, a modelled link), set from outside in the unit egress reads as enq_qdepth / deq_qdepth:
       packets for v1model, 80-byte cells for TNA (softswitch.switch.queue_depth_reading) */
    uint32_t queue_depth[SS_MAX_PORTS];
};

uint64_t ss_now_ns(void);

/* The ports' qdisc lengths, read over rtnetlink by the I/O thread (ss_qdepth.c) */
typedef struct ss_qdepth {
    int fd; /* -1: not reading */
    uint32_t n;
    uint16_t ports[SS_MAX_PORTS]; /* request i asks for the qdisc of port ports[i] */
    void *requests;
    uint8_t *answers;
    struct mmsghdr *msgs;
    struct iovec *iov;
    uint32_t seq;
    uint64_t interval_ns, last_ns;
    uint32_t cell_bytes; /* a TNA program's queue cell (enq_qdepth counts cells); 0: count frames */
    uint64_t samples, errors;
} ss_qdepth;
#define SS_QDEPTH_MAX 0x7FFFFu /* enq_qdepth / deq_qdepth are bit<19> */
int ss_qdepth_open(ss_qdepth *q, const unsigned *ifindexes, const uint16_t *ports, uint32_t n, uint64_t interval_ns,
                   uint32_t cell_bytes);
void ss_qdepth_close(ss_qdepth *q);
void ss_qdepth_maybe_read(ss_qdepth *q, ss_switch *sw, uint64_t now);

void ss_log_line(ss_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ss_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
