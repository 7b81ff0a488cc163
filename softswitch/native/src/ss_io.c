/* Port I/O: AF_PACKET sockets on Linux interfaces, frames received with recvmmsg and sent with
 * sendmmsg in batches, and one thread that polls every port and runs the pipeline on what arrives,
 * without the Python interpreter (no GIL).
 *
 * Each socket is bound to its interface for all protocols, promiscuous, and ignores the frames the
 * host transmits itself (PACKET_IGNORE_OUTGOING where the kernel has it, else the thread drops frames
 * whose sll_pkttype is PACKET_OUTGOING). The thread takes up to SS_IO_BATCH waiting frames from each
 * ready port in turn, runs them through the pipeline holding the switch lock once per batch, sends the
 * outputs per port with one sendmmsg each, and pushes packet-ins, digests and log lines to the event
 * queue Python drains.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ss_internal.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define SS_IO_BATCH 64
#define SS_IO_FRAME 65536
#define SS_IO_SOCKET_BUFFER (4 << 20)

typedef struct ss_port {
    int fd;
    uint16_t number;
    char iface[IFNAMSIZ];
    int kernel_ignores_outgoing;
    uint64_t rx, tx, tx_errors, rx_outgoing;
    /* frames waiting to be sent */
    ss_bytes tx_data;
    uint32_t tx_n;
    uint32_t tx_len[SS_IO_BATCH];
} ss_port;

typedef struct ss_io {
    pthread_mutex_t lock; /* the switch pointer and the ports, held while a batch runs */
    ss_switch *sw;
    ss_port *ports[SS_MAX_PORTS];
    uint32_t n_ports;
    int wake_fd;
    volatile int stopping;
    int running;
    pthread_t thread;
    uint8_t *rx_buf;
    struct mmsghdr rx_msgs[SS_IO_BATCH];
    struct iovec rx_iov[SS_IO_BATCH];
    struct sockaddr_ll rx_addr[SS_IO_BATCH];
    uint64_t unknown_port_drops;
    uint64_t batches, frames_in_batches;
} ss_io;

SS_EXPORT ss_io *ss_io_create(void) {
    ss_io *io = calloc(1, sizeof *io);
    if (!io) return NULL;
    pthread_mutex_init(&io->lock, NULL);
    io->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    io->rx_buf = malloc((size_t)SS_IO_BATCH * SS_IO_FRAME);
    if (io->wake_fd < 0 || !io->rx_buf) {
        ss_set_error("cannot set up port I/O: %s", strerror(errno));
        if (io->wake_fd >= 0) close(io->wake_fd);
        free(io->rx_buf);
        free(io);
        return NULL;
    }
    for (int i = 0; i < SS_IO_BATCH; i++) {
        io->rx_iov[i].iov_base = io->rx_buf + (size_t)i * SS_IO_FRAME;
        io->rx_iov[i].iov_len = SS_IO_FRAME;
        io->rx_msgs[i].msg_hdr.msg_iov = &io->rx_iov[i];
        io->rx_msgs[i].msg_hdr.msg_iovlen = 1;
        io->rx_msgs[i].msg_hdr.msg_name = &io->rx_addr[i];
        io->rx_msgs[i].msg_hdr.msg_namelen = sizeof io->rx_addr[i];
    }
    return io;
}

/* The switch whose pipeline runs on received frames (NULL: frames are dropped). */
SS_EXPORT void ss_io_set_switch(ss_io *io, ss_switch *sw) {
    pthread_mutex_lock(&io->lock);
    io->sw = sw;
    pthread_mutex_unlock(&io->lock);
}

static void enlarge_buffers(int fd) {
    int size = SS_IO_SOCKET_BUFFER;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

/* Opens port `number` on interface `iface` (before ss_io_start). */
SS_EXPORT int ss_io_add_port(ss_io *io, uint32_t number, const char *iface) {
    if (number >= SS_MAX_PORTS) {
        ss_set_error("port %u is outside 0..%d", number, SS_MAX_PORTS - 1);
        return SS_E_INVALID;
    }
    if (io->running) {
        ss_set_error("ports cannot be added while the I/O thread runs");
        return SS_E_INVALID;
    }
    if (io->ports[number]) {
        ss_set_error("port %u is given twice (%s and %s)", number, io->ports[number]->iface, iface);
        return SS_E_INVALID;
    }
    unsigned ifindex = if_nametoindex(iface);
    if (!ifindex) {
        ss_set_error("port %u: cannot use interface '%s': %s", number, iface, strerror(errno));
        return SS_E_IO;
    }
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0) {
        if (errno == EPERM)
            ss_set_error("port %u: opening a raw socket on %s needs root (or CAP_NET_RAW)", number, iface);
        else
            ss_set_error("port %u: socket: %s", number, strerror(errno));
        return SS_E_IO;
    }
    struct sockaddr_ll addr = {0};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = (int)ifindex;
    struct packet_mreq mreq = {0};
    mreq.mr_ifindex = (int)ifindex;
    mreq.mr_type = PACKET_MR_PROMISC;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) ||
        setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq)) {
        ss_set_error("port %u: cannot use interface '%s': %s", number, iface, strerror(errno));
        close(fd);
        return SS_E_IO;
    }
    enlarge_buffers(fd);
    ss_port *port = calloc(1, sizeof *port);
    if (!port) {
        close(fd);
        return SS_E_NOMEM;
    }
    int one = 1;
    port->kernel_ignores_outgoing = setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) == 0;
    port->fd = fd;
    port->number = (uint16_t)number;
    snprintf(port->iface, sizeof port->iface, "%s", iface);
    io->ports[number] = port;
    io->n_ports++;
    return SS_OK;
}

static void port_flush(ss_io *io, ss_port *port) {
    (void)io;
    if (!port->tx_n) return;
    struct mmsghdr msgs[SS_IO_BATCH];
    struct iovec iov[SS_IO_BATCH];
    size_t off = 0;
    for (uint32_t i = 0; i < port->tx_n; i++) {
        iov[i].iov_base = port->tx_data.data + off;
        iov[i].iov_len = port->tx_len[i];
        off += port->tx_len[i];
        memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    uint32_t sent = 0;
    while (sent < port->tx_n) {
        int n = sendmmsg(port->fd, msgs + sent, port->tx_n - sent, 0);
        if (n > 0) {
            sent += (uint32_t)n;
            port->tx += (uint64_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            port->tx_errors++; /* this frame cannot be sent (e.g. too long, link down): skip it */
            sent++;
        }
    }
    port->tx_n = 0;
    port->tx_data.len = 0;
}

static void io_emit(ss_worker *w, uint16_t number, const uint8_t *data, uint32_t len) {
    ss_io *io = w->emit_ctx;
    ss_port *port = number < SS_MAX_PORTS ? io->ports[number] : NULL;
    if (!port) {
        io->unknown_port_drops++;
        return;
    }
    if (port->tx_n == SS_IO_BATCH) port_flush(io, port);
    if (ss_bytes_reserve(&port->tx_data, len)) {
        port->tx_errors++;
        return;
    }
    memcpy(port->tx_data.data + port->tx_data.len, data, len);
    port->tx_data.len += len;
    port->tx_len[port->tx_n++] = len;
}

/* Runs the frames of one recvmmsg batch from `port` through the pipeline and sends the outputs. */
static void run_batch(ss_io *io, ss_port *port, int n) {
    pthread_mutex_lock(&io->lock);
    ss_switch *sw = io->sw;
    if (!sw) {
        pthread_mutex_unlock(&io->lock);
        return;
    }
    ss_worker *w = &sw->io_worker;
    w->emit = io_emit;
    w->emit_ctx = io;
    w->out.len = 0;
    pthread_mutex_lock(&sw->lock);
    for (int i = 0; i < n; i++) {
        if (!port->kernel_ignores_outgoing && io->rx_addr[i].sll_pkttype == PACKET_OUTGOING) {
            port->rx_outgoing++;
            continue;
        }
        uint32_t len = io->rx_msgs[i].msg_len;
        port->rx++;
        w->input = (uint32_t)i;
        ss_worker_process(w, port->number, io->rx_iov[i].iov_base, len);
    }
    pthread_mutex_unlock(&sw->lock);
    io->batches++;
    io->frames_in_batches += (uint64_t)n;
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++)
        if (io->ports[p] && io->ports[p]->tx_n) port_flush(io, io->ports[p]);
    if (w->out.len && sw->events) ss_events_push(sw->events, &w->out, 0);
    w->out.len = 0;
    pthread_mutex_unlock(&io->lock);
}

static void *io_thread(void *arg) {
    ss_io *io = arg;
    struct pollfd fds[SS_MAX_PORTS + 1];
    ss_port *by_index[SS_MAX_PORTS];
    uint32_t n = 0;
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++)
        if (io->ports[p]) {
            fds[n].fd = io->ports[p]->fd;
            fds[n].events = POLLIN;
            by_index[n++] = io->ports[p];
        }
    fds[n].fd = io->wake_fd;
    fds[n].events = POLLIN;
    while (!io->stopping) {
        int ready = poll(fds, n + 1, -1);
        if (io->stopping) break;
        if (ready < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (!(fds[i].revents & POLLIN)) continue;
            for (int i_batch = 0; i_batch < 4; i_batch++) { /* at most 4 batches before the next port */
                for (int k = 0; k < SS_IO_BATCH; k++) io->rx_msgs[k].msg_hdr.msg_namelen = sizeof io->rx_addr[k];
                int got = recvmmsg(by_index[i]->fd, io->rx_msgs, SS_IO_BATCH, MSG_DONTWAIT, NULL);
                if (got <= 0) break;
                run_batch(io, by_index[i], got);
                if (got < SS_IO_BATCH) break;
            }
        }
    }
    return NULL;
}

SS_EXPORT int ss_io_start(ss_io *io) {
    if (io->running) return SS_OK;
    io->stopping = 0;
    if (pthread_create(&io->thread, NULL, io_thread, io)) {
        ss_set_error("cannot start the port I/O thread: %s", strerror(errno));
        return SS_E_IO;
    }
    io->running = 1;
    return SS_OK;
}

/* Stops the thread (waits for it) and closes the ports. */
SS_EXPORT void ss_io_stop(ss_io *io) {
    if (io->running) {
        io->stopping = 1;
        uint64_t one = 1;
        ssize_t ignored = write(io->wake_fd, &one, sizeof one);
        (void)ignored;
        pthread_join(io->thread, NULL);
        io->running = 0;
    }
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++) {
        ss_port *port = io->ports[p];
        if (!port) continue;
        close(port->fd);
        ss_bytes_free(&port->tx_data);
        free(port);
        io->ports[p] = NULL;
    }
    io->n_ports = 0;
}

SS_EXPORT void ss_io_destroy(ss_io *io) {
    if (!io) return;
    ss_io_stop(io);
    close(io->wake_fd);
    free(io->rx_buf);
    free(io);
}

/* Sends one frame on a port now (packet-out results, frames from Python); 0 or an error code. */
SS_EXPORT int ss_io_send(ss_io *io, uint32_t number, const uint8_t *data, uint32_t len) {
    ss_port *port = number < SS_MAX_PORTS ? io->ports[number] : NULL;
    if (!port) {
        __atomic_add_fetch(&io->unknown_port_drops, 1, __ATOMIC_RELAXED);
        return SS_E_NOT_FOUND;
    }
    if (send(port->fd, data, len, 0) < 0) {
        __atomic_add_fetch(&port->tx_errors, 1, __ATOMIC_RELAXED);
        ss_set_error("port %u (%s): send failed: %s", number, port->iface, strerror(errno));
        return SS_E_IO;
    }
    __atomic_add_fetch(&port->tx, 1, __ATOMIC_RELAXED);
    return SS_OK;
}

/* Port counters: rx, tx, tx_errors, rx_outgoing (frames the host sent, skipped); -1 if no such port. */
SS_EXPORT int ss_io_port_stats(ss_io *io, uint32_t number, uint64_t *out) {
    ss_port *port = number < SS_MAX_PORTS ? io->ports[number] : NULL;
    if (!port) return -1;
    out[0] = port->rx;
    out[1] = port->tx;
    out[2] = port->tx_errors;
    out[3] = port->rx_outgoing;
    return 0;
}

/* unknown_port_drops, batches, frames in batches */
SS_EXPORT void ss_io_stats(ss_io *io, uint64_t *out) {
    out[0] = io->unknown_port_drops;
    out[1] = io->batches;
    out[2] = io->frames_in_batches;
}
