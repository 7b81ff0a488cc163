/* One running device: creation from a program descriptor, statistics, errors, the event queue to
 * Python, registers, counters and the packet replication engine's configuration. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ss_internal.h"

extern const ss_program ss_program_descriptor;

/* The descriptor of the program compiled into this library. */
SS_EXPORT const ss_program *ss_library_program(void) { return &ss_program_descriptor; }

SS_EXPORT uint32_t ss_abi_version(void) { return SS_ABI_VERSION; }

/* ------------------------------------------------------------------ errors */

static __thread char last_error[512];

void ss_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

/* The message of the last failed control call on this thread. */
SS_EXPORT const char *ss_last_error(void) { return last_error; }

SS_EXPORT void ss_free(void *p) { free(p); }

uint64_t ss_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ byte buffers and records */

int ss_bytes_reserve(ss_bytes *b, size_t extra) {
    if (b->len + extra <= b->cap) return SS_OK;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) return SS_E_NOMEM;
    b->data = d;
    b->cap = cap;
    return SS_OK;
}

void ss_bytes_free(ss_bytes *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int ss_record_add(ss_bytes *out, uint32_t kind, int32_t port, uint32_t aux, uint32_t input, const void *data,
                  uint32_t len) {
    size_t padded = ((size_t)len + 7) & ~(size_t)7;
    if (ss_bytes_reserve(out, sizeof(ss_record) + padded)) return SS_E_NOMEM;
    ss_record *r = (ss_record *)(void *)(out->data + out->len);
    r->kind = kind;
    r->port = port;
    r->len = len;
    r->aux = aux;
    r->input = input;
    r->pad = 0;
    if (len) memcpy(r + 1, data, len);
    if (padded > len) memset((uint8_t *)(r + 1) + len, 0, padded - len);
    out->len += sizeof(ss_record) + padded;
    return SS_OK;
}

void ss_log_line(ss_worker *w, const char *fmt, ...) {
    if (!w->sw->log_enabled) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof text) n = sizeof text - 1;
    ss_record_add(&w->out, SS_REC_LOG, -1, 0, w->input, text, (uint32_t)n);
}

/* ------------------------------------------------------------------ event queue */

/* A queue that outlives the switches attached to it (ss_switch_configure). */
SS_EXPORT ss_events *ss_events_create(void) {
    ss_events *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->ready, NULL);
    memset(&q->buf, 0, sizeof q->buf);
    q->start = 0;
    q->limit = 64u << 20;
    q->dropped = 0;
    q->closed = 0;
    return q;
}

SS_EXPORT void ss_events_destroy(ss_events *q) {
    if (!q) return;
    ss_bytes_free(&q->buf);
    free(q);
}

/* Appends the records of `records` from byte offset `from` on (packet-in, digest and log records;
 * frame records are skipped). */
void ss_events_push(ss_events *q, const ss_bytes *records, size_t from) {
    pthread_mutex_lock(&q->lock);
    int added = 0;
    for (size_t off = from; off < records->len;) {
        const ss_record *r = (const ss_record *)(const void *)(records->data + off);
        size_t size = sizeof(ss_record) + (((size_t)r->len + 7) & ~(size_t)7);
        off += size;
        if (r->kind == SS_REC_FRAME) continue;
        if (q->buf.len - q->start + size > q->limit || ss_bytes_reserve(&q->buf, size)) {
            q->dropped++;
            continue;
        }
        memcpy(q->buf.data + q->buf.len, r, size);
        q->buf.len += size;
        added = 1;
    }
    if (added) pthread_cond_signal(&q->ready);
    pthread_mutex_unlock(&q->lock);
}

/* Waits up to timeout_ms for events; hands the caller a malloc'd buffer of records (free it with
 * ss_free). Returns its length, 0 after the timeout, -1 when the queue is closed and empty. The caller
 * (a Python thread) does not hold the GIL while this waits. */
SS_EXPORT int64_t ss_events_wait(ss_events *q, int64_t timeout_ms, uint8_t **records) {
    *records = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->buf.len == q->start && !q->closed && timeout_ms != 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (timeout_ms < 0) timeout_ms = 1000L * 3600 * 24;
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (q->buf.len == q->start && !q->closed)
            if (pthread_cond_timedwait(&q->ready, &q->lock, &ts)) break;
    }
    int64_t n = (int64_t)(q->buf.len - q->start);
    if (n == 0) {
        n = q->closed ? -1 : 0;
    } else if (q->start == 0) {
        *records = q->buf.data;
        memset(&q->buf, 0, sizeof q->buf);
    } else {
        *records = malloc((size_t)n);
        if (*records) memcpy(*records, q->buf.data + q->start, (size_t)n);
        q->buf.len = 0;
        q->start = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return n;
}

/* Wakes every waiter; further waits return -1 once the queue is empty. */
SS_EXPORT void ss_events_close(ss_events *q) {
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->lock);
}

SS_EXPORT uint64_t ss_events_dropped(ss_events *q) {
    pthread_mutex_lock(&q->lock);
    uint64_t n = q->dropped;
    pthread_mutex_unlock(&q->lock);
    return n;
}

/* ------------------------------------------------------------------ create / destroy */

static void switch_free(ss_switch *sw) {
    if (!sw) return;
    if (sw->tables)
        for (uint32_t i = 0; i < sw->prog->n_tables; i++) ss_table_free(&sw->tables[i]);
    free(sw->tables);
    ss_profiles_free(sw); /* after the tables: their entries point into the profiles */
    if (sw->registers)
        for (uint32_t i = 0; i < sw->prog->n_registers; i++)
            if (sw->registers[i].owns_data) free(sw->registers[i].data);
    free(sw->registers);
    if (sw->counters)
        for (uint32_t i = 0; i < sw->prog->n_counters; i++) {
            free(sw->counters[i].packets);
            free(sw->counters[i].bytes);
        }
    free(sw->counters);
    if (sw->value_sets)
        for (uint32_t i = 0; i < sw->prog->n_value_sets; i++) free(sw->value_sets[i].members);
    free(sw->value_sets);
    if (sw->meters)
        for (uint32_t i = 0; i < sw->prog->n_meters; i++) free(sw->meters[i].cells);
    free(sw->meters);
    if (sw->pre) {
        for (uint32_t g = 0; g < 65536; g++) free(sw->pre->groups[g]);
        for (uint32_t s = 0; s < sw->pre->n_sessions; s++) free(sw->pre->sessions[s]);
        free(sw->pre->sessions);
        free(sw->pre);
    }
    ss_worker_free(&sw->sync);
    ss_worker_free(&sw->io_worker);
    free(sw);
}

static uint32_t register_elem_bytes(uint32_t width) {
    if (width <= 8) return 1;
    if (width <= 16) return 2;
    if (width <= 32) return 4;
    if (width <= 64) return 8;
    return 16;
}

/* A new switch running `prog` (NULL: the program of this library). Returns NULL with ss_last_error()
 * on failure. */
SS_EXPORT ss_switch *ss_switch_create(const ss_program *prog) {
    if (!prog) prog = &ss_program_descriptor;
    if (prog->abi_version != SS_ABI_VERSION) {
        ss_set_error("program %s was generated for runtime ABI %u, this runtime is %u", prog->name,
                     prog->abi_version, SS_ABI_VERSION);
        return NULL;
    }
    ss_switch *sw = calloc(1, sizeof *sw);
    if (!sw) goto nomem;
    sw->prog = prog;
    pthread_mutex_init(&sw->lock, NULL);
    sw->cpu_port = -1;
    sw->headroom = UINT32_MAX; /* no limit until the creator sets softswitch/limits.py's (ss_switch_set_headroom) */
    sw->t0_ns = ss_now_ns();
    sw->rng[0] = sw->t0_ns ^ 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)sw;
    sw->rng[1] = 0xBF58476D1CE4E5B9ull;
    sw->tables = calloc(prog->n_tables + 1, sizeof(ss_table));
    sw->registers = calloc(prog->n_registers + 1, sizeof(ss_register));
    sw->counters = calloc(prog->n_counters + 1, sizeof(ss_counter));
    sw->value_sets = calloc(prog->n_value_sets + 1, sizeof(ss_value_set));
    sw->meters = calloc(prog->n_meters + 1, sizeof(ss_meter));
    sw->pre = calloc(1, sizeof(ss_pre));
    if (!sw->tables || !sw->registers || !sw->counters || !sw->value_sets || !sw->meters || !sw->pre) goto nomem;
    for (uint32_t i = 0; i < prog->n_meters; i++) {
        ss_meter *m = &sw->meters[i];
        m->desc = &prog->meters[i];
        m->cells = calloc((size_t)m->desc->size + 1, sizeof(ss_meter_cell));
        if (!m->cells) goto nomem;
    }
    for (uint32_t i = 0; i < prog->n_value_sets; i++) {
        ss_value_set *v = &sw->value_sets[i];
        v->desc = &prog->value_sets[i];
        v->key_bytes = (v->desc->bitwidth + 7) / 8;
        v->members = calloc((size_t)v->desc->size + 1, 2 * (size_t)v->key_bytes);
        if (!v->members) goto nomem;
    }
    for (uint32_t i = 0; i < prog->n_tables; i++)
        if (ss_table_init(&sw->tables[i], prog, &prog->tables[i])) goto nomem;
    for (uint32_t i = 0; i < prog->n_registers; i++) {
        const ss_register_desc *d = &prog->registers[i];
        ss_register *r = &sw->registers[i];
        if (d->bitwidth == 0 || d->bitwidth > 128) {
            ss_set_error("register %s: width %u is outside 1..128", d->name, d->bitwidth);
            switch_free(sw);
            return NULL;
        }
        r->name = d->name;
        r->size = d->size;
        r->bitwidth = d->bitwidth;
        r->is_signed = d->is_signed;
        r->elem_bytes = register_elem_bytes(d->bitwidth);
        uint32_t count = d->group_count ? d->group_count : 1;
        const ss_register_desc *first = d - d->group_offset;
        if (d->group_offset >= count || d->group_offset > i || first->group_offset != 0 ||
            (d->group_offset && (first->size != d->size || register_elem_bytes(first->bitwidth) != r->elem_bytes ||
                                 first->group_count != count))) {
            ss_set_error("register %s: group %u of %u does not fit the registers before it", d->name,
                         d->group_offset, count);
            switch_free(sw);
            return NULL;
        }
        r->stride = count * r->elem_bytes;
        if (d->group_offset == 0) { /* the group's elements, interleaved */
            r->data = calloc((size_t)d->size + 1, r->stride);
            if (!r->data) goto nomem;
            r->owns_data = 1;
        } else {
            r->data = sw->registers[i - d->group_offset].data + (size_t)d->group_offset * r->elem_bytes;
        }
        if (d->initial)
            for (uint64_t j = 0; j < d->size; j++) ss_register_write(r, j, d->initial);
    }
    for (uint32_t i = 0; i < prog->n_counters; i++) {
        ss_counter *c = &sw->counters[i];
        c->desc = &prog->counters[i];
        c->size = prog->counters[i].size;
        c->packets = calloc((size_t)c->size + 1, 8);
        c->bytes = calloc((size_t)c->size + 1, 8);
        if (!c->packets || !c->bytes) goto nomem;
    }
    if (ss_worker_init(&sw->sync, sw) || ss_worker_init(&sw->io_worker, sw)) goto nomem;
    return sw;
nomem:
    ss_set_error("out of memory creating a switch for %s", prog->name);
    switch_free(sw);
    return NULL;
}

/* ------------------------------------------------------------------ value sets */

int ss_value_set_match(ss_packet *p, uint32_t value_set, const uint8_t *key) {
    const ss_value_set *v = &p->sw->value_sets[value_set];
    const uint32_t kb = v->key_bytes;
    for (uint32_t m = 0; m < v->n; m++) {
        const uint8_t *value = v->members + (size_t)m * 2 * kb, *mask = value + kb;
        uint32_t i = 0;
        while (i < kb && (key[i] & mask[i]) == value[i]) i++;
        if (i == kb) return 1;
    }
    return 0;
}

/* Replaces the members of a value set: n x (value, mask), each ceil(bitwidth / 8) big-endian bytes
 * (values already masked; Python validates and keeps the member list). */
SS_EXPORT int ss_ctl_value_set_set(ss_switch *sw, uint32_t value_set, uint32_t n, const uint8_t *members) {
    if (value_set >= sw->prog->n_value_sets) {
        ss_set_error("no value set with index %u", value_set);
        return SS_E_INVALID;
    }
    ss_value_set *v = &sw->value_sets[value_set];
    if (n > v->desc->size) {
        ss_set_error("value set %s is full (%u members)", v->desc->name, v->desc->size);
        return SS_E_FULL;
    }
    pthread_mutex_lock(&sw->lock);
    memcpy(v->members, members, (size_t)n * 2 * v->key_bytes);
    v->n = n;
    pthread_mutex_unlock(&sw->lock);
    return SS_OK;
}

/* Frees the switch (its ports must be stopped first). */
SS_EXPORT void ss_switch_destroy(ss_switch *sw) { switch_free(sw); }

SS_EXPORT void ss_switch_configure(ss_switch *sw, int32_t cpu_port, int packet_in_enabled, int log_enabled,
                                   ss_events *events) {
    pthread_mutex_lock(&sw->lock);
    sw->events = events;
    sw->cpu_port = cpu_port;
    sw->packet_in_enabled = packet_in_enabled;
    sw->log_enabled = log_enabled;
    pthread_mutex_unlock(&sw->lock);
}

/* How many bytes a deparser may add to a received frame (its copies and recirculations keep the room):
 * NativeSwitch sets softswitch/limits.py's packet_headroom (BMv2's 512) after every ss_switch_create;
 * UINT32_MAX for no limit. */
SS_EXPORT void ss_switch_set_headroom(ss_switch *sw, uint32_t headroom) {
    pthread_mutex_lock(&sw->lock);
    sw->headroom = headroom;
    pthread_mutex_unlock(&sw->lock);
}

/* A port's queue depth in packets (relaxed: egress reads the latest value it sees, without the lock). */
SS_EXPORT void ss_port_queue_depth(ss_switch *sw, uint32_t port, uint32_t packets) {
    if (port < SS_MAX_PORTS) __atomic_store_n(&sw->queue_depth[port], packets, __ATOMIC_RELAXED);
}

/* The queue depth egress sees for a port now (set above, or read by the I/O thread: ss_qdepth.c). */
SS_EXPORT uint32_t ss_port_queue_depth_read(ss_switch *sw, uint32_t port) {
    return port < SS_MAX_PORTS ? __atomic_load_n(&sw->queue_depth[port], __ATOMIC_RELAXED) : 0;
}

/* ------------------------------------------------------------------ statistics */

SS_EXPORT uint32_t ss_stat_count(void) { return SS_STAT_COUNT; }

SS_EXPORT void ss_stats_read(ss_switch *sw, uint64_t *out) {
    pthread_mutex_lock(&sw->lock);
    memcpy(out, sw->stats, sizeof sw->stats);
    pthread_mutex_unlock(&sw->lock);
}

SS_EXPORT void ss_stat_add(ss_switch *sw, uint32_t stat, int64_t delta) {
    pthread_mutex_lock(&sw->lock);
    if (stat < SS_STAT_COUNT) sw->stats[stat] += (uint64_t)delta;
    pthread_mutex_unlock(&sw->lock);
}

SS_EXPORT uint64_t ss_assert_failures(ss_switch *sw) { return sw->assert_failures; }

/* ------------------------------------------------------------------ registers */

ss_register *ss_register_at(ss_switch *sw, uint32_t reg) { return &sw->registers[reg]; }

/* Element `index` of register `reg` as two 64-bit words (low, high). */
SS_EXPORT int ss_ctl_register_read(ss_switch *sw, uint32_t reg, uint64_t index, uint64_t *words) {
    if (reg >= sw->prog->n_registers) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_register *r = &sw->registers[reg];
    int rc = index < r->size ? SS_OK : SS_E_INVALID;
    unsigned __int128 v = ss_register_read128(r, index);
    words[0] = (uint64_t)v;
    words[1] = (uint64_t)(v >> 64);
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_register_write(ss_switch *sw, uint32_t reg, uint64_t index, uint64_t low, uint64_t high) {
    if (reg >= sw->prog->n_registers) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_register *r = &sw->registers[reg];
    int rc = index < r->size ? SS_OK : SS_E_INVALID;
    ss_register_write128(r, index, ((unsigned __int128)high << 64) | low);
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* Copies the whole array (size * elem_bytes bytes, native order) into out. */
SS_EXPORT int ss_ctl_register_read_all(ss_switch *sw, uint32_t reg, uint8_t *out) {
    if (reg >= sw->prog->n_registers) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_register *r = &sw->registers[reg];
    for (uint32_t i = 0; i < r->size; i++)
        memcpy(out + (size_t)i * r->elem_bytes, ss_register_element(r, i), r->elem_bytes);
    pthread_mutex_unlock(&sw->lock);
    return SS_OK;
}

SS_EXPORT uint32_t ss_ctl_register_elem_bytes(ss_switch *sw, uint32_t reg) {
    return reg < sw->prog->n_registers ? sw->registers[reg].elem_bytes : 0;
}

SS_EXPORT int ss_ctl_register_reset(ss_switch *sw, uint32_t reg) {
    if (reg >= sw->prog->n_registers) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_register *r = &sw->registers[reg];
    for (uint32_t i = 0; i < r->size; i++) memset(ss_register_element(r, i), 0, r->elem_bytes);
    pthread_mutex_unlock(&sw->lock);
    return SS_OK;
}

/* ------------------------------------------------------------------ counters */

void ss_counter_count(ss_packet *p, uint32_t counter, uint64_t index) {
    ss_counter *c = &p->sw->counters[counter];
    if (index >= c->size) return;
    c->packets[index]++;
    c->bytes[index] += p->sm.packet_length;
}

SS_EXPORT int ss_ctl_counter_read(ss_switch *sw, uint32_t counter, uint64_t index, uint64_t *out) {
    if (counter >= sw->prog->n_counters) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_counter *c = &sw->counters[counter];
    int rc = index < c->size ? SS_OK : SS_E_INVALID;
    if (!rc) {
        out[0] = c->packets[index];
        out[1] = c->bytes[index];
    }
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_counter_write(ss_switch *sw, uint32_t counter, uint64_t index, uint64_t packets,
                                   uint64_t bytes) {
    if (counter >= sw->prog->n_counters) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_counter *c = &sw->counters[counter];
    int rc = index < c->size ? SS_OK : SS_E_INVALID;
    if (!rc) {
        c->packets[index] = packets;
        c->bytes[index] = bytes;
    }
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_counter_reset(ss_switch *sw, uint32_t counter) {
    if (counter >= sw->prog->n_counters) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_counter *c = &sw->counters[counter];
    memset(c->packets, 0, (size_t)c->size * 8);
    memset(c->bytes, 0, (size_t)c->size * 8);
    pthread_mutex_unlock(&sw->lock);
    return SS_OK;
}

/* ------------------------------------------------------------------ packet replication engine */

static ss_replica_list *replica_list_new(uint64_t id, uint64_t seq, uint32_t n, const uint16_t *ports,
                                         const uint16_t *rids, uint32_t truncate) {
    ss_replica_list *l = malloc(sizeof *l + (size_t)n * sizeof(ss_replica));
    if (!l) return NULL;
    l->id = id;
    l->seq = seq;
    l->n = n;
    l->truncate = truncate;
    for (uint32_t i = 0; i < n; i++) {
        l->r[i].port = ports[i];
        l->r[i].rid = rids[i];
    }
    return l;
}

/* Creates or replaces multicast group gid (1..65535; checked by the caller). */
SS_EXPORT int ss_ctl_mc_set(ss_switch *sw, uint32_t gid, uint32_t n, const uint16_t *ports, const uint16_t *rids) {
    if (gid == 0 || gid > 65535) return SS_E_INVALID;
    pthread_mutex_lock(&sw->lock);
    ss_replica_list *old = sw->pre->groups[gid];
    ss_replica_list *l = replica_list_new(gid, old ? old->seq : sw->pre->next_seq++, n, ports, rids, 0);
    if (l) {
        sw->pre->groups[gid] = l;
        free(old);
    }
    pthread_mutex_unlock(&sw->lock);
    return l ? SS_OK : SS_E_NOMEM;
}

SS_EXPORT int ss_ctl_mc_delete(ss_switch *sw, uint32_t gid) {
    if (gid == 0 || gid > 65535) return SS_E_NOT_FOUND;
    pthread_mutex_lock(&sw->lock);
    ss_replica_list *old = sw->pre->groups[gid];
    sw->pre->groups[gid] = NULL;
    pthread_mutex_unlock(&sw->lock);
    free(old);
    return old ? SS_OK : SS_E_NOT_FOUND;
}

static uint32_t session_position(const ss_pre *pre, uint64_t id) {
    uint32_t lo = 0, hi = pre->n_sessions;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (pre->sessions[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

ss_replica_list *ss_pre_session(const ss_pre *pre, uint64_t id) {
    uint32_t i = session_position(pre, id);
    return i < pre->n_sessions && pre->sessions[i]->id == id ? pre->sessions[i] : NULL;
}

SS_EXPORT int ss_ctl_session_set(ss_switch *sw, uint64_t sid, uint32_t n, const uint16_t *ports,
                                 const uint16_t *rids, uint32_t truncate) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_pre *pre = sw->pre;
    uint32_t i = session_position(pre, sid);
    int exists = i < pre->n_sessions && pre->sessions[i]->id == sid;
    ss_replica_list *l =
        replica_list_new(sid, exists ? pre->sessions[i]->seq : pre->next_seq, n, ports, rids, truncate);
    if (!l) {
        rc = SS_E_NOMEM;
        goto out;
    }
    if (exists) {
        free(pre->sessions[i]);
        pre->sessions[i] = l;
        goto out;
    }
    if (pre->n_sessions == pre->cap_sessions) {
        uint32_t cap = pre->cap_sessions ? pre->cap_sessions * 2 : 16;
        ss_replica_list **s = realloc(pre->sessions, cap * sizeof *s);
        if (!s) {
            free(l);
            rc = SS_E_NOMEM;
            goto out;
        }
        pre->sessions = s;
        pre->cap_sessions = cap;
    }
    pre->next_seq++;
    memmove(pre->sessions + i + 1, pre->sessions + i, (pre->n_sessions - i) * sizeof *pre->sessions);
    pre->sessions[i] = l;
    pre->n_sessions++;
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_session_delete(ss_switch *sw, uint64_t sid) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_pre *pre = sw->pre;
    uint32_t i = session_position(pre, sid);
    if (i < pre->n_sessions && pre->sessions[i]->id == sid) {
        free(pre->sessions[i]);
        memmove(pre->sessions + i, pre->sessions + i + 1, (pre->n_sessions - i - 1) * sizeof *pre->sessions);
        pre->n_sessions--;
    } else {
        rc = SS_E_NOT_FOUND;
    }
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

static int by_seq(const void *a, const void *b) {
    const ss_replica_list *x = *(ss_replica_list *const *)a, *y = *(ss_replica_list *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Multicast groups (sessions = 0) or clone sessions (sessions = 1) in creation order, written to buf
 * when it is large enough: per list uint64 id, uint32 n, uint32 truncate, then n (uint16 port,
 * uint16 rid) pairs, padded to 8. Returns the bytes needed. */
SS_EXPORT uint64_t ss_ctl_pre_read(ss_switch *sw, int sessions, uint8_t *buf, uint64_t cap) {
    pthread_mutex_lock(&sw->lock);
    ss_pre *pre = sw->pre;
    uint32_t n = 0;
    ss_replica_list **lists = NULL;
    uint64_t need = 0;
    uint32_t total = sessions ? pre->n_sessions : 65536;
    lists = malloc(((size_t)total + 1) * sizeof *lists);
    if (!lists) goto out;
    if (sessions) {
        for (uint32_t i = 0; i < pre->n_sessions; i++) lists[n++] = pre->sessions[i];
    } else {
        for (uint32_t g = 1; g < 65536; g++)
            if (pre->groups[g]) lists[n++] = pre->groups[g];
    }
    qsort(lists, n, sizeof *lists, by_seq);
    for (uint32_t i = 0; i < n; i++) need += 16 + (((uint64_t)lists[i]->n * 4 + 7) & ~7ull);
    if (buf && need <= cap) {
        uint8_t *p = buf;
        for (uint32_t i = 0; i < n; i++) {
            ss_replica_list *l = lists[i];
            uint64_t size = (((uint64_t)l->n * 4 + 7) & ~7ull);
            memcpy(p, &l->id, 8);
            memcpy(p + 8, &l->n, 4);
            memcpy(p + 12, &l->truncate, 4);
            memset(p + 16, 0, size);
            for (uint32_t j = 0; j < l->n; j++) {
                memcpy(p + 16 + 4 * j, &l->r[j].port, 2);
                memcpy(p + 18 + 4 * j, &l->r[j].rid, 2);
            }
            p += 16 + size;
        }
    }
out:
    free(lists);
    pthread_mutex_unlock(&sw->lock);
    return need;
}
