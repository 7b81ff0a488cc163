/* Traffic for bench/native_io.py: a sender that writes frames to an interface with sendmmsg as fast as
 * it can, and a receiver that counts matching frames with recvmmsg. Both run in their own thread
 * (called through ctypes, which releases the GIL). */
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

/* Sends copies of `frame` (a 4-byte sequence number at seq_at) for `seconds` or until `max_frames`
 * are sent (0: no limit); returns frames sent. */
int64_t traffic_send(const char *iface, const uint8_t *frame, uint32_t len, uint32_t seq_at, double seconds,
                     uint64_t max_frames, uint64_t *errors) {
    if (len > MAX_FRAME || seq_at + 4 > len) return -1;
    int fd = open_socket(iface);
    if (fd < 0) return -1;
    prctl(PR_SET_NAME, "bench-sender");
    static __thread uint8_t bufs[BATCH][MAX_FRAME];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    for (int i = 0; i < BATCH; i++) memcpy(bufs[i], frame, len);
    setup_messages(bufs, msgs, iov, len);
    uint32_t seq = 0;
    int64_t sent = 0;
    double end = now_s() + seconds;
    while (now_s() < end && (!max_frames || (uint64_t)sent < max_frames)) {
        int batch = BATCH;
        if (max_frames && max_frames - (uint64_t)sent < BATCH) batch = (int)(max_frames - (uint64_t)sent);
        for (int i = 0; i < batch; i++) {
            uint32_t s = htonl(seq + (uint32_t)i);
            memcpy(bufs[i] + seq_at, &s, 4);
        }
        int n = sendmmsg(fd, msgs, (unsigned)batch, 0);
        if (n > 0) {
            sent += n;
            seq += (uint32_t)n;
        } else if (errno != EINTR) {
            (*errors)++;
        }
    }
    close(fd);
    return sent;
}

/* Sends whole chunks for `seconds` (or until max_frames, 0: no limit): frame k of a chunk is
 * templates[k] (n templates of len bytes each) with the chunk's sequence number (4 bytes big-endian) at
 * seq_at and, when pool > 0, shadow:1 slot:15 = (seq / pool) % 2, seq % pool at slot_at, as the agents
 * number chunks; the first chunk is seq0. rate: frames/s (0: as fast as possible). Returns frames sent;
 * *next_seq gets the sequence number of the next chunk. */
int64_t traffic_send_chunks(const char *iface, const uint8_t *templates, uint32_t n, uint32_t len, uint32_t seq_at,
                            uint32_t slot_at, uint32_t pool, uint64_t seq0, double seconds, uint64_t max_frames,
                            double rate, uint64_t *errors, uint64_t *next_seq) {
    if (!n || len > MAX_FRAME || seq_at + 4 > len || (pool && slot_at + 2 > len)) return -1;
    int fd = open_socket(iface);
    if (fd < 0) return -1;
    prctl(PR_SET_NAME, "bench-sender");
    static __thread uint8_t bufs[BATCH][MAX_FRAME];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    setup_messages(bufs, msgs, iov, len);
    uint64_t frame = 0; /* frames handed to the kernel so far; frame f is template f % n of chunk f / n */
    int64_t sent = 0;
    double start = now_s(), end = start + seconds;
    for (;;) {
        double t = now_s();
        if (t >= end || (max_frames && frame >= max_frames)) break;
        if (rate > 0 && (double)frame > (t - start) * rate) continue; /* paced: spin until due */
        int batch = BATCH;
        if (max_frames && max_frames - frame < BATCH) batch = (int)(max_frames - frame);
        for (int i = 0; i < batch; i++) {
            uint64_t f = frame + (uint64_t)i, seq = seq0 + f / n;
            memcpy(bufs[i], templates + (size_t)(f % n) * len, len);
            uint32_t s = htonl((uint32_t)seq);
            memcpy(bufs[i] + seq_at, &s, 4);
            if (pool) {
                uint16_t slot = htons((uint16_t)((((seq / pool) % 2) << 15) | (seq % pool)));
                memcpy(bufs[i] + slot_at, &slot, 2);
            }
        }
        int done = sendmmsg(fd, msgs, (unsigned)batch, 0);
        if (done > 0) {
            sent += done;
            frame += (uint64_t)done;
            if (done < batch) (*errors) += (uint64_t)(batch - done), frame += (uint64_t)(batch - done);
        } else if (errno != EINTR) {
            (*errors) += (uint64_t)batch; /* a full queue: those frames are lost, as on a wire */
            frame += (uint64_t)batch;
        }
    }
    close(fd);
    *next_seq = seq0 + (frame + n - 1) / n;
    return sent;
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
