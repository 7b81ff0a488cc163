/* The scale simulator's native core: a discrete-event loop, link directions and the hosts' agents.
 *
 * Time is in integer picoseconds (no rounding drift over millions of events). One event is one frame
 * arriving at a node's port, or one host timer. A link direction serialises frames FIFO at its
 * bandwidth behind a drop-tail queue of a byte limit, loses frames with a probability, and delivers
 * them after its delay. A switch node runs the P4 program's compiled pipeline through the native
 * runtime's C entry point (ss_process_one, softswitch/native/src/ss_pipeline.c), given to us as a
 * function pointer with the switch, so no Python runs per packet. Hosts run the agents modelled here
 * (INA worker and server, ring worker, parameter-server worker and server). Frames are built by Python
 * from the wire codec (protocol/) as templates; this file only writes the per-packet fields at the
 * byte offsets Python read off the codec's layout.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_PORTS 512
#define HEARD_WORDS 4 /* an INA server's children-heard bitmap per cell: a hop's child is one byte, 256 bits hold any */

typedef int64_t (*process_fn)(void *sw, uint32_t port, const uint8_t *data, uint32_t len, uint8_t **records);
typedef void (*free_fn)(void *p);
typedef void (*depth_fn)(void *sw, uint32_t port, uint32_t packets);

enum { EV_FRAME = 0, EV_TIMER = 1 };
enum { TIMER_RTO = 0, TIMER_PACE = 1 }; /* a host timer's kind rides in the event's port */
enum { NODE_SWITCH = 0, NODE_HOST = 1 };
enum { HOST_NONE = 0, HOST_INA_WORKER, HOST_INA_SERVER, HOST_RING, HOST_PS_WORKER, HOST_PS_SERVER, HOST_SENDER, HOST_SINK,
       HOST_EXTERNAL /* frames go out to Python (the in-process network's agents): sim_run_external */ };

typedef struct {
    int64_t t;
    uint64_t order;
    uint32_t kind, node, port, len;
    uint8_t *frame;
} event;

typedef struct {
    uint32_t dst_node, dst_port;
    double bandwidth_bps;
    int64_t delay_ps;
    int64_t queue_bytes; /* drop-tail limit of bytes waiting (not yet on the wire); < 0: none */
    double loss;
    int64_t busy_until; /* when the last accepted frame leaves the transmitter */
    uint32_t last_len;  /* the last accepted frame's bytes: the queue in packets is its bytes over this */
    int up;
    /* counters */
    uint64_t packets, bytes, lost, queue_drops, max_queue;
    /* the in-process network's impairments (sim_set_link_params): a frame is sent twice with probability
     * `duplicate`, held back by up to reorder_delay_ps with probability `reorder`; queue_backlog_only: the
     * drop-tail limit compares the bytes already waiting (not those plus the frame's) */
    double duplicate, reorder;
    int64_t reorder_delay_ps;
    int queue_backlog_only;
    uint64_t duplicated, reordered;
} link_dir;

/* offsets (bytes from the frame's start) of the fields the agents write and read, from protocol/ */
typedef struct {
    uint32_t b0, flags, seq, slot_word, hop0_fan_in, hop0_child, header_end, k; /* values: the last 4k bytes */
    uint32_t pkt_grad, pkt_result, flag_retx; /* b0's low nibble values and the RETX bit */
    uint32_t udp_payload; /* where a UDP payload starts (the baselines' packet index) */
    uint32_t ip_tos, ip_header; /* the IPv4 TOS byte (its low 2 bits ECN) and the IPv4 header's start */
    uint32_t tree_id;           /* the INA header's tree id (a RESULT goes down the tree its GRADs came up) */
    uint32_t flag_mcast;        /* the MCAST bit: on a GRAD, the root switch's copy of a sum it multicast */
} ina_layout;

/* The worker agent's congestion control (worker/stream.py, worker/pacing.py, worker/agent.py), in the
 * agents' units and constants; see sim_ina_worker_agent. */
#define RTT_GAIN 0.125            /* weight of a new sample in the smoothed RTT */
#define RTT_CAP_OVER_MIN 8.0      /* the RTO's base is at most this times the lowest round trip */
#define BURST_S 0.010             /* a backlogged pacer's bucket holds this long at its rate */
#define MIN_BURST_PACKETS 4       /* and at least this many frames */
#define WAKE_S 0.002              /* a waiting pacer wakes when this long of tokens came; an idle one keeps them */
#define MIN_WAIT_S 0.00005        /* the shortest wait for tokens */
#define ALPHA_GAIN (1.0 / 16)     /* DCTCP's g */
#define INCREASE_SHARE (1.0 / 32) /* an uncongested epoch adds this share of the plan's rate */
#define MIN_RATE_SHARE 0.6        /* the rate's floor, a share of the plan's rate */
#define MIN_EPOCH_S 0.001         /* an epoch lasts one smoothed round trip, at least this */
#define DELAY_TARGET_S 0.005      /* a result this late (and one lowest RTT late) counts as congested */
#define PS_PER_S 1e12

/* One tree of an INA worker: its chunks (global indices, in tree order), its send window and its pacer
 * (worker/stream.py's per-tree cursor: chunk i of a tree uses slot i mod pool, shadow (i div pool) mod 2). */
typedef struct {
    uint8_t *tmpl; /* the worker's GRAD on this tree's hop list */
    uint32_t tmpl_len;
    uint32_t *chunks;
    uint32_t n, lowest, next; /* chunks; the first without its result; the next to send (tree-local) */
    double win, thresh;       /* congestion window and slow-start threshold, chunks */
    int64_t last_shrink;
    double ceiling, rate, tokens, alpha; /* pacer, bytes/s of frames; ceiling 0: not paced */
    int64_t stamp, epoch_start;
    int backlogged, pace_pending;
    uint64_t epoch_results, epoch_congested;
    int moved; /* the tree is gone (a new plan version): its chunks go over the recovery tree (tmpl now its) */
} wtree;

typedef struct host host;
struct host {
    uint32_t kind;
    uint8_t *tmpl; /* frame template(s) */
    uint32_t tmpl_len;
    /* INA worker */
    uint32_t rank, n_chunks, pool, window;
    wtree *trees; /* the job's trees this worker stripes its chunks over */
    uint32_t n_trees;
    uint8_t *tree_of; /* per chunk: its tree */
    uint32_t *local;  /* per chunk: its index in its tree */
    int64_t timeout_ps, done_at;
    uint8_t *done;
    int64_t *sent_at;
    uint32_t *attempts;
    int timer_pending, gave_up;
    uint32_t max_resends; /* resends of one chunk before the worker gives up (no lost packet hangs a run) */
    uint64_t resends, results, mismatches, duplicates;
    int32_t coeff; /* this worker's values: a[i] + coeff * b[i] */
    const int32_t *va, *vb, *vexp; /* its job's arrays a, b and the expected sum (sim_set_values when added) */
    int64_t *deadline; /* per chunk: when its retransmission timer expires (set at each send) */
    /* a new plan version mid-round (sim_ina_worker_replan): the chunks moved to the recovery tree */
    uint8_t *via_recovery; /* per chunk: sent over the recovery tree at least once */
    int replanned;
    uint64_t results_at_replan, chunks_moved, recovery_chunks, sent_after_done, finished_offered;
    /* the agent's congestion control (adaptive); adaptive == 0: the window and the timeout stay fixed */
    int adaptive, ecn;
    double min_win;
    double srtt_ps, backoff, rto_cap; /* smoothed RTT (< 0: no sample yet), Karn's backoff and its cap */
    int64_t min_rtt_ps;               /* the lowest round trip heard (0: none) */
    uint64_t rate_cuts, congested, timeouts, halvings;
    /* INA server */
    uint32_t ring;
    int64_t *cell_seq;
    uint64_t *cell_heard; /* HEARD_WORDS words per cell: the children heard (a server tracks up to 255) */
    uint8_t *cell_count;  /* children heard per cell */
    uint8_t *cell_done;
    uint8_t *cell_ce; /* a contribution of the cell's sum arrived marked CE: the result is echoed CE */
    uint8_t *cell_tree; /* the tree the cell's chunk came up (its RESULT's tree id) */
    int32_t *cell_acc;
    uint64_t grads, answers, copies, results_sent, unknown_sources;
    uint64_t answered_from_other_tree; /* recovery-tree GRADs of chunks another tree completed here */
    /* the server's answers to resends, to their senders only (server/agent.py, _answer): per tree (by
     * index, tree_index[tree id]) and worker (by its address, sorted in worker_ips) a unicast RESULT on the
     * worker's reverse hop list; tree_root[tree id]: the tree's root switch multicasts the RESULTs;
     * tree_recovery[tree id]: a re-planned job's recovery tree (no switch aggregates, weight 0) */
    uint32_t n_workers, n_answer_trees;
    uint32_t *worker_ips;
    uint8_t *answer_tmpls;
    uint64_t *answer_off; /* n_answer_trees * n_workers + 1 offsets into answer_tmpls */
    uint8_t tree_index[256], tree_root[256], tree_recovery[256];
    /* ring / parameter server */
    uint64_t sent, received, total_send, total_recv, per_step;
    uint32_t n_peers;
    uint32_t *ps_count; /* server: contributions heard per packet index */
    uint8_t *ps_tmpls;  /* server: one template per worker */
};

typedef struct {
    uint32_t kind;
    void *sw;
    uint32_t n_ports;
    int32_t port_link[MAX_PORTS]; /* egress link direction per port, -1 none */
    host h;
    uint64_t processed, unconnected;
    /* ports whose queue depth the switch was told is > 0, refreshed before each frame it processes */
    uint16_t n_deep, deep[MAX_PORTS];
    uint8_t is_deep[MAX_PORTS];
    uint8_t dead; /* a killed switch (sim_set_node_dead): frames reaching it are dropped */
} node;

/* a frame for an external host (owned by the outbox until the next sim_run_external) */
typedef struct {
    uint8_t *frame;
    uint32_t node, len;
} ext_frame;

typedef struct sim {
    event *heap;
    uint64_t heap_len, heap_cap, order, events;
    int64_t now;
    node *nodes;
    uint32_t n_nodes, cap_nodes;
    link_dir *links;
    uint32_t n_links, cap_links;
    process_fn process;
    free_fn free_records;
    depth_fn set_depth; /* the runtime's ss_port_queue_depth (NULL: switches see empty queues) */
    uint64_t rng[2];
    ina_layout lay;
    const int32_t *val_a, *val_b, *expected; /* INA values and their expected sum */
    uint64_t n_values;
    uint32_t hosts_pending; /* hosts with work that have not finished */
    int64_t finished_at;
    /* frames delivered to HOST_EXTERNAL nodes at time out_t, handed to Python (sim_run_external) */
    ext_frame *outbox;
    uint32_t out_n, out_cap;
    int64_t out_t;
    uint32_t depth_cell_bytes; /* > 0: switches read their queues in cells of this size (TNA), else packets */
} sim;

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_next(sim *s) { /* xorshift128+ */
    uint64_t a = s->rng[0];
    const uint64_t b = s->rng[1];
    s->rng[0] = b;
    a ^= a << 23;
    s->rng[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
    return s->rng[1] + b;
}

static double rng_unit(sim *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

static inline uint32_t get_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void put_be16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline uint32_t get_be16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }

static int ev_less(const event *a, const event *b) { return a->t < b->t || (a->t == b->t && a->order < b->order); }

static int push(sim *s, event e) {
    if (s->heap_len == s->heap_cap) {
        uint64_t cap = s->heap_cap ? s->heap_cap * 2 : 1024;
        event *h = realloc(s->heap, cap * sizeof *h);
        if (!h) return -1;
        s->heap = h;
        s->heap_cap = cap;
    }
    e.order = s->order++;
    uint64_t i = s->heap_len++;
    while (i) {
        uint64_t parent = (i - 1) / 2;
        if (!ev_less(&e, &s->heap[parent])) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = e;
    return 0;
}

static event pop(sim *s) {
    event top = s->heap[0], last = s->heap[--s->heap_len];
    uint64_t i = 0, n = s->heap_len;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ev_less(&s->heap[c + 1], &s->heap[c])) c++;
        if (!ev_less(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

/* Bytes offered to a link direction and not yet sent (the frame on the wire counts its remaining bytes). */
static int64_t link_waiting(const sim *s, const link_dir *l) {
    int64_t backlog_ps = l->busy_until > s->now ? l->busy_until - s->now : 0;
    return (int64_t)((double)backlog_ps * l->bandwidth_bps / 8e12);
}

/* What a switch's egress reads for `packets` frames of `frame_len` bytes queued: packets (v1model, as
 * BMv2), or whole cells per frame (TNA, softswitch/runtime/tna.py's queue_cells), saturated to bit<19>. */
static uint32_t depth_reading(const sim *s, uint32_t packets, uint32_t frame_len) {
    uint64_t v = packets;
    if (s->depth_cell_bytes && packets)
        v = (uint64_t)packets * ((frame_len + s->depth_cell_bytes - 1) / s->depth_cell_bytes);
    return v > 0x7FFFF ? 0x7FFFF : (uint32_t)v;
}

/* Hands a frame (owned by the callee from now on) to the link direction on node's port. */
static void transmit(sim *s, uint32_t n, uint32_t port, uint8_t *frame, uint32_t len) {
    node *nd = &s->nodes[n];
    int32_t li = port < MAX_PORTS ? nd->port_link[port] : -1;
    if (li < 0) {
        nd->unconnected++;
        free(frame);
        return;
    }
    link_dir *l = &s->links[li];
    if (!l->up) {
        l->lost++;
        free(frame);
        return;
    }
    int64_t waiting = link_waiting(s, l); /* bytes not yet sent */
    int64_t over = l->queue_backlog_only ? waiting : waiting + (int64_t)len;
    if (l->queue_bytes >= 0 && over > l->queue_bytes) {
        l->queue_drops++;
        free(frame);
        return;
    }
    int copies = 1;
    if (l->duplicate > 0 && rng_unit(s) < l->duplicate) copies = 2, l->duplicated++;
    for (int c = 0; c < copies; c++) {
        uint8_t *f = frame;
        if (c + 1 < copies) { /* the duplicate's own copy; the last copy keeps the frame */
            f = malloc(len ? len : 1);
            if (!f) continue;
            memcpy(f, frame, len);
        }
        waiting = link_waiting(s, l);
        if ((uint64_t)waiting + len > l->max_queue) l->max_queue = (uint64_t)waiting + len;
        int64_t start = l->busy_until > s->now ? l->busy_until : s->now;
        l->busy_until = start + (int64_t)((double)len * 8e12 / l->bandwidth_bps + 0.5);
        l->last_len = len;
        if (nd->kind == NODE_SWITCH && s->set_depth && nd->sw) { /* the egress queue as enq_qdepth sees it */
            s->set_depth(nd->sw, port, depth_reading(s, (uint32_t)((waiting + len + len - 1) / len), len));
            if (!nd->is_deep[port]) nd->is_deep[port] = 1, nd->deep[nd->n_deep++] = (uint16_t)port;
        }
        l->packets++;
        l->bytes += len;
        if (l->loss > 0 && rng_unit(s) < l->loss) {
            l->lost++;
            free(f);
            continue;
        }
        int64_t arrival = l->busy_until + l->delay_ps;
        if (l->reorder > 0 && rng_unit(s) < l->reorder) {
            arrival += (int64_t)(rng_unit(s) * (double)l->reorder_delay_ps);
            l->reordered++;
        }
        event e = {arrival, 0, EV_FRAME, l->dst_node, l->dst_port, len, f};
        if (push(s, e)) free(f);
    }
}

static void send_copy(sim *s, uint32_t n, const uint8_t *tmpl, uint32_t len) {
    uint8_t *f = malloc(len);
    if (!f) return;
    memcpy(f, tmpl, len);
    transmit(s, n, 0, f, len);
}

static void timer_at(sim *s, uint32_t n, int64_t t, uint32_t kind) {
    event e = {t, 0, EV_TIMER, n, kind, 0, NULL};
    push(s, e);
}

/* Tells switch n the depth of its queues that were deep, as they are now (they drained since). */
static void refresh_depths(sim *s, uint32_t n) {
    node *nd = &s->nodes[n];
    for (uint32_t i = 0; i < nd->n_deep;) {
        uint32_t port = nd->deep[i];
        const link_dir *l = &s->links[nd->port_link[port]];
        int64_t waiting = link_waiting(s, l);
        uint32_t packets = l->last_len ? (uint32_t)((waiting + l->last_len - 1) / l->last_len) : 0;
        s->set_depth(nd->sw, port, depth_reading(s, packets, l->last_len));
        if (packets) {
            i++;
        } else {
            nd->is_deep[port] = 0;
            nd->deep[i] = nd->deep[--nd->n_deep];
        }
    }
}

/* The IPv4 header checksum recomputed (after the agent rewrote its TOS byte). */
static void ipv4_checksum(uint8_t *ip) {
    ip[10] = ip[11] = 0;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += get_be16(ip + i);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    put_be16(ip + 10, ~sum & 0xFFFF);
}

/* ------------------------------------------------------------------ INA worker */

/* A chunk's retransmission timeout after `attempts` resends. Fixed: the timeout doubling per resend up
 * to 64x. Adaptive (the agent's rto): twice the smoothed RTT capped at RTT_CAP_OVER_MIN lowest round
 * trips, at least the timeout, doubled per resend and per timeout since the last fresh sample (Karn),
 * at most rto_cap times that base. */
static int64_t ina_rto(const host *h, uint32_t attempts) {
    if (!h->adaptive) return h->timeout_ps << (attempts < 6 ? attempts : 6);
    double base = (double)h->timeout_ps;
    if (h->srtt_ps >= 0) {
        double est = 2.0 * h->srtt_ps, cap = RTT_CAP_OVER_MIN * (double)h->min_rtt_ps;
        est = est < cap ? est : cap;
        base = est > base ? est : base;
    }
    double mult = (double)(1ull << (attempts < 30 ? attempts : 30)) * h->backoff;
    return (int64_t)(base * (mult < h->rto_cap ? mult : h->rto_cap));
}

static void ina_send_chunk(sim *s, uint32_t n, uint32_t j, int retx) {
    host *h = &s->nodes[n].h;
    const wtree *t = &h->trees[h->tree_of[j]];
    const ina_layout *L = &s->lay;
    uint8_t *f = malloc(t->tmpl_len);
    if (!f) return;
    memcpy(f, t->tmpl, t->tmpl_len);
    uint32_t i = h->local[j], seq = j + 1, slot = i % h->pool, shadow = (i / h->pool) & 1;
    put_be32(f + L->seq, seq);
    put_be16(f + L->slot_word, (shadow << 15) | slot);
    if (retx) f[L->flags] |= (uint8_t)L->flag_retx;
    uint8_t *v = f + t->tmpl_len - 4 * L->k;
    uint64_t base = (uint64_t)j * L->k;
    for (uint32_t x = 0; x < L->k; x++) {
        uint32_t value = (uint32_t)h->va[base + x] + (uint32_t)h->coeff * (uint32_t)h->vb[base + x];
        put_be32(v + 4 * x, value);
    }
    h->sent_at[j] = s->now;
    h->deadline[j] = s->now + ina_rto(h, h->attempts[j]);
    if (h->done[j]) h->sent_after_done++;
    if (t->moved && h->via_recovery && !h->done[j] && !h->via_recovery[j]) h->via_recovery[j] = 1, h->recovery_chunks++;
    transmit(s, n, 0, f, t->tmpl_len);
}

static void ina_arm(sim *s, uint32_t n) {
    host *h = &s->nodes[n].h;
    if (h->timer_pending || h->results >= h->n_chunks) return;
    int64_t first = INT64_MAX;
    for (uint32_t ti = 0; ti < h->n_trees; ti++) {
        const wtree *t = &h->trees[ti];
        for (uint32_t i = t->lowest; i < t->next; i++) {
            uint32_t j = t->chunks[i];
            if (!h->done[j] && h->deadline[j] < first) first = h->deadline[j];
        }
    }
    if (first == INT64_MAX) return;
    h->timer_pending = 1;
    timer_at(s, n, first, TIMER_RTO);
}

/* The pacer's bucket (worker/pacing.py, Pacer): tokens in bytes of frames, refilled at the rate; a
 * backlogged sender keeps up to BURST_S of them, one that waited WAKE_S of them (both at least
 * MIN_BURST_PACKETS frames). */
static void pace_refill(sim *s, wtree *t) {
    double frame = (double)t->tmpl_len, least = MIN_BURST_PACKETS * frame;
    double burst = t->rate * BURST_S, batch = t->rate * WAKE_S;
    double cap = t->backlogged ? (burst > least ? burst : least) : (batch > least ? batch : least);
    double tokens = t->tokens + t->rate * (double)(s->now - t->stamp) / PS_PER_S;
    t->tokens = tokens < cap ? tokens : cap;
    t->stamp = s->now;
}

static void pace_bound(wtree *t) {
    if (t->rate < MIN_RATE_SHARE * t->ceiling) t->rate = MIN_RATE_SHARE * t->ceiling;
    if (t->rate > t->ceiling) t->rate = t->ceiling;
}

/* Sends what tree ti's window (and pacer) allow now. */
static void ina_fill_tree(sim *s, uint32_t n, uint32_t ti) {
    host *h = &s->nodes[n].h;
    wtree *t = &h->trees[ti];
    uint32_t allowed = h->window;
    if (h->adaptive) {
        double w = t->win < (double)h->pool ? t->win : (double)h->pool;
        allowed = w < 1.0 ? 1 : (uint32_t)w;
    }
    uint64_t end64 = (uint64_t)t->lowest + allowed;
    uint32_t end = end64 < t->n ? (uint32_t)end64 : t->n;
    if (t->ceiling > 0 && t->next < end) { /* Pacer.take: as many as the bucket holds tokens for */
        pace_refill(s, t);
        double frame = (double)t->tmpl_len;
        uint32_t want = end - t->next;
        double fit = (t->tokens + 1e-6) / frame;
        uint32_t ok = fit <= 0 ? 0 : (fit >= want ? want : (uint32_t)fit);
        t->tokens -= ok * frame;
        t->backlogged = ok < want;
        if (ok < want && !t->pace_pending) { /* Pacer.wait: WAKE_S of tokens, at most what is wanted */
            double need = (double)(want - ok) * frame, wake = t->rate * WAKE_S;
            need = need < wake ? need : wake;
            need = need > frame ? need : frame;
            double wait = (need - t->tokens) / t->rate;
            wait = wait > MIN_WAIT_S ? wait : MIN_WAIT_S;
            t->pace_pending = 1;
            timer_at(s, n, s->now + (int64_t)(wait * PS_PER_S), TIMER_PACE + ti);
        }
        end = t->next + ok;
    }
    while (t->next < end) {
        ina_send_chunk(s, n, t->chunks[t->next], 0);
        t->next++;
    }
}

static void ina_fill_window(sim *s, uint32_t n) {
    host *h = &s->nodes[n].h;
    for (uint32_t ti = 0; ti < h->n_trees; ti++) ina_fill_tree(s, n, ti);
    ina_arm(s, n);
}

/* A retransmission timeout on tree t: its window halves (once per first-send RTO), its pacer's rate too. */
static void ina_shrink(sim *s, host *h, wtree *t) {
    if (s->now - t->last_shrink < ina_rto(h, 0)) return;
    t->last_shrink = s->now;
    h->halvings++;
    if (t->ceiling > 0) t->rate /= 2.0, pace_bound(t);
    t->thresh = t->win / 2 > h->min_win ? t->win / 2 : h->min_win;
    t->win = t->thresh;
}

static void ina_worker_timer(sim *s, uint32_t n, uint32_t kind) {
    host *h = &s->nodes[n].h;
    if (h->gave_up || h->results >= h->n_chunks) return;
    if (kind >= TIMER_PACE) {
        uint32_t ti = kind - TIMER_PACE;
        if (ti >= h->n_trees) return;
        h->trees[ti].pace_pending = 0;
        ina_fill_tree(s, n, ti);
        ina_arm(s, n);
        return;
    }
    h->timer_pending = 0;
    int timed_out = 0;
    for (uint32_t ti = 0; ti < h->n_trees; ti++) {
        wtree *t = &h->trees[ti];
        uint32_t resent = 0;
        for (uint32_t i = t->lowest; i < t->next; i++) {
            uint32_t j = t->chunks[i];
            if (h->done[j] || h->deadline[j] > s->now) continue;
            if (h->attempts[j] >= h->max_resends) { /* give up: the run goes on without this worker */
                h->gave_up = 1;
                s->hosts_pending--;
                return;
            }
            if (h->adaptive && !timed_out) { /* the agent's timer event: back off once */
                timed_out = 1;
                h->timeouts++;
                h->backoff = 2 * h->backoff < h->rto_cap ? 2 * h->backoff : h->rto_cap;
            }
            if (h->adaptive && !resent) ina_shrink(s, h, t); /* each tree with due chunks halves */
            h->attempts[j]++;
            h->resends++;
            resent++;
            ina_send_chunk(s, n, j, 1);
        }
        if (resent && t->ceiling > 0) { /* Pacer.spend: resends leave at once, later sends wait for them */
            pace_refill(s, t);
            t->tokens -= (double)resent * t->tmpl_len;
        }
    }
    ina_arm(s, n);
}

/* One result of a paced tree's epoch (Pacer.on_results): once per smoothed round trip, DCTCP's alpha
 * moves to the epoch's congested share and the rate is cut by alpha / 2, or grows additively. */
static void pace_on_result(sim *s, host *h, wtree *t, int congested) {
    t->epoch_results++;
    t->epoch_congested += congested != 0;
    double rtt = h->srtt_ps > 0 ? h->srtt_ps / PS_PER_S : 0.0;
    if ((double)(s->now - t->epoch_start) / PS_PER_S < (rtt > MIN_EPOCH_S ? rtt : MIN_EPOCH_S)) return;
    double share = (double)t->epoch_congested / (double)t->epoch_results;
    t->alpha = (1.0 - ALPHA_GAIN) * t->alpha + ALPHA_GAIN * share;
    if (t->epoch_congested) {
        t->rate *= 1.0 - t->alpha / 2.0;
        h->rate_cuts++;
    } else {
        t->rate += INCREASE_SHARE * t->ceiling;
    }
    pace_bound(t);
    t->epoch_start = s->now, t->epoch_results = 0, t->epoch_congested = 0;
}

/* The agent's reaction to chunk j's first result: an RTT sample (first sends only, Karn), its tree's
 * window growth (slow start below the threshold, one chunk per round trip above), the pacer's rate law. */
static void ina_adapt(sim *s, host *h, uint32_t j, const uint8_t *f) {
    wtree *t = &h->trees[h->tree_of[j]];
    int congested = 0;
    if (h->attempts[j] == 0) {
        int64_t sample = s->now - h->sent_at[j];
        h->srtt_ps = h->srtt_ps < 0 ? (double)sample : (1.0 - RTT_GAIN) * h->srtt_ps + RTT_GAIN * (double)sample;
        if (!h->min_rtt_ps || sample < h->min_rtt_ps) h->min_rtt_ps = sample;
        h->backoff = 1.0;
        double late = DELAY_TARGET_S * PS_PER_S > (double)h->min_rtt_ps ? DELAY_TARGET_S * PS_PER_S : (double)h->min_rtt_ps;
        if (!h->ecn) congested = (double)sample > (double)h->min_rtt_ps + late;
    }
    if (h->ecn) congested = (f[s->lay.ip_tos] & 3) == 3;
    h->congested += congested != 0;
    if (t->ceiling > 0) pace_on_result(s, h, t, congested);
    t->win += t->win < t->thresh ? 1.0 : 1.0 / t->win;
    if (t->win > h->pool) t->win = h->pool;
}

static void ina_worker_receive(sim *s, uint32_t n, const uint8_t *f, uint32_t len) {
    host *h = &s->nodes[n].h;
    const ina_layout *L = &s->lay;
    if (h->gave_up) return;
    if (len < L->header_end + 4 * L->k || (f[L->b0] & 0x0F) != L->pkt_result) return;
    uint32_t seq = get_be32(f + L->seq);
    if (seq == 0 || seq > h->n_chunks) return;
    uint32_t j = seq - 1;
    if (h->done[j]) {
        h->duplicates++;
        return;
    }
    const uint8_t *v = f + len - 4 * L->k;
    const int32_t *want = h->vexp + (uint64_t)j * L->k;
    for (uint32_t i = 0; i < L->k; i++)
        if ((int32_t)get_be32(v + 4 * i) != want[i]) {
            h->mismatches++;
            break;
        }
    h->done[j] = 1;
    h->results++;
    if (h->adaptive) ina_adapt(s, h, j, f);
    if (h->results == h->n_chunks) {
        h->done_at = s->now;
        s->hosts_pending--;
        return;
    }
    uint32_t ti = h->tree_of[j];
    wtree *t = &h->trees[ti];
    while (t->lowest < t->n && h->done[t->chunks[t->lowest]]) t->lowest++;
    ina_fill_tree(s, n, ti);
    ina_arm(s, n);
}

/* ------------------------------------------------------------------ INA server */

/* Writes cell's chunk (seq, slot, sum, the congestion echo) into a copy of a RESULT template and sends it. */
static void ina_server_emit(sim *s, uint32_t n, const uint8_t *tmpl, uint32_t len, uint32_t cell, uint32_t seq,
                            uint32_t slot_word, int set_tree) {
    host *h = &s->nodes[n].h;
    const ina_layout *L = &s->lay;
    uint8_t *f = malloc(len);
    if (!f) return;
    memcpy(f, tmpl, len);
    put_be32(f + L->seq, seq);
    put_be16(f + L->slot_word, slot_word);
    if (set_tree) f[L->tree_id] = h->cell_tree[cell];
    const int32_t *acc = h->cell_acc + (uint64_t)cell * L->k;
    for (uint32_t i = 0; i < L->k; i++) put_be32(f + len - 4 * L->k + 4 * i, (uint32_t)acc[i]);
    if (h->cell_ce[cell] && (f[L->ip_tos] & 3)) { /* the server agent echoes its sum's congestion */
        f[L->ip_tos] |= 3;
        ipv4_checksum(f + L->ip_header);
    }
    h->results_sent++;
    transmit(s, n, 0, f, len);
}

/* The chunk's multicast RESULT down its tree (the server agent's: to the lowest rank's address, MCAST). */
static void ina_server_send(sim *s, uint32_t n, uint32_t cell, uint32_t seq, uint32_t slot_word) {
    host *h = &s->nodes[n].h;
    ina_server_emit(s, n, h->tmpl, h->tmpl_len, cell, seq, slot_word, 1);
}

/* The chunk's result to the worker whose GRAD `f` is (its source address) only, as a unicast RESULT on
 * that worker's reverse hop list: the server agent's answer to a resend, in either result mode. */
static void ina_server_answer(sim *s, uint32_t n, uint32_t cell, uint32_t seq, uint32_t slot_word, const uint8_t *f) {
    host *h = &s->nodes[n].h;
    /* on the tree the resend came by (a recovery-tree GRAD of a chunk another tree completed: the recovery
     * tree's reverse path, the old one's switches may be dead) */
    uint32_t ip = get_be32(f + s->lay.ip_header + 12), ti = h->tree_index[f[s->lay.tree_id]];
    if (ti >= h->n_answer_trees) ti = h->tree_index[h->cell_tree[cell]];
    uint32_t lo = 0, hi = h->n_workers;
    while (lo < hi) { /* the worker of that address */
        uint32_t mid = (lo + hi) / 2;
        if (h->worker_ips[mid] < ip) lo = mid + 1;
        else hi = mid;
    }
    if (lo >= h->n_workers || h->worker_ips[lo] != ip || ti >= h->n_answer_trees) {
        h->unknown_sources++; /* no worker's address, or a tree not served here: nobody to answer */
        return;
    }
    uint64_t at = (uint64_t)ti * h->n_workers + lo;
    h->answers++;
    ina_server_emit(s, n, h->answer_tmpls + h->answer_off[at], (uint32_t)(h->answer_off[at + 1] - h->answer_off[at]), cell,
                    seq, slot_word, 0);
}

/* A GRAD at the server (server/agent.py): a contribution to its chunk's sum, counted once per child. A
 * completed sum goes down as the multicast RESULT; on a tree whose root switch multicasts the RESULTs
 * itself the completing GRAD is the root's copy (MCAST): kept, nothing sent (or a resend the root passed
 * up: answered to its sender). A resend (RETX) of a finished chunk is answered to its sender only. */
static void ina_server_receive(sim *s, uint32_t n, const uint8_t *f, uint32_t len) {
    host *h = &s->nodes[n].h;
    const ina_layout *L = &s->lay;
    /* a GRAD that reached the server carries one hop entry: the server's own (fan-in, child) */
    if (len < L->header_end + 8 + 4 * L->k || (f[L->b0] & 0x0F) != L->pkt_grad) return;
    h->grads++;
    uint32_t seq = get_be32(f + L->seq), slot_word = get_be16(f + L->slot_word);
    uint32_t fan_in = f[L->hop0_fan_in], child = f[L->hop0_child];
    if (child >= fan_in) return; /* (also fan-in 0) the server agent's bad_child */
    uint32_t cell = seq % h->ring, tree = f[L->tree_id];
    int32_t *acc = h->cell_acc + (uint64_t)cell * L->k;
    if (h->cell_seq[cell] == (int64_t)seq && h->cell_tree[cell] != tree) { /* the chunk on another tree */
        if (h->tree_recovery[tree]) {
            if (h->cell_done[cell]) { /* completed there (a root's copy, a sum sent): the result to this sender */
                h->answered_from_other_tree++;
                ina_server_answer(s, n, cell, seq, slot_word, f);
                return;
            }
            h->cell_seq[cell] = -1; /* the old tree's partial sum: the recovery tree sums the chunk afresh */
        } else if (h->tree_recovery[h->cell_tree[cell]]) {
            /* a dead tree's late GRAD of a chunk the recovery tree sums: dropped, unless it is the root's copy
             * of the completed sum (some workers have that result and will not send the chunk again) */
            if (h->cell_done[cell] || !(f[L->flags] & L->flag_mcast)) return;
            h->cell_seq[cell] = -1;
        }
    }
    if (h->cell_seq[cell] != (int64_t)seq) {
        h->cell_seq[cell] = seq;
        memset(h->cell_heard + (uint64_t)cell * HEARD_WORDS, 0, HEARD_WORDS * sizeof *h->cell_heard);
        h->cell_count[cell] = 0;
        h->cell_done[cell] = 0;
        h->cell_ce[cell] = 0;
        h->cell_tree[cell] = f[L->tree_id];
        memset(acc, 0, sizeof(int32_t) * L->k);
    }
    if (h->cell_done[cell]) { /* a resend of a finished chunk: the result again, to its sender; else a duplicate */
        if (f[L->flags] & L->flag_retx) ina_server_answer(s, n, cell, seq, slot_word, f);
        else h->duplicates++;
        return;
    }
    uint64_t *heard = h->cell_heard + (uint64_t)cell * HEARD_WORDS + child / 64, bit = 1ull << (child % 64);
    if (*heard & bit) { /* this child's contribution is in the sum already */
        h->duplicates++;
        return;
    }
    *heard |= bit;
    h->cell_count[cell]++;
    if ((f[L->ip_tos] & 3) == 3) h->cell_ce[cell] = 1;
    const uint8_t *v = f + len - 4 * L->k;
    for (uint32_t i = 0; i < L->k; i++) acc[i] = (int32_t)((uint32_t)acc[i] + get_be32(v + 4 * i));
    if (h->cell_count[cell] >= fan_in) {
        h->cell_done[cell] = 1;
        if (!h->tree_root[h->cell_tree[cell]]) {
            ina_server_send(s, n, cell, seq, slot_word);
        } else if (f[L->flags] & L->flag_mcast) {
            h->copies++; /* the root's copy: its workers have the result */
        } else {
            ina_server_answer(s, n, cell, seq, slot_word, f);
        }
    }
}

/* ------------------------------------------------------------------ ring and parameter server
 * Ring (gloo's ring all-reduce, pipelined per packet): 2(N-1) steps of `per_step` packets to the next
 * rank; packet p of step k leaves once packet p of step k-1 arrived from the previous rank (step 0 at
 * once). PS: every worker sends `per_step` packets to the server; the server sends packet p to every
 * worker once all N contributions of p arrived. Payload bytes are the templates' (sums not modelled). */

/* A bulk sender's pacing: like a socket over a qdisc, it writes while fewer than PACE_BYTES wait in its
 * link's transmit queue, else it waits (a host timer) until they would fit, so a sender's memory stays
 * bounded whatever it has to send. */
#define PACE_BYTES (64 * 1024)

/* 1 when the host may put a frame of len bytes on its link now; else arms its pacing timer, returns 0 */
static int paced(sim *s, uint32_t n, uint32_t len) {
    node *nd = &s->nodes[n];
    int32_t li = nd->port_link[0];
    if (li < 0) return 1;
    const link_dir *l = &s->links[li];
    int64_t waiting = link_waiting(s, l);
    if (waiting + (int64_t)len <= PACE_BYTES) return 1;
    if (!nd->h.timer_pending) {
        int64_t excess = waiting + (int64_t)len - PACE_BYTES;
        int64_t t = s->now + (int64_t)((double)excess * 8e12 / l->bandwidth_bps) + 1;
        nd->h.timer_pending = 1;
        timer_at(s, n, t, TIMER_RTO);
    }
    return 0;
}

static void ring_pump(sim *s, uint32_t n) {
    host *h = &s->nodes[n].h;
    while (h->sent < h->total_send && (h->sent < h->per_step || h->received + h->per_step > h->sent)) {
        if (!paced(s, n, h->tmpl_len)) return;
        send_copy(s, n, h->tmpl, h->tmpl_len);
        h->sent++;
    }
}

static void ring_receive(sim *s, uint32_t n) {
    host *h = &s->nodes[n].h;
    h->received++;
    if (h->received == h->total_recv) {
        h->done_at = s->now;
        s->hosts_pending--;
    }
    ring_pump(s, n);
}

static void ps_worker_receive(sim *s, uint32_t n) {
    host *h = &s->nodes[n].h;
    if (++h->received == h->total_recv) {
        h->done_at = s->now;
        s->hosts_pending--;
    }
}

static void ps_server_receive(sim *s, uint32_t n, const uint8_t *f, uint32_t len) {
    host *h = &s->nodes[n].h;
    /* the packet index rides in the first 4 bytes of the UDP payload */
    if (len < s->lay.udp_payload + 4) return;
    uint32_t p = get_be32(f + s->lay.udp_payload);
    if (p >= h->per_step) return;
    if (++h->ps_count[p] == h->n_peers)
        for (uint32_t w = 0; w < h->n_peers; w++) send_copy(s, n, h->ps_tmpls + (uint64_t)w * h->tmpl_len, h->tmpl_len);
}

static void ps_worker_start(sim *s, uint32_t n) {
    host *h = &s->nodes[n].h;
    while (h->sent < h->total_send) {
        if (!paced(s, n, h->tmpl_len)) return;
        uint8_t *f = malloc(h->tmpl_len);
        if (!f) return;
        memcpy(f, h->tmpl, h->tmpl_len);
        put_be32(f + s->lay.udp_payload, (uint32_t)h->sent);
        transmit(s, n, 0, f, h->tmpl_len);
        h->sent++;
    }
}

static void host_timer(sim *s, uint32_t n, uint32_t kind) {
    host *h = &s->nodes[n].h;
    switch (h->kind) {
    case HOST_INA_WORKER: ina_worker_timer(s, n, kind); break;
    case HOST_RING: h->timer_pending = 0, ring_pump(s, n); break;
    case HOST_PS_WORKER:
    case HOST_SENDER: h->timer_pending = 0, ps_worker_start(s, n); break;
    default: break;
    }
}

/* ------------------------------------------------------------------ the loop */

static void outbox_push(sim *s, uint32_t n, uint8_t *frame, uint32_t len);

static void deliver(sim *s, event *e) {
    node *nd = &s->nodes[e->node];
    if (nd->dead) { /* a killed switch neither forwards nor counts */
        free(e->frame);
        return;
    }
    nd->processed++;
    if (nd->kind == NODE_SWITCH) {
        uint8_t *rec = NULL;
        if (s->set_depth && nd->n_deep) refresh_depths(s, e->node);
        int64_t size = nd->sw ? s->process(nd->sw, e->port, e->frame, e->len, &rec) : 0;
        free(e->frame);
        int64_t off = 0;
        while (off + 24 <= size) {
            const uint32_t *hdr = (const uint32_t *)(rec + off);
            uint32_t kind = hdr[0], len = hdr[2];
            int32_t port = (int32_t)hdr[1];
            if (kind == 1 && port >= 0) { /* SS_REC_FRAME */
                uint8_t *f = malloc(len ? len : 1);
                if (f) {
                    memcpy(f, rec + off + 24, len);
                    transmit(s, e->node, (uint32_t)port, f, len);
                }
            }
            off += 24 + ((len + 7) & ~7u);
        }
        if (rec) s->free_records(rec);
        return;
    }
    host *h = &nd->h;
    switch (h->kind) {
    case HOST_INA_WORKER: ina_worker_receive(s, e->node, e->frame, e->len); break;
    case HOST_INA_SERVER: ina_server_receive(s, e->node, e->frame, e->len); break;
    case HOST_RING: ring_receive(s, e->node); break;
    case HOST_PS_WORKER:
    case HOST_SINK: ps_worker_receive(s, e->node); break;
    case HOST_PS_SERVER: ps_server_receive(s, e->node, e->frame, e->len); break;
    case HOST_EXTERNAL: outbox_push(s, e->node, e->frame, e->len); return; /* the outbox owns the frame */
    default: break;
    }
    free(e->frame);
}

/* Pops the earliest event and runs it at its time (both run loops). */
static void run_next_event(sim *s) {
    event e = pop(s);
    s->now = e.t;
    if (e.kind == EV_FRAME) {
        deliver(s, &e);
    } else {
        host_timer(s, e.node, e.port);
    }
}

/* Runs until every host with work finished, no event is left, or `until_ps` passed. Returns events run. */
EXPORT uint64_t sim_run(sim *s, int64_t until_ps) {
    uint64_t ran = 0;
    while (s->heap_len && s->hosts_pending) {
        if (s->heap[0].t > until_ps) { /* stopped at until_ps: what Python does now happens then */
            if (until_ps > s->now) s->now = until_ps;
            break;
        }
        run_next_event(s);
        ran++;
    }
    s->events += ran;
    if (!s->hosts_pending && !s->finished_at) s->finished_at = s->now;
    return ran;
}

/* ------------------------------------------------------------------ construction (from Python) */

EXPORT sim *sim_create(uint64_t seed, void *process, void *free_records) {
    sim *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->process = (process_fn)process;
    s->free_records = (free_fn)free_records;
    s->rng[0] = seed * 0x9E3779B97F4A7C15ull + 1;
    s->rng[1] = (seed ^ 0xD1B54A32D192ED03ull) | 1;
    return s;
}

static void host_free(host *h) {
    for (uint32_t ti = 0; ti < h->n_trees; ti++) free(h->trees[ti].tmpl), free(h->trees[ti].chunks);
    free(h->trees);
    free(h->tree_of);
    free(h->local);
    free(h->tmpl);
    free(h->done);
    free(h->sent_at);
    free(h->deadline);
    free(h->via_recovery);
    free(h->attempts);
    free(h->cell_seq);
    free(h->cell_heard);
    free(h->cell_count);
    free(h->cell_done);
    free(h->cell_ce);
    free(h->cell_tree);
    free(h->cell_acc);
    free(h->worker_ips);
    free(h->answer_tmpls);
    free(h->answer_off);
    free(h->ps_count);
    free(h->ps_tmpls);
    memset(h, 0, sizeof *h);
}

static void outbox_clear(sim *s);

EXPORT void sim_destroy(sim *s) {
    if (!s) return;
    outbox_clear(s);
    free(s->outbox);
    for (uint64_t i = 0; i < s->heap_len; i++) free(s->heap[i].frame);
    for (uint32_t i = 0; i < s->n_nodes; i++) host_free(&s->nodes[i].h);
    free(s->heap);
    free(s->nodes);
    free(s->links);
    free(s);
}

EXPORT int64_t sim_add_node(sim *s, uint32_t kind, void *sw) {
    if (s->n_nodes == s->cap_nodes) {
        uint32_t cap = s->cap_nodes ? s->cap_nodes * 2 : 64;
        node *nn = realloc(s->nodes, cap * sizeof *nn);
        if (!nn) return -1;
        s->nodes = nn;
        s->cap_nodes = cap;
    }
    node *nd = &s->nodes[s->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->kind = kind;
    nd->sw = sw;
    for (int i = 0; i < MAX_PORTS; i++) nd->port_link[i] = -1;
    return s->n_nodes++;
}

/* One direction src:src_port -> dst:dst_port. queue_bytes < 0: unbounded. Returns its index. */
EXPORT int64_t sim_add_link(sim *s, uint32_t src, uint32_t src_port, uint32_t dst, uint32_t dst_port, double bandwidth_bps,
                            int64_t delay_ps, int64_t queue_bytes, double loss) {
    if (src >= s->n_nodes || dst >= s->n_nodes || src_port >= MAX_PORTS || bandwidth_bps <= 0) return -1;
    if (s->n_links == s->cap_links) {
        uint32_t cap = s->cap_links ? s->cap_links * 2 : 128;
        link_dir *nl = realloc(s->links, cap * sizeof *nl);
        if (!nl) return -1;
        s->links = nl;
        s->cap_links = cap;
    }
    link_dir *l = &s->links[s->n_links];
    memset(l, 0, sizeof *l);
    l->dst_node = dst;
    l->dst_port = dst_port;
    l->bandwidth_bps = bandwidth_bps;
    l->delay_ps = delay_ps;
    l->queue_bytes = queue_bytes;
    l->loss = loss;
    l->up = 1;
    s->nodes[src].port_link[src_port] = (int32_t)s->n_links;
    return s->n_links++;
}

EXPORT void sim_set_link_up(sim *s, uint32_t link, int up) {
    if (link < s->n_links) s->links[link].up = up;
}

EXPORT void sim_set_link_loss(sim *s, uint32_t link, double loss) {
    if (link < s->n_links) s->links[link].loss = loss;
}

/* packets, bytes, lost, queue_drops, max_queue */
EXPORT void sim_link_stats(sim *s, uint32_t link, uint64_t *out) {
    link_dir *l = &s->links[link];
    out[0] = l->packets, out[1] = l->bytes, out[2] = l->lost, out[3] = l->queue_drops, out[4] = l->max_queue;
}

EXPORT void sim_set_layout(sim *s, const uint32_t *fields) { memcpy(&s->lay, fields, sizeof s->lay); }

EXPORT void sim_set_values(sim *s, const int32_t *a, const int32_t *b, const int32_t *expected, uint64_t n_values) {
    s->val_a = a, s->val_b = b, s->expected = expected, s->n_values = n_values;
}

static int set_template(host *h, const uint8_t *tmpl, uint32_t len) {
    free(h->tmpl);
    h->tmpl = malloc(len);
    if (!h->tmpl) return -1;
    memcpy(h->tmpl, tmpl, len);
    h->tmpl_len = len;
    return 0;
}

/* An INA worker of `n_chunks` chunks striped over `n_trees` trees (tree_of[j]: chunk j's tree, as the
 * agent's stripe() assigns them); each tree's frame template comes from sim_ina_worker_tree. A fixed
 * window of `window` chunks per tree and a fixed `timeout` until sim_ina_worker_agent. */
EXPORT int sim_ina_worker(sim *s, uint32_t n, uint32_t n_chunks, uint32_t pool, uint32_t window, int64_t timeout_ps,
                          uint32_t max_resends, int32_t coeff, const uint8_t *tree_of, uint32_t n_trees) {
    host *h = &s->nodes[n].h;
    host_free(h);
    if ((uint64_t)n_chunks * s->lay.k > s->n_values || !pool || !window || !n_trees || n_trees > 256) return -1;
    h->kind = HOST_INA_WORKER;
    h->va = s->val_a, h->vb = s->val_b, h->vexp = s->expected;
    h->n_chunks = n_chunks, h->pool = pool, h->window = window < pool ? window : pool;
    h->timeout_ps = timeout_ps, h->coeff = coeff, h->max_resends = max_resends;
    h->done = calloc(n_chunks + 1, 1);
    h->sent_at = calloc(n_chunks + 1, sizeof *h->sent_at);
    h->attempts = calloc(n_chunks + 1, sizeof *h->attempts);
    h->deadline = calloc(n_chunks + 1, sizeof *h->deadline);
    h->tree_of = malloc(n_chunks + 1);
    h->local = calloc(n_chunks + 1, sizeof *h->local);
    h->trees = calloc(n_trees, sizeof *h->trees);
    if (!h->done || !h->sent_at || !h->attempts || !h->deadline || !h->tree_of || !h->local || !h->trees) return -1;
    h->n_trees = n_trees;
    for (uint32_t j = 0; j < n_chunks; j++) {
        if (tree_of[j] >= n_trees) return -1;
        h->tree_of[j] = tree_of[j];
        h->local[j] = h->trees[tree_of[j]].n++;
    }
    for (uint32_t ti = 0; ti < n_trees; ti++) {
        wtree *t = &h->trees[ti];
        t->chunks = malloc((t->n + 1) * sizeof *t->chunks);
        if (!t->chunks) return -1;
        t->last_shrink = INT64_MIN / 2;
    }
    for (uint32_t j = 0; j < n_chunks; j++) h->trees[tree_of[j]].chunks[h->local[j]] = j;
    h->srtt_ps = -1.0, h->backoff = 1.0, h->rto_cap = 64.0;
    s->hosts_pending++;
    return 0;
}

/* Tree ti of an INA worker: the worker's GRAD on the tree's hop list, and its send rate (bytes/s of
 * frames, the plan's share for the tree; 0: not paced). */
EXPORT int sim_ina_worker_tree(sim *s, uint32_t n, uint32_t ti, const uint8_t *tmpl, uint32_t len, double rate_bytes_s) {
    host *h = &s->nodes[n].h;
    if (h->kind != HOST_INA_WORKER || ti >= h->n_trees || len < s->lay.header_end + 4 * s->lay.k) return -1;
    wtree *t = &h->trees[ti];
    free(t->tmpl);
    t->tmpl = malloc(len);
    if (!t->tmpl) return -1;
    memcpy(t->tmpl, tmpl, len);
    t->tmpl_len = len;
    t->ceiling = t->rate = rate_bytes_s;
    return 0;
}

/* The worker agent's congestion control for an INA worker set up by sim_ina_worker (worker/stream.py,
 * worker/pacing.py): per tree a congestion window of `window` chunks in slow start up to `threshold`,
 * halved on a timeout (not below `min_window`); the RTO from the smoothed RTT with Karn's backoff, at most
 * `rto_cap` times its base; the trees' pacers (sim_ina_worker_tree's rates) with the agent's rate law;
 * `ecn`: the frames are ECN-capable and a CE mark, not a late result, says congestion. */
EXPORT int sim_ina_worker_agent(sim *s, uint32_t n, double window, double threshold, double min_window, double rto_cap,
                                int ecn) {
    host *h = &s->nodes[n].h;
    if (h->kind != HOST_INA_WORKER || window < 1 || rto_cap < 1) return -1;
    h->adaptive = 1, h->ecn = ecn;
    h->min_win = min_window, h->rto_cap = rto_cap;
    for (uint32_t ti = 0; ti < h->n_trees; ti++) h->trees[ti].win = window, h->trees[ti].thresh = threshold;
    return 0;
}

/* A new version of INA worker n's plan mid-round (worker/stream.py, Round.trees_changed): each of its
 * trees with gone[ti] set is gone, so its chunks go over the recovery tree from now on (`tmpl`: the
 * worker's GRAD on the recovery tree's hop list; each chunk keeps its slot and shadow), those in flight
 * without a result at once, as resends (RETX); the tree's window and pacer carry on. Then, as resends too,
 * the chunks with their result from a pool before the first without one up to the last sent: a root that
 * died multicasting a RESULT may have left other workers and the server without it, and the recovery tree
 * sums such a chunk afresh from every worker (the server answers those it completed from its sum). A worker
 * that finished its round offers its last pool of each gone tree the same way (the agent's RoundTail). */
EXPORT int sim_ina_worker_replan(sim *s, uint32_t n, const uint8_t *gone, const uint8_t *tmpl, uint32_t len) {
    host *h = &s->nodes[n].h;
    if (h->kind != HOST_INA_WORKER || len < s->lay.header_end + 4 * s->lay.k) return -1;
    if (!h->replanned) {
        h->via_recovery = calloc(h->n_chunks + 1, 1);
        if (!h->via_recovery) return -1;
        h->replanned = 1;
        h->results_at_replan = h->results;
    }
    if (h->gave_up) return 0;
    int finished = h->results >= h->n_chunks;
    for (uint32_t ti = 0; ti < h->n_trees; ti++) {
        wtree *t = &h->trees[ti];
        if (!gone[ti]) continue;
        uint8_t *copy = malloc(len);
        if (!copy) return -1;
        memcpy(copy, tmpl, len);
        free(t->tmpl);
        t->tmpl = copy, t->tmpl_len = len; /* moved before: its chunks go over the newest recovery tree */
        if (t->moved) continue;
        t->moved = 1;
        for (uint32_t i = t->lowest; i < t->next; i++) {
            uint32_t j = t->chunks[i];
            if (h->done[j]) continue;
            h->chunks_moved++;
            ina_send_chunk(s, n, j, 1);
        }
        /* a finished tree: its last pool (RoundTail); else from a pool before the first without a result */
        uint32_t from = finished ? t->next : t->lowest;
        for (uint32_t i = from > h->pool ? from - h->pool : 0; i < t->next; i++) {
            uint32_t j = t->chunks[i];
            if (!h->done[j]) continue;
            h->finished_offered++;
            ina_send_chunk(s, n, j, 1);
        }
        if (!finished) ina_fill_tree(s, n, ti);
    }
    if (!finished) ina_arm(s, n);
    return 0;
}

EXPORT void sim_set_depth_fn(sim *s, void *fn) { s->set_depth = (depth_fn)fn; }

EXPORT int sim_ina_server(sim *s, uint32_t n, const uint8_t *tmpl, uint32_t len, uint32_t ring) {
    host *h = &s->nodes[n].h;
    host_free(h);
    if (set_template(h, tmpl, len) || !ring) return -1;
    h->kind = HOST_INA_SERVER;
    h->ring = ring;
    h->cell_seq = malloc(ring * sizeof *h->cell_seq);
    h->cell_heard = calloc((uint64_t)ring * HEARD_WORDS, sizeof *h->cell_heard);
    h->cell_count = calloc(ring, 1);
    h->cell_done = calloc(ring, 1);
    h->cell_ce = calloc(ring, 1);
    h->cell_tree = calloc(ring, 1);
    h->cell_acc = calloc((uint64_t)ring * s->lay.k, sizeof *h->cell_acc);
    if (!h->cell_seq || !h->cell_heard || !h->cell_count || !h->cell_done || !h->cell_ce || !h->cell_tree || !h->cell_acc) return -1;
    for (uint32_t i = 0; i < ring; i++) h->cell_seq[i] = -1;
    return 0;
}

/* The answers of INA server n to resends: `n_workers` worker addresses (ascending), `n_trees` trees
 * (tree_ids; flags[i] bit 0: tree i's root switch multicasts its RESULTs, bit 1: it is a re-planned job's
 * recovery tree) and a unicast RESULT template per
 * (tree, worker), tree-major, template i at tmpls[off[i] .. off[i + 1]). */
EXPORT int sim_ina_server_answers(sim *s, uint32_t n, uint32_t n_workers, const uint32_t *worker_ips, uint32_t n_trees,
                                  const uint8_t *tree_ids, const uint8_t *flags, const uint8_t *tmpls, const uint64_t *off) {
    host *h = &s->nodes[n].h;
    if (h->kind != HOST_INA_SERVER || !n_workers || !n_trees || n_trees > 255) return -1;
    uint64_t count = (uint64_t)n_trees * n_workers, bytes = off[count];
    for (uint64_t i = 0; i < count; i++)
        if (off[i + 1] < off[i] + s->lay.header_end + 4 * s->lay.k) return -1;
    for (uint32_t w = 1; w < n_workers; w++)
        if (worker_ips[w] <= worker_ips[w - 1]) return -1;
    free(h->worker_ips), free(h->answer_tmpls), free(h->answer_off);
    h->worker_ips = malloc(n_workers * sizeof *h->worker_ips);
    h->answer_tmpls = malloc(bytes ? bytes : 1);
    h->answer_off = malloc((count + 1) * sizeof *h->answer_off);
    if (!h->worker_ips || !h->answer_tmpls || !h->answer_off) return -1;
    memcpy(h->worker_ips, worker_ips, n_workers * sizeof *h->worker_ips);
    memcpy(h->answer_tmpls, tmpls, bytes);
    memcpy(h->answer_off, off, (count + 1) * sizeof *h->answer_off);
    h->n_workers = n_workers, h->n_answer_trees = n_trees;
    memset(h->tree_index, 0xFF, sizeof h->tree_index);
    memset(h->tree_root, 0, sizeof h->tree_root);
    memset(h->tree_recovery, 0, sizeof h->tree_recovery);
    for (uint32_t i = 0; i < n_trees; i++) {
        h->tree_index[tree_ids[i]] = (uint8_t)i;
        h->tree_root[tree_ids[i]] = flags[i] & 1;
        h->tree_recovery[tree_ids[i]] = (flags[i] >> 1) & 1;
    }
    return 0;
}

EXPORT int sim_ring_worker(sim *s, uint32_t n, const uint8_t *tmpl, uint32_t len, uint64_t per_step, uint32_t steps) {
    host *h = &s->nodes[n].h;
    host_free(h);
    if (set_template(h, tmpl, len) || !per_step) return -1;
    h->kind = HOST_RING;
    h->per_step = per_step, h->total_send = h->total_recv = per_step * steps;
    s->hosts_pending++;
    return 0;
}

EXPORT int sim_ps_worker(sim *s, uint32_t n, const uint8_t *tmpl, uint32_t len, uint64_t packets) {
    host *h = &s->nodes[n].h;
    host_free(h);
    if (set_template(h, tmpl, len) || !packets) return -1;
    h->kind = HOST_PS_WORKER;
    h->total_send = h->total_recv = packets;
    s->hosts_pending++;
    return 0;
}

/* A bulk transfer: the sender puts `packets` frames on its link at the start; the sink finishes when
 * it has received `packets` frames. */
EXPORT int sim_sender(sim *s, uint32_t n, const uint8_t *tmpl, uint32_t len, uint64_t packets) {
    host *h = &s->nodes[n].h;
    host_free(h);
    if (set_template(h, tmpl, len)) return -1;
    h->kind = HOST_SENDER;
    h->total_send = packets;
    return 0;
}

EXPORT int sim_sink(sim *s, uint32_t n, uint64_t packets) {
    host *h = &s->nodes[n].h;
    host_free(h);
    if (!packets) return -1;
    h->kind = HOST_SINK;
    h->total_recv = packets;
    s->hosts_pending++;
    return 0;
}

/* tmpls: n_workers frames of `len` bytes, one to each worker */
EXPORT int sim_ps_server(sim *s, uint32_t n, const uint8_t *tmpls, uint32_t len, uint32_t n_workers, uint64_t packets) {
    host *h = &s->nodes[n].h;
    host_free(h);
    h->kind = HOST_PS_SERVER;
    h->tmpl_len = len, h->n_peers = n_workers, h->per_step = packets;
    h->ps_tmpls = malloc((uint64_t)len * n_workers);
    h->ps_count = calloc(packets, sizeof *h->ps_count);
    if (!h->ps_tmpls || !h->ps_count) return -1;
    memcpy(h->ps_tmpls, tmpls, (uint64_t)len * n_workers);
    return 0;
}

/* Starts every host's sending at the current time. */
EXPORT void sim_start(sim *s) {
    for (uint32_t n = 0; n < s->n_nodes; n++) {
        if (s->nodes[n].kind != NODE_HOST) continue;
        switch (s->nodes[n].h.kind) {
        case HOST_INA_WORKER: ina_fill_window(s, n); break;
        case HOST_RING: ring_pump(s, n); break;
        case HOST_PS_WORKER:
        case HOST_SENDER: ps_worker_start(s, n); break;
        default: break;
        }
    }
}

/* done_at (ps, -1 if not finished), results, mismatches, resends, duplicates, grads, answers, processed,
 * then the agent's: timeouts, window halvings, rate cuts, congested results, window (milli-chunks),
 * rate (bytes/s), smoothed RTT (ps, -1: none), lowest RTT (ps), then the INA server's: root copies kept,
 * RESULTs sent, resends from no worker's address, recovery-tree GRADs answered from another tree's sum; then
 * an INA worker's re-plan: results it had then (-1: no re-plan), chunks moved, chunks without a result
 * sent over the recovery tree, sends of chunks that had their result, finished chunks offered at a re-plan */
EXPORT void sim_host_stats(sim *s, uint32_t n, int64_t *out) {
    node *nd = &s->nodes[n];
    host *h = &nd->h;
    int finished = h->kind == HOST_INA_WORKER ? h->results == h->n_chunks : h->total_recv && h->received == h->total_recv;
    out[0] = finished ? h->done_at : -1;
    out[1] = (int64_t)(h->kind == HOST_INA_WORKER ? h->results : h->received);
    out[2] = (int64_t)h->mismatches, out[3] = (int64_t)h->resends, out[4] = (int64_t)h->duplicates;
    out[5] = (int64_t)h->grads, out[6] = (int64_t)h->answers, out[7] = (int64_t)nd->processed;
    out[8] = (int64_t)h->timeouts, out[9] = (int64_t)h->halvings, out[10] = (int64_t)h->rate_cuts;
    out[11] = (int64_t)h->congested;
    out[12] = h->n_trees ? (int64_t)(h->trees[0].win * 1000) : 0, out[13] = h->n_trees ? (int64_t)h->trees[0].rate : 0;
    out[14] = h->adaptive ? (int64_t)h->srtt_ps : -1, out[15] = h->min_rtt_ps;
    out[16] = (int64_t)h->copies, out[17] = (int64_t)h->results_sent, out[18] = (int64_t)h->unknown_sources;
    out[19] = (int64_t)h->answered_from_other_tree;
    out[20] = h->replanned ? (int64_t)h->results_at_replan : -1, out[21] = (int64_t)h->chunks_moved;
    out[22] = (int64_t)h->recovery_chunks, out[23] = (int64_t)h->sent_after_done;
    out[24] = (int64_t)h->finished_offered;
}

/* now (ps), events, heap length, hosts pending */
EXPORT void sim_state(sim *s, int64_t *out) {
    out[0] = s->now, out[1] = (int64_t)s->events, out[2] = (int64_t)s->heap_len, out[3] = s->hosts_pending;
}

/* ------------------------------------------------------------------ external hosts (the in-process network)
 *
 * The in-process network runs its links and switches here and keeps its hosts in Python, where the real
 * agents run on a virtual clock (topologies/inprocess/sim_engine.py). A frame delivered to an external
 * host goes to the outbox; sim_run_external returns with every frame delivered at that instant, and Python
 * hands them to the hosts' handlers before it runs anything later. Frames the agents send enter at the
 * host's port at the current time (sim_inject).
 */

static void outbox_clear(sim *s) {
    for (uint32_t i = 0; i < s->out_n; i++) free(s->outbox[i].frame);
    s->out_n = 0;
}

static void outbox_push(sim *s, uint32_t n, uint8_t *frame, uint32_t len) {
    if (s->out_n == s->out_cap) {
        uint32_t cap = s->out_cap ? s->out_cap * 2 : 64;
        ext_frame *o = realloc(s->outbox, cap * sizeof *o);
        if (!o) {
            free(frame);
            return;
        }
        s->outbox = o;
        s->out_cap = cap;
    }
    if (!s->out_n) s->out_t = s->now;
    ext_frame f = {frame, n, len};
    s->outbox[s->out_n++] = f;
}

/* Node n is a host whose frames go out to Python. */
EXPORT int sim_external_host(sim *s, uint32_t n) {
    if (n >= s->n_nodes || s->nodes[n].kind != NODE_HOST) return -1;
    host *h = &s->nodes[n].h;
    host_free(h);
    h->kind = HOST_EXTERNAL;
    return 0;
}

/* The switches' pipeline entry points, when the core was created before the first switch was known. */
EXPORT void sim_set_process(sim *s, void *process, void *free_records) {
    s->process = (process_fn)process;
    s->free_records = (free_fn)free_records;
}

/* Switches read their queues in cells of `cell_bytes` (TNA's enq_qdepth); 0: in packets (v1model). */
EXPORT void sim_set_depth_cells(sim *s, uint32_t cell_bytes) { s->depth_cell_bytes = cell_bytes; }

/* A killed switch (dead != 0) drops every frame that reaches it; its links still carry frames to it. */
EXPORT void sim_set_node_dead(sim *s, uint32_t n, int dead) {
    if (n < s->n_nodes) s->nodes[n].dead = dead ? 1 : 0;
}

/* Every parameter of link direction `link` (the in-process network's LinkParams), from now on. */
EXPORT int sim_set_link_params(sim *s, uint32_t link, double bandwidth_bps, int64_t delay_ps, int64_t queue_bytes,
                               double loss, double duplicate, double reorder, int64_t reorder_delay_ps,
                               int queue_backlog_only) {
    if (link >= s->n_links || bandwidth_bps <= 0 || delay_ps < 0 || reorder_delay_ps < 0) return -1;
    link_dir *l = &s->links[link];
    l->bandwidth_bps = bandwidth_bps, l->delay_ps = delay_ps, l->queue_bytes = queue_bytes, l->loss = loss;
    l->duplicate = duplicate, l->reorder = reorder, l->reorder_delay_ps = reorder_delay_ps;
    l->queue_backlog_only = queue_backlog_only;
    return 0;
}

/* packets, bytes, lost, queue_drops, duplicated, reordered, max_queue */
EXPORT void sim_link_counters(sim *s, uint32_t link, uint64_t *out) {
    if (link >= s->n_links) return;
    link_dir *l = &s->links[link];
    out[0] = l->packets, out[1] = l->bytes, out[2] = l->lost, out[3] = l->queue_drops;
    out[4] = l->duplicated, out[5] = l->reordered, out[6] = l->max_queue;
}

EXPORT void sim_link_reset_counters(sim *s, uint32_t link) {
    if (link >= s->n_links) return;
    link_dir *l = &s->links[link];
    l->packets = l->bytes = l->lost = l->queue_drops = l->duplicated = l->reordered = l->max_queue = 0;
}

/* A frame from external host n's port at time t_ps (not before the core's clock: Python ran the core
 * up to its own clock first). Returns -1 if it was refused (no such host, no memory). */
EXPORT int sim_inject(sim *s, uint32_t n, int64_t t_ps, const uint8_t *data, uint32_t len) {
    if (n >= s->n_nodes || s->nodes[n].h.kind != HOST_EXTERNAL) return -1;
    if (t_ps > s->now) s->now = t_ps;
    uint8_t *f = malloc(len ? len : 1);
    if (!f) return -1;
    memcpy(f, data, len);
    transmit(s, n, 0, f, len);
    return 0;
}

/* Runs events up to `until_ps` (inclusive), stopping after the first instant at which a frame reached an
 * external host: returns how many frames the outbox holds then (sim_outbox), 0 if none came by until_ps.
 * The clock stops at that instant, or at until_ps if later events wait (with none left, at the last). */
EXPORT uint32_t sim_run_external(sim *s, int64_t until_ps) {
    outbox_clear(s);
    uint64_t ran = 0;
    while (s->heap_len) {
        int64_t t = s->heap[0].t;
        if (s->out_n && t != s->out_t) break;
        if (t > until_ps) {
            if (!s->out_n && until_ps > s->now) s->now = until_ps;
            break;
        }
        run_next_event(s);
        ran++;
    }
    s->events += ran;
    return s->out_n;
}

/* The outbox's frames (valid until the next sim_run_external) and the instant they arrived. */
EXPORT uint32_t sim_outbox(sim *s, int64_t *t_ps, const ext_frame **frames) {
    *t_ps = s->out_t;
    *frames = s->outbox;
    return s->out_n;
}
