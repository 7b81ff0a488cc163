/* The v1model architecture as BMv2's simple_switch runs it, around a program's generated blocks
 * (a TNA program's passes run in ss_tna.c instead):
 * parser -> verifyChecksum -> ingress -> I2E clone -> resubmit -> multicast -> drop -> unicast ->
 * egress -> E2E clone -> drop -> computeChecksum -> deparser -> recirculate or output.
 * Mirrors softswitch/runtime/v1model.py step by step (same counters, same order of outputs). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ss_internal.h"

/* which block runs: digests count only from the ingress side (as in the Python runtime) */
#define STAGE_INGRESS 0
#define STAGE_EGRESS 1

typedef struct ctx_header {
    ss_packet p;
    uint8_t stage;
} ctx_header;

static inline uint32_t round8(uint32_t n) { return (n + 7) & ~7u; }

int ss_worker_init(ss_worker *w, ss_switch *sw) {
    memset(w, 0, sizeof *w);
    w->sw = sw;
    const ss_program *prog = sw->prog;
    w->ctx_stride = round8(sizeof(ctx_header)) + round8(prog->hdr_size) + round8(prog->meta_size);
    w->contexts = calloc(SS_MAX_CONTEXTS, w->ctx_stride);
    w->deparse_cap = prog->max_deparsed + SS_MAX_FRAME + 64;
    w->deparse_buf = malloc(w->deparse_cap);
    w->cap_jobs = 32;
    w->jobs = malloc(w->cap_jobs * sizeof(ss_job));
    if (!w->contexts || !w->deparse_buf || !w->jobs) return SS_E_NOMEM;
    return prog->arch == SS_ARCH_TNA ? ss_tna_worker_init(w) : SS_OK;
}

void ss_worker_free(ss_worker *w) {
    free(w->contexts);
    free(w->deparse_buf);
    free(w->jobs);
    ss_tna_worker_free(w);
    ss_bytes_free(&w->out);
    ss_bytes_free(&w->digests);
    w->contexts = NULL;
}

__attribute__((noreturn)) void ss_packet_fail(ss_packet *p, const char *message) {
    ss_worker *w = p->worker;
    w->fail_message = message;
    longjmp(*w->fail_jmp, 1);
}

__attribute__((noreturn)) void ss_stack_index_fail(ss_packet *p, uint64_t index, uint32_t size) {
    ss_worker *w = p->worker;
    snprintf(w->fail_text, sizeof w->fail_text,
             "header stack index %" PRIu64 " out of range 0..%" PRIu32 " outside a parser (BMv2 aborts)", index,
             size - 1);
    w->fail_message = w->fail_text;
    w->fail_stat = SS_STAT_STACK_INDEX_DROPS;
    longjmp(*w->fail_jmp, 1);
}

ss_packet *ss_ctx_push(ss_worker *w) {
    if (w->ctx_top >= SS_MAX_CONTEXTS) {
        w->fail_message = "too many packet copies in flight";
        longjmp(*w->fail_jmp, 1);
    }
    uint8_t *base = w->contexts + (size_t)w->ctx_top++ * w->ctx_stride;
    ss_packet *p = (ss_packet *)(void *)base;
    const ss_program *prog = w->sw->prog;
    p->hdr = base + round8(sizeof(ctx_header));
    p->meta = (uint8_t *)p->hdr + round8(prog->hdr_size);
    p->sw = w->sw;
    p->worker = w;
    p->registers = w->sw->registers;
    return p;
}

void ss_ctx_pop(ss_worker *w) { w->ctx_top--; }

/* One clock read per batch of received frames (ss_worker_clock: up to 64 frames taken from a port
 * together, or one process_batch call): the frames of a batch arrived together, and their passes and
 * replicas share the timestamp (a clock read costs a tenth of a simple packet's processing). */
static inline uint64_t now_us(const ss_worker *w) { return w->now_us; }

static inline void reset_effects(ss_packet *p) {
    p->clone_set = p->resubmit_set = p->recirculate_set = 0;
    p->truncate = 0;
}

static inline void set_stage(ss_packet *p, uint8_t stage) { ((ctx_header *)(void *)p)->stage = stage; }

/* A fresh packet context for `data` arriving on `port`, parsed. */
static ss_packet *parse(ss_worker *w, const uint8_t *data, uint32_t len, uint16_t port, uint32_t itype) {
    ss_switch *sw = w->sw;
    const ss_program *prog = sw->prog;
    ss_packet *p = ss_ctx_push(w);
    memset(p->hdr, 0, prog->hdr_size);
    memset(p->meta, 0, prog->meta_size);
    memset(&p->sm, 0, sizeof p->sm);
    reset_effects(p);
    p->sm.ingress_port = port;
    p->sm.packet_length = len;
    p->sm.instance_type = itype;
    p->sm.ingress_global_timestamp = now_us(w);
    p->data = data;
    p->len = len;
    p->parse_bits = 0;
    set_stage(p, STAGE_INGRESS);
    uint32_t err = prog->parse ? prog->parse(p) : 0;
    p->sm.parser_error = err;
    if (err) sw->stats[SS_STAT_PARSER_ERRORS]++;
    uint64_t off = ((uint64_t)p->parse_bits + 7) >> 3;
    if (off > len) off = len;
    p->payload = data + off;
    p->payload_len = len - (uint32_t)off;
    return p;
}

int ss_add_job(ss_worker *w, const uint8_t *data, uint32_t len, uint16_t port, uint8_t itype, int32_t list,
                   const void *meta) {
    if (w->n_jobs == w->cap_jobs) {
        uint32_t cap = w->cap_jobs * 2;
        ss_job *jobs = realloc(w->jobs, cap * sizeof *jobs);
        if (!jobs) return SS_E_NOMEM;
        w->jobs = jobs;
        w->cap_jobs = cap;
    }
    ss_job *j = &w->jobs[w->n_jobs++];
    j->data = data;
    j->len = len;
    j->port = port;
    j->itype = itype;
    j->list = list;
    j->saved = NULL;
    j->owned = NULL;
    if (list != SS_NO_FIELD_LIST && meta && w->sw->prog->copy_field_list) {
        uint32_t size = w->sw->prog->meta_size;
        void *saved = malloc(size ? size : 1);
        if (!saved) return SS_E_NOMEM;
        memcpy(saved, meta, size);
        j->saved = saved;
    }
    return SS_OK;
}

void ss_emit(ss_worker *w, uint16_t port, const uint8_t *data, uint32_t len) {
    ss_switch *sw = w->sw;
    sw->stats[SS_STAT_TRANSMITTED]++;
    w->outputs++;
    if (sw->cpu_port >= 0 && port == (uint32_t)sw->cpu_port) {
        sw->stats[SS_STAT_TO_CPU]++;
        if (sw->packet_in_enabled) {
            ss_record_add(&w->out, SS_REC_PACKET_IN, port, 0, w->input, data, len);
            return;
        }
    }
    if (w->emit)
        w->emit(w, port, data, len);
    else if (!w->discard_frames)
        ss_record_add(&w->out, SS_REC_FRAME, port, 0, w->input, data, len);
}

static void run_egress(ss_worker *w, ss_packet *p, uint16_t port, uint16_t rid, uint32_t depth,
                       uint32_t clone_truncate) {
    ss_switch *sw = w->sw;
    const ss_program *prog = sw->prog;
    p->sm.egress_port = port;
    p->sm.egress_rid = rid;
    p->sm.egress_global_timestamp = now_us(w);
    /* the port's real queue (bit<19>): the packet joins it behind this many */
    uint32_t queued = port < SS_MAX_PORTS ? __atomic_load_n(&sw->queue_depth[port], __ATOMIC_RELAXED) : 0;
    p->sm.enq_qdepth = p->sm.deq_qdepth = queued > 0x7FFFF ? 0x7FFFF : queued;
    p->clone_set = p->recirculate_set = 0;
    p->truncate = 0;
    set_stage(p, STAGE_EGRESS);
    if (prog->egress) prog->egress(p);
    if (p->clone_set && p->clone_type == SS_CLONE_E2E && depth < 8) {
        const ss_replica_list *sess = ss_pre_session(sw->pre, p->clone_session);
        if (sess) {
            for (uint32_t i = 0; i < sess->n; i++) {
                ss_packet *q = ss_ctx_push(w);
                memcpy(q->hdr, p->hdr, prog->hdr_size); /* headers as egress left them */
                memset(q->meta, 0, prog->meta_size);
                if (p->clone_list != SS_NO_FIELD_LIST && prog->copy_field_list)
                    prog->copy_field_list(p->clone_list, q->meta, p->meta);
                memset(&q->sm, 0, sizeof q->sm);
                q->sm.ingress_port = p->sm.ingress_port;
                q->sm.packet_length = p->sm.packet_length;
                q->sm.instance_type = SS_PKT_EGRESS_CLONE;
                q->data = p->data;
                q->len = p->len;
                q->parse_bits = p->parse_bits;
                q->payload = p->payload;
                q->payload_len = p->payload_len;
                reset_effects(q);
                sw->stats[SS_STAT_CLONED]++;
                run_egress(w, q, sess->r[i].port, sess->r[i].rid, depth + 1, sess->truncate);
                ss_ctx_pop(w);
            }
        }
    }
    if (p->sm.egress_spec == SS_DROP_PORT) {
        sw->stats[SS_STAT_DROPPED]++;
        return;
    }
    if (prog->compute_checksum) prog->compute_checksum(p);
    uint32_t n = prog->deparse ? prog->deparse(p, w->deparse_buf) : 0;
    if ((uint64_t)n + p->payload_len > w->deparse_cap) ss_packet_fail(p, "deparsed frame too long");
    memcpy(w->deparse_buf + n, p->payload, p->payload_len);
    uint32_t len = n + p->payload_len;
    if (len > w->buffer_limit) { /* BMv2's deparser would write past its packet buffer */
        sw->stats[SS_STAT_BUFFER_LIMIT_DROPS]++;
        sw->stats[SS_STAT_DROPPED]++;
        ss_log_line(w, "packet dropped: the deparser made a %" PRIu32 "-byte frame, past BMv2's packet buffer "
                    "(the received %" PRIu32 " bytes + %" PRIu32 ")", len, w->buffer_limit - sw->headroom, sw->headroom);
        return;
    }
    if (p->recirculate_set) {
        sw->stats[SS_STAT_RECIRCULATED]++;
        uint8_t *copy = malloc(len ? len : 1);
        if (!copy) ss_packet_fail(p, "out of memory");
        memcpy(copy, w->deparse_buf, len);
        if (ss_add_job(w, copy, len, p->sm.ingress_port, SS_PKT_RECIRC, p->recirculate_list, p->meta)) {
            free(copy);
            ss_packet_fail(p, "out of memory");
        }
        w->jobs[w->n_jobs - 1].owned = copy;
        return;
    }
    if (p->truncate && p->truncate < len) len = p->truncate;
    if (clone_truncate && clone_truncate < len) len = clone_truncate;
    ss_emit(w, port, w->deparse_buf, len);
}

static void clone_i2e(ss_worker *w, const ss_job *job, ss_packet *orig) {
    ss_switch *sw = w->sw;
    const ss_program *prog = sw->prog;
    const ss_replica_list *sess = ss_pre_session(sw->pre, orig->clone_session);
    if (!sess) return;
    for (uint32_t i = 0; i < sess->n; i++) {
        /* BMv2 parses the original packet again for an ingress-to-egress clone */
        ss_packet *q = parse(w, job->data, job->len, job->port, SS_PKT_INGRESS_CLONE);
        if (orig->clone_list != SS_NO_FIELD_LIST && prog->copy_field_list)
            prog->copy_field_list(orig->clone_list, q->meta, orig->meta);
        sw->stats[SS_STAT_CLONED]++;
        run_egress(w, q, sess->r[i].port, sess->r[i].rid, 1, sess->truncate);
        ss_ctx_pop(w);
    }
}

static void run_ingress(ss_worker *w, const ss_job *job) {
    ss_switch *sw = w->sw;
    const ss_program *prog = sw->prog;
    ss_packet *p = parse(w, job->data, job->len, job->port, job->itype);
    if (job->saved && prog->copy_field_list) prog->copy_field_list(job->list, p->meta, job->saved);
    reset_effects(p);
    w->digests.len = 0;
    if (prog->verify_checksum) prog->verify_checksum(p);
    if (prog->ingress) prog->ingress(p);
    if (w->digests.len) { /* digests of this pass, kept now that ingress completed */
        if (ss_bytes_reserve(&w->out, w->digests.len) == SS_OK) {
            memcpy(w->out.data + w->out.len, w->digests.data, w->digests.len);
            w->out.len += w->digests.len;
        }
        w->digests.len = 0;
    }
    if (p->clone_set && p->clone_type == SS_CLONE_I2E) clone_i2e(w, job, p);
    if (p->resubmit_set) {
        sw->stats[SS_STAT_RESUBMITTED]++;
        if (ss_add_job(w, job->data, job->len, job->port, SS_PKT_RESUBMIT, p->resubmit_list, p->meta))
            ss_packet_fail(p, "out of memory");
        return;
    }
    uint16_t grp = p->sm.mcast_grp;
    if (grp) {
        const ss_replica_list *reps = sw->pre->groups[grp];
        if (!reps || reps->n == 0) {
            sw->stats[SS_STAT_DROPPED]++;
            return;
        }
        for (uint32_t i = 0; i < reps->n; i++) {
            ss_packet *q = p;
            int copy = i + 1 < reps->n;
            if (copy) {
                q = ss_ctx_push(w);
                void *hdr = q->hdr, *meta = q->meta;
                *q = *p;
                q->hdr = hdr;
                q->meta = meta;
                memcpy(hdr, p->hdr, prog->hdr_size);
                memcpy(meta, p->meta, prog->meta_size);
            }
            q->sm.instance_type = SS_PKT_REPLICATION;
            sw->stats[SS_STAT_REPLICATED]++;
            run_egress(w, q, reps->r[i].port, reps->r[i].rid, 0, 0);
            if (copy) ss_ctx_pop(w);
        }
        return;
    }
    if (p->sm.egress_spec == SS_DROP_PORT) {
        sw->stats[SS_STAT_DROPPED]++;
        return;
    }
    run_egress(w, p, p->sm.egress_spec, 0, 0, 0);
}

void ss_worker_clock(ss_worker *w) {
    w->now_ns = ss_now_ns() - w->sw->t0_ns;
    w->now_us = w->now_ns / 1000;
}

void ss_worker_process(ss_worker *w, uint16_t port, const uint8_t *data, uint32_t len) {
    ss_switch *sw = w->sw;
    sw->stats[SS_STAT_RECEIVED]++;
    w->n_jobs = 0;
    uint64_t limit = (uint64_t)len + sw->headroom;
    w->buffer_limit = limit > UINT32_MAX ? UINT32_MAX : (uint32_t)limit;
    ss_add_job(w, data, len, port, SS_PKT_NORMAL, SS_NO_FIELD_LIST, NULL);
    for (uint32_t i = 0; i < w->n_jobs; i++) {
        if (i + 1 > SS_MAX_PASSES) {
            sw->stats[SS_STAT_LOOP_LIMIT_DROPS]++;
            sw->stats[SS_STAT_DROPPED]++;
            ss_log_line(w, "packet dropped: more than %d passes through ingress (a resubmit/recirculate loop)",
                        SS_MAX_PASSES);
            continue;
        }
        ss_job job = w->jobs[i]; /* the array may grow while this job runs */
        jmp_buf on_fail;
        w->ctx_top = 0;
        w->fail_jmp = &on_fail;
        w->fail_stat = 0;
        if (setjmp(on_fail) == 0) {
            if (sw->prog->arch == SS_ARCH_TNA)
                ss_tna_run_pass(w, &job);
            else
                run_ingress(w, &job);
        } else if (w->fail_stat) { /* a BMv2 limit: its own counter, and the limit in the log line */
            sw->stats[w->fail_stat]++;
            sw->stats[SS_STAT_DROPPED]++;
            w->digests.len = 0;
            ss_log_line(w, "packet dropped: %s", w->fail_message);
        } else {
            sw->stats[SS_STAT_ERRORS]++;
            sw->stats[SS_STAT_DROPPED]++;
            w->digests.len = 0;
            ss_log_line(w, "packet dropped: internal error: %s", w->fail_message ? w->fail_message : "unknown");
        }
        w->fail_jmp = NULL;
    }
    for (uint32_t i = 0; i < w->n_jobs; i++) {
        free(w->jobs[i].owned);
        free((void *)w->jobs[i].saved);
    }
    w->n_jobs = 0;
}

/* ------------------------------------------------------------------ externs */

void ss_mark_to_drop(ss_packet *p) {
    p->sm.egress_spec = SS_DROP_PORT;
    p->sm.mcast_grp = 0;
}

void ss_clone(ss_packet *p, uint32_t clone_type, uint32_t session, int32_t field_list) {
    p->clone_set = 1;
    p->clone_type = (uint8_t)clone_type;
    p->clone_session = session;
    p->clone_list = field_list;
}

void ss_resubmit(ss_packet *p, int32_t field_list) {
    p->resubmit_set = 1;
    p->resubmit_list = field_list;
}

void ss_recirculate(ss_packet *p, int32_t field_list) {
    p->recirculate_set = 1;
    p->recirculate_list = field_list;
}

void ss_truncate(ss_packet *p, uint32_t length) { p->truncate = length; }

void ss_digest(ss_packet *p, uint32_t digest, const uint64_t *values) {
    ss_worker *w = p->worker;
    const ss_program *prog = p->sw->prog;
    if (digest >= prog->n_digests || ((ctx_header *)(void *)p)->stage != STAGE_INGRESS) return;
    const ss_digest_desc *d = &prog->digests[digest];
    uint32_t words = 0;
    for (uint32_t i = 0; i < d->n_fields; i++) words += (d->fields[i].bitwidth + 63) / 64;
    p->sw->stats[SS_STAT_DIGESTS]++;
    ss_record_add(&w->digests, SS_REC_DIGEST, -1, digest, w->input, values, words * 8);
}

uint64_t ss_random(ss_packet *p, uint64_t lo, uint64_t hi) {
    if (lo >= hi) return lo;
    uint64_t *s = p->sw->rng; /* xorshift128+ */
    uint64_t range = hi - lo + 1, r;
    do {
        uint64_t a = s[0];
        const uint64_t b = s[1];
        s[0] = b;
        a ^= a << 23;
        s[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
        r = s[1] + b;
    } while (range && r >= UINT64_MAX - (UINT64_MAX % range)); /* no modulo bias */
    return range ? lo + r % range : r;
}

int ss_log_enabled(const ss_packet *p) { return p->sw->log_enabled; }

void ss_assert_failed(ss_packet *p, const char *where) {
    p->sw->assert_failures++;
    ss_log_line(p->worker, "assert/assume failed at %s", where);
}

void ss_log_msg(ss_packet *p, const char *fmt, uint32_t n, const ss_log_value *values) {
    if (!p->sw->log_enabled) return;
    char text[1024];
    size_t len = 0;
    uint32_t next = 0;
    for (const char *c = fmt; *c && len + 64 < sizeof text;) {
        if (c[0] == '{' && c[1] == '}' && next < n) {
            const ss_log_value *v = &values[next++];
            int k;
            if (v->kind == SS_LOG_BOOL)
                k = snprintf(text + len, sizeof text - len, "%s", v->value ? "True" : "False");
            else if (v->kind == SS_LOG_SIGNED && v->bitwidth && v->bitwidth < 64 && (v->value >> (v->bitwidth - 1)) & 1)
                k = snprintf(text + len, sizeof text - len, "%" PRId64, (int64_t)(v->value | ~ss_mask64(v->bitwidth)));
            else if (v->kind == SS_LOG_SIGNED && v->bitwidth == 64)
                k = snprintf(text + len, sizeof text - len, "%" PRId64, (int64_t)v->value);
            else
                k = snprintf(text + len, sizeof text - len, "%" PRIu64, v->value);
            if (k > 0) len += (size_t)k;
            c += 2;
        } else {
            text[len++] = *c++;
        }
    }
    text[len] = 0;
    ss_log_line(p->worker, "%s", text);
}

/* ------------------------------------------------------------------ the sync API (calls from Python) */

/* Runs n frames (frame i: data[offsets[i]:offsets[i+1]] from port ports[i]) through the pipeline.
 * Hands the caller the records (frames, packet-ins, digests, log lines) in a malloc'd buffer
 * (*records, free with ss_free; NULL when empty) and returns its length. With discard_frames, frame
 * outputs are only counted (ss_outputs_last gives the count). */
SS_EXPORT int64_t ss_process_batch(ss_switch *sw, uint32_t n, const uint16_t *ports, const uint8_t *data,
                                   const uint64_t *offsets, int discard_frames, uint8_t **records,
                                   uint64_t *outputs) {
    ss_worker *w = &sw->sync;
    pthread_mutex_lock(&sw->lock);
    w->out.len = 0;
    w->outputs = 0;
    w->discard_frames = discard_frames;
    ss_worker_clock(w);
    for (uint32_t i = 0; i < n; i++) {
        w->input = i;
        ss_worker_process(w, ports[i], data + offsets[i], (uint32_t)(offsets[i + 1] - offsets[i]));
    }
    int64_t len = (int64_t)w->out.len;
    *outputs = w->outputs;
    if (len) {
        *records = w->out.data;
        memset(&w->out, 0, sizeof w->out);
    } else {
        *records = NULL;
    }
    pthread_mutex_unlock(&sw->lock);
    return len;
}

/* One frame (the common call from Python): ss_process_batch with fewer arguments. */
SS_EXPORT int64_t ss_process_one(ss_switch *sw, uint32_t port, const uint8_t *data, uint32_t len, uint8_t **records) {
    uint16_t p = (uint16_t)port;
    uint64_t offsets[2] = {0, len}, outputs;
    return ss_process_batch(sw, 1, &p, data, offsets, 0, records, &outputs);
}
