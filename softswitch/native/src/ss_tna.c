/* The Tofino Native Architecture's pipeline (one pipe's six blocks, Tofino 1) around a TNA program's
 * generated blocks; mirrors softswitch/runtime/tna.py step by step (same counters, same order of outputs):
 *
 *   ingress parser (the frame after the ingress intrinsic metadata and the port metadata)
 *   -> ingress control -> ingress deparser (emitted headers + the unparsed payload)
 *   -> traffic manager: drop_ctl bit 0 drops; otherwise a copy per replica of mcast_grp_a and mcast_grp_b
 *      (egress_rid = the replica's id) and one to ucast_egress_port if ingress wrote it; none: dropped
 *   -> per copy, unless bypass_egress: egress parser (the frame after the egress intrinsic metadata; its
 *      enq_qdepth / deq_qdepth: the port's queue_depth, which holds cells for a TNA program)
 *      -> egress control -> egress deparser; drop_ctl bit 0 drops
 *   -> out on the egress port, or, on a recirculation port (local port 68 of a pipe), back into the
 *      ingress parser as a new job with that port as ingress_port.
 *
 * A parser error does not drop the packet (the generated parser entry records it in the from_parser
 * metadata); it is counted in parser_errors. The prefix bytes the parsers read are written by the
 * generated write_tna_prefix from p->sm. */
#include <stdlib.h>

#include "ss_internal.h"

static uint32_t buffer_bytes(const ss_program *prog) {
    uint32_t prefix = prog->tna_ingress_prefix > prog->tna_egress_prefix ? prog->tna_ingress_prefix
                                                                         : prog->tna_egress_prefix;
    return prefix + prog->max_deparsed + SS_MAX_FRAME + 64;
}

int ss_tna_worker_init(ss_worker *w) {
    uint32_t n = buffer_bytes(w->sw->prog);
    w->tna_in = malloc(n);
    w->tna_frame = malloc(n);
    w->tna_egress_in = malloc(n);
    if (!w->tna_in || !w->tna_frame || !w->tna_egress_in) return SS_E_NOMEM;
    return SS_OK;
}

void ss_tna_worker_free(ss_worker *w) {
    free(w->tna_in);
    free(w->tna_frame);
    free(w->tna_egress_in);
    w->tna_in = w->tna_frame = w->tna_egress_in = NULL;
}

/* A fresh context for one gress (the other context is left as it is: no block of this gress reads it). */
static ss_packet *fresh(ss_worker *w, int egress) {
    const ss_program *prog = w->sw->prog;
    ss_packet *p = ss_ctx_push(w);
    if (egress)
        memset(p->meta, 0, prog->meta_size);
    else
        memset(p->hdr, 0, prog->hdr_size);
    memset(&p->sm, 0, sizeof p->sm);
    memset(&p->tna, 0, sizeof p->tna);
    p->clone_set = p->resubmit_set = p->recirculate_set = 0;
    p->truncate = 0;
    return p;
}

/* Runs a gress's parser over `in` (prefix + frame, `len` bytes); sets the payload. */
static void run_parser(ss_worker *w, ss_packet *p, uint32_t (*parse)(ss_packet *), const uint8_t *in, uint32_t len) {
    p->data = in;
    p->len = len;
    p->parse_bits = 0;
    uint32_t err = parse ? parse(p) : 0;
    p->sm.parser_error = err;
    if (err) w->sw->stats[SS_STAT_PARSER_ERRORS]++;
    uint64_t off = ((uint64_t)p->parse_bits + 7) >> 3;
    if (off > len) off = len;
    p->payload = in + off;
    p->payload_len = len - (uint32_t)off;
}

/* Headers the deparser emits + the payload into out; the length. */
static uint32_t deparse(ss_worker *w, ss_packet *p, uint32_t (*deparser)(ss_packet *, uint8_t *), uint8_t *out) {
    uint32_t n = deparser ? deparser(p, out) : 0;
    if ((uint64_t)n + p->payload_len > buffer_bytes(w->sw->prog)) ss_packet_fail(p, "deparsed frame too long");
    memcpy(out + n, p->payload, p->payload_len);
    return n + p->payload_len;
}

/* A frame leaving the pipe: recirculated when its port is a recirculation port, else sent. */
static void leave(ss_worker *w, ss_packet *p, const uint8_t *frame, uint32_t len, uint16_t port) {
    ss_switch *sw = w->sw;
    if ((port & SS_TNA_LOCAL_PORT_MASK) == SS_TNA_RECIRCULATION_LOCAL_PORT) {
        sw->stats[SS_STAT_RECIRCULATED]++;
        uint8_t *copy = malloc(len ? len : 1);
        if (!copy) ss_packet_fail(p, "out of memory");
        memcpy(copy, frame, len);
        if (ss_add_job(w, copy, len, port, SS_PKT_RECIRC, SS_NO_FIELD_LIST, NULL)) {
            free(copy);
            ss_packet_fail(p, "out of memory");
        }
        w->jobs[w->n_jobs - 1].owned = copy;
        return;
    }
    ss_emit(w, port, frame, len);
}

static void run_egress(ss_worker *w, ss_packet *ingress, const uint8_t *frame, uint32_t len, uint16_t port,
                       uint16_t rid) {
    ss_switch *sw = w->sw;
    const ss_program *prog = sw->prog;
    ss_packet *p = fresh(w, 1);
    p->sm.ingress_port = ingress->sm.ingress_port;
    p->sm.egress_port = port;
    p->sm.egress_rid = rid;
    p->sm.packet_length = len;
    p->sm.egress_global_timestamp = w->now_ns;
    /* the port's real queue in cells, as Switch.set_queue_depth converted it for TNA (bit<19>) */
    uint32_t queued = port < SS_MAX_PORTS ? __atomic_load_n(&sw->queue_depth[port], __ATOMIC_RELAXED) : 0;
    p->sm.enq_qdepth = p->sm.deq_qdepth = queued > 0x7FFFF ? 0x7FFFF : queued;
    uint32_t prefix = prog->tna_egress_prefix;
    memset(w->tna_egress_in, 0, prefix);
    if (prog->write_tna_prefix) prog->write_tna_prefix(p, 1, w->tna_egress_in);
    memcpy(w->tna_egress_in + prefix, frame, len);
    run_parser(w, p, prog->egress_parse, w->tna_egress_in, prefix + len);
    if (prog->egress) prog->egress(p);
    uint32_t n = deparse(w, p, prog->egress_deparse, w->deparse_buf);
    if (p->tna.drop_ctl & 1) {
        sw->stats[SS_STAT_DROPPED]++;
    } else {
        leave(w, p, w->deparse_buf, n, port);
    }
    ss_ctx_pop(w);
}

static void copy_out(ss_worker *w, ss_packet *p, uint32_t len, uint16_t port, uint16_t rid) {
    if (p->tna.bypass_egress)
        leave(w, p, w->tna_frame, len, port);
    else
        run_egress(w, p, w->tna_frame, len, port, rid);
}

void ss_tna_run_pass(ss_worker *w, const ss_job *job) {
    ss_switch *sw = w->sw;
    const ss_program *prog = sw->prog;
    ss_packet *p = fresh(w, 0);
    p->sm.ingress_port = job->port;
    p->sm.packet_length = job->len;
    p->sm.instance_type = job->itype;
    p->sm.ingress_global_timestamp = w->now_ns;
    uint32_t prefix = prog->tna_ingress_prefix;
    memset(w->tna_in, 0, prefix);
    if (prog->write_tna_prefix) prog->write_tna_prefix(p, 0, w->tna_in);
    memcpy(w->tna_in + prefix, job->data, job->len);
    run_parser(w, p, prog->parse, w->tna_in, prefix + job->len);
    if (prog->ingress) prog->ingress(p);
    uint32_t len = deparse(w, p, prog->deparse, w->tna_frame);
    if (p->tna.drop_ctl & 1) {
        sw->stats[SS_STAT_DROPPED]++;
        return;
    }
    uint32_t copies = 0;
    uint16_t groups[2] = {p->tna.mcast_grp_a, p->tna.mcast_grp_b};
    for (int g = 0; g < 2; g++) {
        const ss_replica_list *reps = groups[g] ? sw->pre->groups[groups[g]] : NULL;
        if (reps) {
            sw->stats[SS_STAT_REPLICATED] += reps->n;
            copies += reps->n;
        }
    }
    if (p->tna.ucast_valid) copies++;
    if (!copies) {
        sw->stats[SS_STAT_DROPPED]++;
        return;
    }
    for (int g = 0; g < 2; g++) {
        const ss_replica_list *reps = groups[g] ? sw->pre->groups[groups[g]] : NULL;
        for (uint32_t i = 0; reps && i < reps->n; i++) copy_out(w, p, len, reps->r[i].port, reps->r[i].rid);
    }
    if (p->tna.ucast_valid) copy_out(w, p, len, p->tna.ucast_egress_port, 0);
}
