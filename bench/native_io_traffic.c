/* Traffic for bench/native_io.py and bench/softswitch_pps.py: senders that write frames to an interface
 * as fast as they can (sendmmsg, or a PACKET_MMAP transmit ring that bypasses the qdisc, whose slots
 * keep their frames between rounds so only the sequence numbers are written, RING_KICK frames per
 * system call: the generator's own cost per frame bounds what one core can offer), and a receiver that
 * counts matching frames with recvmmsg. Each runs in its own thread (called through ctypes, which
 * releases the GIL). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAX_FRAME 2048

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int open_socket(const char *iface) {
    int fd = socket(AF_PACKET, SOCK_RAW, 0); /* nothing queued before bind() */
    if (fd < 0) return -1;
    struct sockaddr_ll addr = {0};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = (int)if_nametoindex(iface);
    int size = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
    int one = 1;
    setsockopt(fd, SOL_PACKET, 23 /* PACKET_IGNORE_OUTGOING */, &one, sizeof one);
    if (!addr.sll_ifindex || bind(fd, (struct sockaddr *)&addr, sizeof addr)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A PACKET_MMAP transmit ring (TPACKET_V2) on a send-only socket, past the qdisc (PACKET_QDISC_BYPASS:
 * the benchmark's sender interfaces are not shaped). A frame the kernel cannot deliver (the veth peer's
 * backlog full) stays requested and goes again with the next send(), so nothing is lost here. */
#define RING_FRAME 2048
#define RING_SLOTS 1024
#define RING_DATA (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))

typedef struct {
    int fd;
    uint8_t *slots;
    size_t bytes;
    uint32_t head;
} tx_ring;

static int ring_open(const char *iface, tx_ring *ring) {
    int fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd < 0) return -1;
    int version = TPACKET_V2, one = 1;
    struct tpacket_req req = {RING_FRAME * 64, RING_SLOTS / 64, RING_FRAME, RING_SLOTS};
    struct sockaddr_ll addr = {0};
    addr.sll_family = AF_PACKET;
    addr.sll_ifindex = (int)if_nametoindex(iface);
    int size = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
    if (!addr.sll_ifindex || setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) ||
        setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) ||
        setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr)) {
        close(fd);
        return -1;
    }
    ring->bytes = (size_t)req.tp_block_size * req.tp_block_nr;
    ring->slots = mmap(NULL, ring->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring->slots == MAP_FAILED) {
        close(fd);
        return -1;
    }
    ring->fd = fd;
    ring->head = 0;
    return 0;
}

static struct tpacket2_hdr *ring_slot(const tx_ring *ring, uint32_t i) {
    return (struct tpacket2_hdr *)(void *)(ring->slots + (size_t)(i % RING_SLOTS) * RING_FRAME);
}

/* Waits (sending what is requested meanwhile) until every slot is free or `until` passes; returns the
 * frames still requested then (given up: counted as errors by the caller). */
static uint32_t ring_drain(tx_ring *ring, double until) {
    for (;;) {
        uint32_t busy = 0;
        for (uint32_t i = 0; i < RING_SLOTS; i++)
            if (__atomic_load_n(&ring_slot(ring, i)->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) busy++;
        if (!busy || now_s() >= until) return busy;
        ssize_t ignored = send(ring->fd, NULL, 0, MSG_DONTWAIT);
        (void)ignored;
        usleep(100);
    }
}

static void ring_close(tx_ring *ring) {
    munmap(ring->slots, ring->bytes);
    close(ring->fd);
}

/* Points msgs[i] at bufs[i] (length len each). */
static void setup_messages(uint8_t (*bufs)[MAX_FRAME], struct mmsghdr *msgs, struct iovec *iov, uint32_t len) {
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = len;
        memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
}

/* What a sender sends: frame f is templates[f % n] (n templates of len bytes) with the chunk's
 * sequence number seq0 + f / n (4 bytes big-endian) at seq_at and, when pool > 0, shadow:1 slot:15 =
 * (seq / pool) % 2, seq % pool at slot_at, as the agents number chunks. */
typedef struct {
    const uint8_t *templates;
    uint32_t n, len, seq_at, slot_at, pool;
    uint64_t seq0;
} frame_stream;

/* Writes frame f's sequence number (and slot) into a copy of its template at `out`. */
static void patch_frame(uint8_t *out, const frame_stream *st, uint64_t f) {
    uint64_t seq = st->seq0 + f / st->n;
    uint32_t s = htonl((uint32_t)seq);
    memcpy(out + st->seq_at, &s, 4);
    if (st->pool) {
        uint16_t slot = htons((uint16_t)((((seq / st->pool) % 2) << 15) | (seq % st->pool)));
        memcpy(out + st->slot_at, &slot, 2);
    }
}

static void build_frame(uint8_t *out, const frame_stream *st, uint64_t f) {
    memcpy(out, st->templates + (size_t)(f % st->n) * st->len, st->len);
    patch_frame(out, st, f);
}

/* A sender on one interface: a transmit ring (ring.fd >= 0) or a socket written with sendmmsg. */
#define RING_KICK 256 /* frames handed to the kernel per send() on the ring */
typedef struct {
    tx_ring ring;
    int use_ring;
    int prebuilt; /* every ring slot holds its frame's template: only the numbers are patched */
    int fd;
    uint8_t (*bufs)[MAX_FRAME];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
} sender;

static int sender_open(sender *s, const char *iface, const frame_stream *st, int want_ring) {
    static __thread uint8_t bufs[BATCH][MAX_FRAME];
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->use_ring = want_ring && st->len <= RING_FRAME - RING_DATA && ring_open(iface, &s->ring) == 0;
    if (s->use_ring) {
        /* the kernel takes slots in order and the sender never skips one, so frame f always lands in
         * slot f % RING_SLOTS: with RING_SLOTS a multiple of n, slot i always holds template i % n */
        s->prebuilt = RING_SLOTS % st->n == 0;
        if (s->prebuilt)
            for (uint32_t i = 0; i < RING_SLOTS; i++) build_frame((uint8_t *)ring_slot(&s->ring, i) + RING_DATA, st, i);
        return 0;
    }
    s->fd = open_socket(iface);
    if (s->fd < 0) return -1;
    s->bufs = bufs;
    setup_messages(bufs, s->msgs, s->iov, st->len);
    return 0;
}

static void sender_close(sender *s, uint64_t *errors) {
    if (s->use_ring) {
        *errors += ring_drain(&s->ring, now_s() + 1.0); /* frames still requested then are given up */
        ring_close(&s->ring);
    } else {
        close(s->fd);
    }
}

/* Hands frames first.. (at most max) to the kernel; returns the frames used up (sent or, refused,
 * counted in *errors: a full queue loses them, as on a wire) and adds the sent ones to *sent. */
static uint64_t sender_push(sender *s, const frame_stream *st, uint64_t first, uint64_t max, uint64_t *sent,
                            uint64_t *errors) {
    if (s->use_ring) {
        uint64_t queued = 0;
        for (; queued < max && queued < RING_KICK; queued++) {
            struct tpacket2_hdr *h = ring_slot(&s->ring, s->ring.head);
            if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) break; /* ring full */
            uint8_t *data = (uint8_t *)h + RING_DATA;
            if (s->prebuilt)
                patch_frame(data, st, first + queued);
            else
                build_frame(data, st, first + queued);
            h->tp_len = st->len;
            __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
            s->ring.head = (s->ring.head + 1) % RING_SLOTS;
        }
        ssize_t ignored = send(s->ring.fd, NULL, 0, MSG_DONTWAIT);
        (void)ignored;
        *sent += queued; /* stuck ones are taken back as errors by sender_close */
        return queued;
    }
    int batch = max < BATCH ? (int)max : BATCH;
    for (int i = 0; i < batch; i++) build_frame(s->bufs[i], st, first + (uint64_t)i);
    int done = sendmmsg(s->fd, s->msgs, (unsigned)batch, 0);
    if (done < 0 && errno == EINTR) return 0;
    if (done < 0) done = 0;
    *sent += (uint64_t)done;
    *errors += (uint64_t)(batch - done);
    return (uint64_t)batch;
}

/* Sends the stream for `seconds` (or until max_frames, 0: no limit) at `rate` frames/s (at most BATCH
 * frames per due point; 0: as fast as possible). use_ring: through a transmit ring past the qdisc, up to
 * RING_KICK frames per send() (*used_ring says whether it could be set up; else sendmmsg). Returns frames sent; *next_seq gets the sequence
 * number of the next chunk. */
int64_t traffic_send_chunks(const char *iface, const uint8_t *templates, uint32_t n, uint32_t len, uint32_t seq_at,
                            uint32_t slot_at, uint32_t pool, uint64_t seq0, double seconds, uint64_t max_frames,
                            double rate, int use_ring, uint64_t *errors, uint64_t *next_seq, uint32_t *used_ring) {
    if (!n || len > MAX_FRAME || seq_at + 4 > len || (pool && slot_at + 2 > len)) return -1;
    prctl(PR_SET_NAME, "bench-sender");
    frame_stream st = {templates, n, len, seq_at, slot_at, pool, seq0};
    sender s;
    if (sender_open(&s, iface, &st, use_ring)) return -1;
    *used_ring = (uint32_t)s.use_ring;
    uint64_t frame = 0, sent = 0; /* frames used up so far; frame f is template f % n of chunk f / n */
    double start = now_s(), end = start + seconds;
    for (;;) {
        double t = now_s();
        if (t >= end || (max_frames && frame >= max_frames)) break;
        if (rate > 0 && (double)frame > (t - start) * rate) continue; /* paced: spin until due */
        uint64_t limit = max_frames ? max_frames - frame : UINT64_MAX;
        if (rate > 0 && limit > BATCH) limit = BATCH; /* paced: one batch per due point, on either path */
        frame += sender_push(&s, &st, frame, limit, &sent, errors);
    }
    uint64_t stuck = *errors;
    sender_close(&s, errors);
    sent -= *errors - stuck;
    *next_seq = seq0 + (frame + n - 1) / n;
    return (int64_t)sent;
}

/* Sends copies of `frame` (a 4-byte sequence number at seq_at, from 0) for `seconds` or until
 * `max_frames` are sent (0: no limit) with sendmmsg; returns frames sent. */
int64_t traffic_send(const char *iface, const uint8_t *frame, uint32_t len, uint32_t seq_at, double seconds,
                     uint64_t max_frames, uint64_t *errors) {
    uint64_t next_seq;
    uint32_t used_ring;
    return traffic_send_chunks(iface, frame, 1, len, seq_at, 0, 0, 0, seconds, max_frames, 0.0, 0, errors, &next_seq,
                               &used_ring);
}

/* Counts frames with `tag` at tag_at until `seconds` pass or, once *stop is set, `idle` seconds pass
 * without a frame. Returns the count; *bytes gets their bytes. */
int64_t traffic_receive(const char *iface, const uint8_t *tag, uint32_t tag_len, uint32_t tag_at, double seconds,
                        double idle, const volatile int *stop, uint64_t *bytes) {
    int fd = open_socket(iface);
    if (fd < 0) return -1;
    prctl(PR_SET_NAME, "bench-receiver");
    static __thread uint8_t bufs[BATCH][MAX_FRAME];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    setup_messages(bufs, msgs, iov, MAX_FRAME);
    int64_t count = 0;
    double start = now_s(), last = start;
    struct pollfd pfd = {fd, POLLIN, 0};
    for (;;) {
        double t = now_s();
        if (t - start > seconds || (*stop && t - last > idle)) break;
        if (poll(&pfd, 1, 20) <= 0) continue;
        int n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
        for (int i = 0; i < n; i++) {
            if (msgs[i].msg_len >= tag_at + tag_len && memcmp(bufs[i] + tag_at, tag, tag_len) == 0) {
                count++;
                *bytes += msgs[i].msg_len;
            }
        }
        if (n > 0 || !*stop) last = now_s();
    }
    close(fd);
    return count;
}
