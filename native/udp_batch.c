/* Batched UDP I/O for the agents: many datagrams per system call, no Python per packet.
 *
 * Python's socket module has no sendmmsg/recvmmsg. These functions move whole batches between one
 * contiguous buffer (one row per datagram, `stride` bytes apart) and a non-blocking UDP socket:
 *
 *   ina_udp_send          sendmmsg of n rows, per-row or common destination
 *   ina_udp_send_segments one UDP_SEGMENT (GSO) send per group of equal-size rows to one destination:
 *                         the kernel cuts it into datagrams, so the stack is crossed once per group
 *   ina_udp_recv          recvmmsg into n rows, with lengths, source addresses and TOS bytes (the ECN
 *                         codepoint, with IP_RECVTOS on the socket); a datagram the
 *                         kernel coalesced (UDP_GRO on the socket) is split back into its segments,
 *                         and the segments the rows left cannot hold wait in the scratch buffer for
 *                         the next call (nothing is dropped)
 *
 * Addresses and ports are in network byte order. Called through ctypes, which releases the GIL.
 * Every function returns how many datagrams it moved and leaves in *error the errno that stopped it
 * (0 when it did all it was asked, EAGAIN when the socket had no more room or nothing more to read).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

#define CALL_MAX 256            /* messages handed to one sendmmsg/recvmmsg call */
#define GSO_SEGMENTS_MAX 64     /* UDP_MAX_SEGMENTS of older kernels (newer allow 128) */
#define GSO_BYTES_MAX 65000     /* one GSO send stays below the 64 KiB IP datagram limit */
#define GRO_MESSAGE_BYTES 65536 /* a coalesced receive can be this large */
#define GRO_MESSAGES_MAX 8
#define GRO_SEGMENTS_MAX 64 /* UDP_GRO_CNT_MAX: segments the kernel coalesces into one datagram */

/* Received datagrams (or their tails) whose segments did not fit in the caller's rows: a GSO send of
 * more segments than GRO_SEGMENTS_MAX reaches a UDP_GRO socket whole (128 on loopback or veth), and
 * it may take rows reserved for the next message of the same recvmmsg. They stay where recvmmsg put
 * them (message slots of the scratch buffer) and are handed out first on the next call, before the
 * socket is read again. The record lives at the end of the scratch buffer; all zero: nothing waits. */
typedef struct {
    uint32_t slot;    /* message slot of the scratch buffer */
    uint32_t at;      /* bytes of it already handed out */
    uint32_t size;    /* the datagram's bytes */
    uint32_t segment; /* bytes per segment (0: not coalesced) */
    struct sockaddr_in source;
    uint8_t tos; /* its IPv4 TOS byte (the kernel coalesces only datagrams of one TOS) */
} gro_waiting;

typedef struct {
    uint32_t first, count; /* waiting[first..count-1] still hold segments */
    gro_waiting waiting[GRO_MESSAGES_MAX];
} gro_carry;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* After EAGAIN: wait until the socket can take more or the deadline passed; 1 = try again. */
static int wait_writable(int fd, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 1;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return 0;
    }
}

/* sendmmsg of msgs[0..count-1], retried on EINTR and, while the deadline allows, on a full socket
 * buffer. Returns how many messages went; *error is set when that is fewer than count. */
static int send_messages(int fd, struct mmsghdr *msgs, int count, int wait_ms, int64_t deadline, int *error) {
    int done = 0;
    while (done < count) {
        int r = sendmmsg(fd, msgs + done, count - done, MSG_DONTWAIT);
        if (r > 0) {
            done += r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) && wait_ms > 0 &&
            wait_writable(fd, deadline))
            continue;
        *error = r < 0 ? errno : EAGAIN;
        break;
    }
    return done;
}

/* Send rows 0..n-1 of buf; row i has lens[i] bytes (or `length` when lens is NULL) and goes to
 * ips[i]:ports[i] (or ip:port when ips is NULL). A full socket buffer is waited on for up to
 * wait_ms milliseconds in all (0: not at all). */
int ina_udp_send(int fd, const uint8_t *buf, size_t stride, const uint32_t *lens, uint32_t length, int n,
                 const uint32_t *ips, const uint16_t *ports, uint32_t ip, uint16_t port, int wait_ms, int *error) {
    struct mmsghdr msgs[CALL_MAX];
    struct iovec iovs[CALL_MAX];
    struct sockaddr_in addrs[CALL_MAX];
    int64_t deadline = wait_ms > 0 ? now_ms() + wait_ms : 0;
    int sent = 0;
    *error = 0;
    while (sent < n) {
        int count = n - sent < CALL_MAX ? n - sent : CALL_MAX;
        for (int i = 0; i < count; i++) {
            int row = sent + i;
            iovs[i].iov_base = (void *)(buf + (size_t)row * stride);
            iovs[i].iov_len = lens ? lens[row] : length;
            memset(&addrs[i], 0, sizeof addrs[i]);
            addrs[i].sin_family = AF_INET;
            addrs[i].sin_addr.s_addr = ips ? ips[row] : ip;
            addrs[i].sin_port = ports ? ports[row] : port;
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_name = &addrs[i];
            msgs[i].msg_hdr.msg_namelen = sizeof addrs[i];
            msgs[i].msg_hdr.msg_iov = &iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int r = send_messages(fd, msgs, count, wait_ms, deadline, error);
        sent += r;
        if (r < count)
            break;
    }
    return sent;
}

/* Send n rows of `length` bytes each (rows `length` bytes apart, i.e. one contiguous block) to
 * ip:port as UDP_SEGMENT sends of up to GSO_SEGMENTS_MAX rows. The socket must compute UDP checksums
 * (the kernel refuses GSO on a socket with SO_NO_CHECK). */
int ina_udp_send_segments(int fd, const uint8_t *buf, uint32_t length, int n, uint32_t ip, uint16_t port,
                          int wait_ms, int *error) {
    struct mmsghdr msgs[CALL_MAX];
    struct iovec iovs[CALL_MAX];
    char controls[CALL_MAX][CMSG_SPACE(sizeof(uint16_t))];
    struct sockaddr_in addr;
    int per_send = length ? (int)(GSO_BYTES_MAX / length) : 1;
    if (per_send > GSO_SEGMENTS_MAX)
        per_send = GSO_SEGMENTS_MAX;
    if (per_send < 1)
        per_send = 1;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = ip;
    addr.sin_port = port;
    int64_t deadline = wait_ms > 0 ? now_ms() + wait_ms : 0;
    int sent = 0;
    *error = 0;
    while (sent < n) {
        int count = 0, rows = sent;
        int rows_in[CALL_MAX];
        while (rows < n && count < CALL_MAX) {
            int take = n - rows < per_send ? n - rows : per_send;
            rows_in[count] = take;
            iovs[count].iov_base = (void *)(buf + (size_t)rows * length);
            iovs[count].iov_len = (size_t)take * length;
            memset(&msgs[count], 0, sizeof msgs[count]);
            msgs[count].msg_hdr.msg_name = &addr;
            msgs[count].msg_hdr.msg_namelen = sizeof addr;
            msgs[count].msg_hdr.msg_iov = &iovs[count];
            msgs[count].msg_hdr.msg_iovlen = 1;
            if (take > 1) {
                msgs[count].msg_hdr.msg_control = controls[count];
                msgs[count].msg_hdr.msg_controllen = sizeof controls[count];
                struct cmsghdr *cm = CMSG_FIRSTHDR(&msgs[count].msg_hdr);
                cm->cmsg_level = SOL_UDP;
                cm->cmsg_type = UDP_SEGMENT;
                cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
                uint16_t segment = (uint16_t)length;
                memcpy(CMSG_DATA(cm), &segment, sizeof segment);
            }
            rows += take;
            count++;
        }
        int r = send_messages(fd, msgs, count, wait_ms, deadline, error);
        for (int i = 0; i < r; i++)
            sent += rows_in[i];
        if (r < count)
            break;
    }
    return sent;
}

/* Copy one received datagram (possibly several coalesced segments of `segment` bytes) into rows
 * row..n-1. Returns the rows filled; *used gets the bytes of `data` they took. */
static int split_into_rows(const uint8_t *data, size_t size, size_t segment, uint8_t *buf, size_t stride, int row,
                           int n, uint32_t *lens, uint32_t *ips, uint16_t *ports, uint8_t *tos,
                           const struct sockaddr_in *src, uint8_t tos_byte, size_t *used) {
    if (segment == 0 || segment >= size)
        segment = size;
    int stored = 0;
    size_t at = 0;
    for (; at < size && row + stored < n; at += segment) {
        size_t part = size - at < segment ? size - at : segment;
        int r = row + stored;
        /* a datagram longer than a row is cut and marked by a length of stride + 1 */
        memcpy(buf + (size_t)r * stride, data + at, part < stride ? part : stride);
        lens[r] = part <= stride ? (uint32_t)part : (uint32_t)stride + 1;
        ips[r] = src->sin_addr.s_addr;
        ports[r] = src->sin_port;
        if (tos) tos[r] = tos_byte;
        stored++;
    }
    *used = at < size ? at : size;
    return stored;
}

/* Hands out the waiting segments into rows row..n-1 (in arrival order); returns the rows filled. */
static int drain_carry(gro_carry *carry, const uint8_t *scratch, uint8_t *buf, size_t stride, int row, int n,
                       uint32_t *lens, uint32_t *ips, uint16_t *ports, uint8_t *tos) {
    int stored = 0;
    while (carry->first < carry->count && row + stored < n) {
        gro_waiting *w = &carry->waiting[carry->first];
        size_t used;
        stored += split_into_rows(scratch + (size_t)w->slot * GRO_MESSAGE_BYTES + w->at, w->size - w->at, w->segment,
                                  buf, stride, row + stored, n, lens, ips, ports, tos, &w->source, w->tos, &used);
        w->at += (uint32_t)used;
        if (w->at < w->size)
            break;
        carry->first++;
    }
    if (carry->first == carry->count)
        carry->first = carry->count = 0;
    return stored;
}

/* Receive up to n waiting datagrams into rows of buf (stride bytes each) without waiting. lens[i]
 * is the datagram's length (stride + 1: it was longer than a row and was cut), ips/ports its
 * source, tos[i] (when tos is not NULL) its IPv4 TOS byte (0 unless the socket has IP_RECVTOS). `scratch` (ina_udp_gro_scratch_bytes(), zeroed before the first call, kept with the socket)
 * is needed only on a socket with UDP_GRO, whose coalesced datagrams are split back into segments; the
 * segments that do not fit in the rows left wait in it and come first on the next call. Pass NULL
 * otherwise. */
int ina_udp_recv(int fd, uint8_t *buf, size_t stride, int n, uint32_t *lens, uint32_t *ips, uint16_t *ports,
                 uint8_t *tos, uint8_t *scratch, int *error) {
    struct mmsghdr msgs[CALL_MAX];
    struct iovec iovs[CALL_MAX];
    struct sockaddr_in addrs[CALL_MAX];
    char controls[CALL_MAX][2 * CMSG_SPACE(sizeof(int))]; /* UDP_GRO's segment size, IP_TOS */
    int got = 0;
    *error = 0;
    if (scratch && n < GRO_SEGMENTS_MAX) {
        *error = EINVAL; /* a coalesced datagram may need GRO_SEGMENTS_MAX rows */
        return 0;
    }
    gro_carry *carry = scratch ? (gro_carry *)(void *)(scratch + (size_t)GRO_MESSAGES_MAX * GRO_MESSAGE_BYTES) : NULL;
    if (carry && carry->count) {
        got = drain_carry(carry, scratch, buf, stride, 0, n, lens, ips, ports, tos);
        if (carry->count)
            return got; /* the rows are full: the socket's datagrams wait behind the carried segments */
    }
    while (got < n) {
        int count;
        if (scratch) {
            if (n - got < GRO_SEGMENTS_MAX)
                break; /* the next datagram might not fit: the caller comes back */
            /* each message may hold up to 64 segments: take no more than the rows left can store */
            count = (n - got) / GRO_SEGMENTS_MAX;
            if (count < 1)
                count = 1;
            if (count > GRO_MESSAGES_MAX)
                count = GRO_MESSAGES_MAX;
        } else {
            count = n - got < CALL_MAX ? n - got : CALL_MAX;
        }
        for (int i = 0; i < count; i++) {
            memset(&msgs[i], 0, sizeof msgs[i]);
            if (scratch) {
                iovs[i].iov_base = scratch + (size_t)i * GRO_MESSAGE_BYTES;
                iovs[i].iov_len = GRO_MESSAGE_BYTES;
            } else {
                iovs[i].iov_base = buf + (size_t)(got + i) * stride;
                iovs[i].iov_len = stride;
            }
            msgs[i].msg_hdr.msg_control = controls[i];
            msgs[i].msg_hdr.msg_controllen = sizeof controls[i];
            msgs[i].msg_hdr.msg_name = &addrs[i];
            msgs[i].msg_hdr.msg_namelen = sizeof addrs[i];
            msgs[i].msg_hdr.msg_iov = &iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int r = recvmmsg(fd, msgs, count, MSG_DONTWAIT | (scratch ? 0 : MSG_TRUNC), NULL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *error = errno;
            break;
        }
        if (r == 0) {
            *error = EAGAIN;
            break;
        }
        for (int i = 0; i < r; i++) {
            size_t segment = 0;
            uint8_t tos_byte = 0;
            for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msgs[i].msg_hdr); cm; cm = CMSG_NXTHDR(&msgs[i].msg_hdr, cm)) {
                if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
                    int value;
                    memcpy(&value, CMSG_DATA(cm), sizeof value);
                    segment = (size_t)value;
                } else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS) {
                    tos_byte = *(const uint8_t *)CMSG_DATA(cm);
                }
            }
            if (scratch) {
                size_t used = 0;
                if (!carry->count) /* else an earlier message of this call already waits: keep the order */
                    got += split_into_rows(iovs[i].iov_base, msgs[i].msg_len, segment, buf, stride, got, n, lens,
                                           ips, ports, tos, &addrs[i], tos_byte, &used);
                if (used < msgs[i].msg_len) /* no rows left for (the rest of) it: it waits for the next call */
                    carry->waiting[carry->count++] = (gro_waiting){(uint32_t)i, (uint32_t)used, msgs[i].msg_len,
                                                                   (uint32_t)segment, addrs[i], tos_byte};
            } else {
                /* with MSG_TRUNC, msg_len is the datagram's real length */
                lens[got] = msgs[i].msg_len <= stride ? msgs[i].msg_len : (uint32_t)stride + 1;
                ips[got] = addrs[i].sin_addr.s_addr;
                ports[got] = addrs[i].sin_port;
                if (tos) tos[got] = tos_byte;
                got++;
            }
        }
        if (r < count)
            break; /* drained */
        if (carry && carry->count)
            break; /* the rows are full */
    }
    return got;
}

int ina_udp_gro_scratch_bytes(void) { return GRO_MESSAGES_MAX * GRO_MESSAGE_BYTES + (int)sizeof(gro_carry); }
