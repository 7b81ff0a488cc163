/* Queue depth of a switch's ports from their real queues (the kernel qdisc in front of each interface:
 * in the lab, the tbf shaping the link), read by the port I/O thread itself: before it runs a batch
 * through the pipeline, when the last reading is at least the interval old, it asks rtnetlink for every
 * port's root qdisc (one RTM_GETQDISC request per port, all in one send; the kernel answers before
 * send() returns, so one recvmmsg() takes every answer) and stores each qlen in sw->queue_depth, which
 * egress reads as enq_qdepth / deq_qdepth (the ECN marks of p4src/ina.p4). So a batch sees a reading at
 * most one interval old, and a switch that forwards nothing reads nothing: no thread wakes up for the
 * queues of an idle switch (softswitch/qdisc_depth.py, the Python back end's poller, is the same
 * request in Python on a timer). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ss_internal.h"

#define SS_QDEPTH_ANSWER 4096 /* bytes read of one answer: a tbf's RTM_NEWQDISC with its stats is < 1 KB */

struct ss_qdepth_request {
    struct nlmsghdr nh;
    struct tcmsg tc;
};

int ss_qdepth_open(ss_qdepth *q, const unsigned *ifindexes, const uint16_t *ports, uint32_t n,
                   uint64_t interval_ns, uint32_t cell_bytes) {
    memset(q, 0, sizeof *q);
    q->fd = -1;
    if (!n || n > SS_MAX_PORTS) {
        ss_set_error("queue depth: %u ports (expected 1..%d)", n, SS_MAX_PORTS);
        return SS_E_INVALID;
    }
    q->requests = calloc(n, sizeof(struct ss_qdepth_request));
    q->answers = malloc((size_t)n * SS_QDEPTH_ANSWER);
    q->msgs = calloc(n, sizeof *q->msgs);
    q->iov = calloc(n, sizeof *q->iov);
    q->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (!q->requests || !q->answers || !q->msgs || !q->iov || q->fd < 0) {
        ss_set_error("queue depth: cannot open an rtnetlink socket: %s", strerror(errno));
        ss_qdepth_close(q);
        return SS_E_IO;
    }
    q->n = n;
    q->interval_ns = interval_ns;
    q->cell_bytes = cell_bytes;
    memcpy(q->ports, ports, n * sizeof *ports);
    struct ss_qdepth_request *req = q->requests;
    for (uint32_t i = 0; i < n; i++) {
        req[i].nh.nlmsg_len = sizeof req[i];
        req[i].nh.nlmsg_type = RTM_GETQDISC;
        /* ECHO: some kernels answer a get only to an asker that asks for an echo */
        req[i].nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ECHO;
        req[i].tc.tcm_family = AF_UNSPEC;
        req[i].tc.tcm_ifindex = (int)ifindexes[i];
        req[i].tc.tcm_parent = TC_H_ROOT;
        q->iov[i].iov_base = q->answers + (size_t)i * SS_QDEPTH_ANSWER;
        q->iov[i].iov_len = SS_QDEPTH_ANSWER;
        q->msgs[i].msg_hdr.msg_iov = &q->iov[i];
        q->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    return SS_OK;
}

void ss_qdepth_close(ss_qdepth *q) {
    if (q->fd >= 0) close(q->fd);
    free(q->requests);
    free(q->answers);
    free(q->msgs);
    free(q->iov);
    memset(q, 0, sizeof *q);
    q->fd = -1;
}

/* The qlen and backlog (bytes) in one RTM_NEWQDISC answer (TCA_STATS: struct tc_stats); 0 or -1. */
static int answer_stats(const struct nlmsghdr *nh, size_t got, struct tc_stats *st) {
    if (got < sizeof *nh || nh->nlmsg_len > got || nh->nlmsg_type != RTM_NEWQDISC ||
        nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct tcmsg)))
        return -1;
    const uint8_t *at = (const uint8_t *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct tcmsg));
    const uint8_t *end = (const uint8_t *)nh + nh->nlmsg_len;
    while (at + sizeof(struct rtattr) <= end) {
        const struct rtattr *rta = (const struct rtattr *)(const void *)at;
        if (rta->rta_len < sizeof *rta || at + rta->rta_len > end) return -1;
        if (rta->rta_type == TCA_STATS && rta->rta_len >= RTA_LENGTH(sizeof(struct tc_stats))) {
            memcpy(st, RTA_DATA(rta), sizeof *st);
            return 0;
        }
        at += RTA_ALIGN(rta->rta_len);
    }
    return -1;
}

/* The depth egress reads (bit<19>, saturated): frames for v1model; for a TNA program (cell_bytes set) the
 * cells the frames fill, each frame whole cells at the queue's mean frame size, as
 * softswitch.runtime.tna.queue_cells computes it for the Python back end. */
static uint32_t depth_reading(const struct tc_stats *st, uint32_t cell_bytes, int tna) {
    uint64_t frames = st->qlen;
    uint64_t depth = frames;
    if (tna && cell_bytes && frames) {
        uint64_t per_frame = (st->backlog + frames * cell_bytes - 1) / (frames * cell_bytes);
        depth = frames * per_frame;
    }
    return depth > SS_QDEPTH_MAX ? SS_QDEPTH_MAX : (uint32_t)depth;
}

/* Reads every port's qdisc length into sw->queue_depth if the last reading is at least the interval
 * old at `now`. A port whose interface is gone answers with an error and keeps its last depth. */
void ss_qdepth_maybe_read(ss_qdepth *q, ss_switch *sw, uint64_t now) {
    if (q->fd < 0 || now - q->last_ns < q->interval_ns) return;
    q->last_ns = now;
    struct ss_qdepth_request *req = q->requests;
    uint32_t base = q->seq;
    q->seq += q->n;
    for (uint32_t i = 0; i < q->n; i++) req[i].nh.nlmsg_seq = base + i;
    if (send(q->fd, q->requests, (size_t)q->n * sizeof *req, MSG_DONTWAIT) < 0) {
        q->errors++;
        return;
    }
    q->samples++;
    int tna = sw->prog && sw->prog->arch == SS_ARCH_TNA;
    uint32_t answered = 0; /* answers to this reading's requests (stale ones of an earlier reading are skipped) */
    while (answered < q->n) { /* the answers are queued already: one call takes them all */
        int got = recvmmsg(q->fd, q->msgs, q->n, MSG_DONTWAIT, NULL);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return;
        for (int m = 0; m < got; m++) {
            struct nlmsghdr *nh = q->iov[m].iov_base;
            size_t len = q->msgs[m].msg_len;
            for (; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
                uint32_t i = nh->nlmsg_seq - base;
                if (i >= q->n) continue;
                answered++;
                struct tc_stats st;
                if (answer_stats(nh, len, &st) == 0 && q->ports[i] < SS_MAX_PORTS)
                    __atomic_store_n(&sw->queue_depth[q->ports[i]], depth_reading(&st, q->cell_bytes, tna),
                                     __ATOMIC_RELAXED);
            }
        }
    }
}
