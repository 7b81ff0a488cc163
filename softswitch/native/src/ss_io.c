/* Port I/O: AF_PACKET sockets on Linux interfaces, frames received from a PACKET_MMAP ring (or with
 * recvmmsg) and sent with sendmmsg in batches, and one thread that sweeps every port and runs the
 * pipeline on what arrives, without the Python interpreter (no GIL).
 *
 * Each socket is opened for no protocol, then bound to its interface for all protocols (so it never
 * holds frames of other interfaces), promiscuous, and ignores the frames the host transmits itself
 * (PACKET_IGNORE_OUTGOING, and the thread drops frames whose sll_pkttype is PACKET_OUTGOING). Frames
 * arrive in a PACKET_MMAP receive ring (TPACKET_V2: no system call and no copy per frame; the pipeline
 * reads them in place), with SOFTSWITCH_IO=hybrid moved to a TPACKET_V3 block ring while the rate is
 * high (below), or with recvmmsg where a ring cannot be set up or SOFTSWITCH_IO=recvmmsg asks for it. The thread sweeps the ports in turn, taking up to SS_IO_BATCH waiting frames (a block with the
 * block ring) from each port whose ring has any (read in user space: no system call), runs them through
 * the pipeline holding the switch lock once per batch, sends each port's outputs of the sweep with one
 * system call, and pushes packet-ins, digests and log lines to the event queue Python drains. It sleeps
 * in poll() only when a sweep finds every port empty.
 *
 * Outputs are written straight into a port's PACKET_MMAP transmit ring (a second socket per port, bound
 * for no protocol so it receives nothing) and handed to the kernel with one send() per port and sweep
 * (or per 64 queued frames): no per-frame message headers, iovecs, user copies or result words as
 * sendmmsg needs them. The ring
 * socket has PACKET_VNET_HDR, and each frame's header asks the kernel to copy the whole frame into the
 * packet buffer (hdr_len = the frame's length). Without it the kernel may attach the ring's pages to
 * the packet and gives the slot back when the packet is orphaned (ip_rcv orphans it on a veth peer),
 * while a socket may still queue the data that the next frame written to the slot would change; the
 * copy costs one memcpy, as sendmmsg's did (the veth tests did not show the hazard; we do not rely on
 * that). Frames still go through the
 * interface's qdisc (no PACKET_QDISC_BYPASS): the lab shapes links with tc on the switch's interfaces.
 * A frame the kernel refuses (qdisc full, link down, no buffer) is skipped and counted in tx_errors, as
 * sendmmsg's error was; a frame longer than a slot or the MTU goes out with send() on the receive
 * socket (which reports its error). SOFTSWITCH_IO_TX=sendmmsg (or a kernel without rings) sends with
 * sendmmsg instead.
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ss_internal.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#ifndef PACKET_FANOUT_FLAG_IGNORE_OUTGOING
#define PACKET_FANOUT_FLAG_IGNORE_OUTGOING 0x4000
#endif
#include <linux/filter.h>
#include <linux/virtio_net.h>
#include <sys/ioctl.h>

#define SS_IO_BATCH 64
#ifndef SS_IO_FRAME /* the longest frame a port takes: softswitch/ports.py MAX_FRAME, passed by library.py */
#error "SS_IO_FRAME is defined by the build (softswitch/native/library.py, from softswitch/ports.py MAX_FRAME)"
#endif
#define SS_IO_SOCKET_BUFFER (4 << 20)
/* receive ring (TPACKET_V2): 4096 slots of 2 KB per port, on a jumbo MTU 64 blocks of slots that hold
 * one frame of the MTU (16 KB for 9000: 512 slots, slot_bytes); a longer frame (GSO) goes to the
 * socket's queue as well (PACKET_COPY_THRESH) and is read with recv() when its slot comes up */
#define SS_RING_FRAME 2048
#define SS_RING_BLOCK (128 << 10)
#define SS_RING_BLOCKS 64

/* how ports receive: a PACKET_MMAP ring of frame slots (the default, SOFTSWITCH_IO=ring), both rings
 * switching with the rate (SOFTSWITCH_IO=hybrid, below), a ring of blocks (SOFTSWITCH_IO=block) or
 * recvmmsg (SOFTSWITCH_IO=recvmmsg) */
#define SS_RX_RING 0
#define SS_RX_RECVMMSG 1
#define SS_RX_BLOCK 2
#define SS_RX_HYBRID 3

/* Hybrid receive: each port has a frame-slot socket and a block-ring socket on its interface, joined in
 * one PACKET_FANOUT_CBPF group whose one-instruction classic BPF program sends every frame to exactly one
 * of them (member 0: slots, member 1: blocks). A port starts on slots (a lone frame is handed over at
 * once) and moves to blocks (one wake-up and one status word per block: cheaper per frame on both
 * sides) when a block's worth of bytes arrives within SS_HYBRID_WINDOW_NS, i.e. when blocks would fill
 * before their retire timeout. It moves back when fewer than half as many bytes arrive per millisecond,
 * over SS_HYBRID_DOWN_WINDOW_NS, or when the thread has been idle for SS_HYBRID_IDLE_MS. The kernel replaces the group's program with
 * rcu_assign_pointer and then waits for an RCU grace period (synchronize_net, __fanout_set_data_bpf in
 * net/packet/af_packet.c) before setsockopt returns, and a frame's whole delivery (demux and copy into a
 * ring) runs inside the receive path's RCU read section: once the switch returns, every frame the old
 * program routed is in the old ring, and every later frame goes to the new one, each frame to one ring.
 * The thread drains the old ring completely before reading the new one, so each port's order holds; it
 * reads a block only once the kernel has handed it over (receive_hybrid).
 * The block ring is made lazily: a block ring's retire timer fires every SS_BLOCK_TIMEOUT_MS whether
 * frames come or not (1,000 timer softirqs a second per port), so a port starts with its slot socket
 * alone in the group and the switcher thread opens the block socket (ring, bind, join) on the port's
 * first move to blocks; once the port has been back on slots for SS_HYBRID_RETIRE_NS with its block
 * ring empty, the I/O thread hands the ring to the switcher, which closes it (timer and all). A member
 * joins a fanout group at the end of its array and a leaving one is replaced by the last, so with the
 * slot socket alone it is member 0 and the block socket that joins is member 1; the group's program is
 * set to 0 before the join, so no frame reaches the new ring before the move asks for it. A port at rest
 * therefore has no timer, as with frame slots alone.
 * After a move back to slots, the next move to blocks waits SS_HYBRID_HOLD_NS, doubled (up to
 * SS_HYBRID_HOLD_MAX_NS) each time a stay on blocks ended before SS_HYBRID_STAY_BLOCKS full blocks:
 * traffic whose rate sits at the threshold, or a window-limited stream that stalls on a half-full block,
 * does not flap. */
#define SS_HYBRID_WINDOW_NS 1000000ull
#define SS_HYBRID_DOWN_WINDOW_NS 4000000ull
#define SS_HYBRID_IDLE_MS 2
#define SS_HYBRID_HOLD_NS 5000000ull
#define SS_HYBRID_HOLD_MAX_NS 1000000000ull
#define SS_HYBRID_STAY_BLOCKS 16
#define SS_HYBRID_STRAYS 64
/* a port back on slots for this long closes its block ring (longer than SS_HYBRID_HOLD_MAX_NS: traffic
 * that keeps coming back to the threshold keeps its ring) */
#define SS_HYBRID_RETIRE_NS 2000000000ull
/* the kernel packs a block's frames at multiples of 8 bytes (V3_ALIGNMENT in net/packet/af_packet.c) */
#define SS_BLOCK_FRAME_ALIGN 8
/* bytes a frame takes in a block beyond its own: the tpacket3 header and address, aligned */
#define SS_BLOCK_FRAME_OVERHEAD 80

/* block receive ring (TPACKET_V3): 64 blocks of 128 KB per port (8 MB, as the slot ring). The kernel
 * packs frames one after another into the current block and hands the block over when it is full or
 * SS_BLOCK_TIMEOUT_MS after its first frame: one wake-up and one status word per block instead of per
 * frame, but a frame may wait that long at low rates. A frame up to a block's size (GSO: 64 KB) fits. */
#define SS_BLOCK_SIZE (128 << 10)
#define SS_BLOCK_COUNT 64
#define SS_BLOCK_TIMEOUT_MS 1

/* transmit ring (TPACKET_V2): 1024 slots of 2 KB per port (on a jumbo MTU as many bytes in slots that
 * hold a frame of the MTU: 128 of 16 KB for 9000). A slot holds the tpacket2 header, the
 * virtio-net header and the frame; the kernel lets no frame out of a slot before the last one it took
 * was sent, so this is also the most frames a port can have queued in its qdisc. */
#define SS_TX_FRAME 2048
#define SS_TX_SLOTS 1024
#define SS_TX_DATA (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)) /* where a slot's data begins */
#define SS_TX_SKIP 0xFFFFu /* a virtio-net hdr_len longer than any frame: the kernel skips the slot */

/* what run_batch does with a frame of the batch: runs it, or skips it as the host's own transmission, as
 * cut (the kernel or the read kept only part of it: never run as if whole) or as lost (not read). A block
 * ring's cut frame never gets a batch place (block_to_batch counts it in rx_truncated at once): its
 * block goes back to the kernel whole, so nothing needs the place, which would only take room from the
 * whole frames after it. A slot ring's cut frame keeps its place (the places are the ring's slots, given
 * back by count: release_slots), as recvmmsg's does (the places are its messages). */
#define SS_RUN 0
#define SS_SKIP_OUTGOING 1
#define SS_SKIP_CUT 2
#define SS_SKIP_LOST 3

#define SS_SWITCH_NONE 0
#define SS_SWITCH_ASKED 1
#define SS_SWITCH_DONE 2

/* what a hybrid port asks of the switcher thread (switch_target) */
#define SS_TO_SLOTS 0
#define SS_TO_BLOCKS 1   /* opening the block ring first if the port has none */
#define SS_CLOSE_BLOCKS 2 /* close the block ring the I/O thread gave up (retired_fd, retired_ring) */

typedef struct ss_port {
    int fd;
    uint16_t number;
    char iface[IFNAMSIZ];
    int kernel_ignores_outgoing;
    uint64_t rx, tx, tx_errors, rx_outgoing, kernel_drops;
    uint64_t rx_truncated; /* frames longer than what received them (a slot, a block, SS_IO_FRAME): dropped */
    /* receive ring (NULL: recvmmsg); with blocks (rx_blocks), ring_slots and ring_head count blocks */
    uint8_t *ring;
    size_t ring_bytes;
    uint32_t ring_slots, ring_head;
    uint32_t rx_frame; /* bytes of a receive ring slot: SS_RING_FRAME, more on a jumbo MTU (slot_bytes) */
    int rx_blocks;
    /* frames waiting to be sent: in the transmit ring (tx_ring != NULL), else in tx_data for sendmmsg */
    ss_bytes tx_data;
    uint32_t tx_n;
    uint32_t tx_len[SS_IO_BATCH];
    int pending; /* listed in io->pending */
    /* transmit ring */
    int tx_fd;
    uint8_t *tx_ring;
    size_t tx_ring_bytes;
    uint32_t tx_head;      /* the next slot to write; the kernel takes slots in the same order */
    uint32_t tx_first;     /* the first slot written since the last flush (tx_n slots from it) */
    uint32_t tx_max;       /* the longest frame the ring takes (slot and MTU) */
    uint32_t tx_frame;     /* bytes of a transmit slot: SS_TX_FRAME, more on a jumbo MTU (slot_bytes) */
    uint32_t tx_slots;     /* slots of the transmit ring: SS_TX_SLOTS, fewer of larger slots */
    uint64_t tx_long;      /* frames sent with send() because they were longer */
    /* hybrid receive (hybrid: fd leads a fanout group): the block ring's socket, in that group, while the
     * port has one (block_ring != NULL; opened and closed lazily, see the top) */
    int hybrid;
    unsigned ifindex;
    int fanout_join;                        /* PACKET_FANOUT's argument that joins the group */
    int program_member;                     /* the member the group's program returns (the switcher's) */
    int block_fd;
    uint8_t *block_ring;
    uint32_t block_head;
    int on_blocks;  /* the group's program sends frames to the block ring */
    int blocks_member; /* the group's index of the block socket (1, until a link event relinks them) */
    int draining;   /* frames routed before the last switch may still wait in the other ring */
    uint64_t window_start_ns, window_bytes; /* bytes received on slots since window_start_ns */
    uint64_t hold_until_ns, hold_ns;         /* no move to blocks before hold_until_ns */
    uint32_t full_blocks;                   /* blocks retired full since the last move to blocks */
    uint64_t block_seq;                     /* the kernel's number for the block at block_head */
    uint32_t block_done, block_offset;      /* frames of the handed-over block at block_head taken, the next's offset */
    int waits_for_block;                    /* slot frames wait for the block being filled (receive_hybrid) */
    uint32_t strays;                        /* frames in a row from the ring the program does not route to */
    int switch_state;                       /* SS_SWITCH_*: a move asked of the switcher thread */
    int switch_target, switch_failed;
    uint64_t switch_started_ns;
    uint64_t switches, switch_ns;           /* moves between the rings and the time they took */
    uint64_t slots_since_ns;                /* when the port last moved back to slots */
    uint64_t block_rings;                   /* block rings opened so far */
    int opened_fd;                          /* a block ring the switcher opened, installed by hybrid_switched */
    uint8_t *opened_ring;
    int retired_fd;                         /* a block ring given up, for the switcher to close */
    uint8_t *retired_ring;
    uint64_t retired_drops;                 /* kernel drops counted by block rings already closed */
} ss_port;

typedef struct ss_io {
    pthread_mutex_t lock; /* the switch pointer and the ports, held while a batch runs */
    ss_switch *sw;
    ss_port *ports[SS_MAX_PORTS];
    uint32_t n_ports;
    int wake_fd;
    volatile int stopping;
    volatile int paused; /* the thread leaves the ports alone (benchmarks fill the rings meanwhile) */
    volatile int pause_acked; /* the thread saw `paused` and reads no port */
    int running;
    pthread_t thread;
    uint8_t *rx_buf;
    struct mmsghdr rx_msgs[SS_IO_BATCH];
    struct iovec rx_iov[SS_IO_BATCH];
    struct sockaddr_ll rx_addr[SS_IO_BATCH];
    /* the batch being processed: frames (in the ring or in rx_buf) */
    const uint8_t *batch_data[SS_IO_BATCH];
    uint32_t batch_len[SS_IO_BATCH];
    uint8_t batch_skip[SS_IO_BATCH]; /* SS_RUN, or why the frame is not run (counted in run_batch) */
    int rx_mode;
    int tx_ring_wanted; /* 0: SOFTSWITCH_IO_TX=sendmmsg */
    uint16_t pending[SS_MAX_PORTS]; /* ports with frames waiting to be sent, in first-output order */
    uint32_t n_pending;
    uint64_t unknown_port_drops;
    uint64_t batches, frames_in_batches;
    uint64_t sleeps; /* times the thread found every port empty and slept in poll() */
    uint64_t first_batch_ns, last_batch_ns; /* when the first batch began and the last one ended */
    /* the switcher thread (hybrid ports): replaces fanout programs for the I/O thread */
    pthread_mutex_t switch_lock;
    pthread_cond_t switch_wanted;
    pthread_t switcher;
    int switcher_running, switcher_stopping;
    ss_qdepth qdepth; /* the ports' qdisc lengths, read before a batch runs (ss_qdepth.c; fd -1: not read) */
} ss_io;

SS_EXPORT ss_io *ss_io_create(void) {
    ss_io *io = calloc(1, sizeof *io);
    if (!io) return NULL;
    const char *mode = getenv("SOFTSWITCH_IO");
    /* frame slots by default: the hybrid (SOFTSWITCH_IO=hybrid) was not cheaper per frame at the rates
     * measured (softswitch/native/README.md) */
    io->rx_mode = !mode || !*mode || strcmp(mode, "ring") == 0 ? SS_RX_RING
                  : strcmp(mode, "hybrid") == 0                ? SS_RX_HYBRID
                  : strcmp(mode, "recvmmsg") == 0              ? SS_RX_RECVMMSG
                  : strcmp(mode, "block") == 0                 ? SS_RX_BLOCK
                                                               : -1;
    if (io->rx_mode < 0) {
        ss_set_error("SOFTSWITCH_IO=%s: expected ring (the default), hybrid, block or recvmmsg", mode);
        free(io);
        return NULL;
    }
    const char *tx_mode = getenv("SOFTSWITCH_IO_TX");
    io->tx_ring_wanted = !(tx_mode && strcmp(tx_mode, "sendmmsg") == 0);
    pthread_mutex_init(&io->lock, NULL);
    pthread_mutex_init(&io->switch_lock, NULL);
    pthread_cond_init(&io->switch_wanted, NULL);
    io->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    io->qdepth.fd = -1;
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

/* Maps the receive ring the kernel just set up on the port's socket (`bytes` in all, read as `slots`
 * frame slots or blocks from the first); 0 on success. */
static int map_rx_ring(ss_port *port, size_t bytes, uint32_t slots) {
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, port->fd, 0);
    if (ring == MAP_FAILED) return -1;
    port->ring = ring;
    port->ring_bytes = bytes;
    port->ring_slots = slots;
    port->ring_head = 0;
    return 0;
}

/* The ring slot for frames up to the interface's MTU (its tpacket header, a virtio-net header and a
 * VLAN tag included): `standard` bytes, or the power of two that holds a jumbo frame (16 KB for an MTU of
 * 9000), so that frames of the MTU never take the system call per frame of the long-frame path. */
static uint32_t slot_bytes(int fd, const char *iface, uint32_t standard) {
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", iface);
    if (ioctl(fd, SIOCGIFMTU, &ifr) || ifr.ifr_mtu <= 0) return standard;
    uint32_t need = (uint32_t)ifr.ifr_mtu + ETH_HLEN + 4 + TPACKET2_HDRLEN + sizeof(struct virtio_net_hdr);
    uint32_t slot = standard;
    while (slot < need && slot < (1u << 16)) slot <<= 1;
    return slot;
}

/* Sets up the TPACKET_V2 receive ring; 0 on success (else the port uses recvmmsg). */
static int ring_setup(ss_port *port) {
    int version = TPACKET_V2;
    if (setsockopt(port->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version)) return -1;
    port->rx_frame = slot_bytes(port->fd, port->iface, SS_RING_FRAME);
    uint32_t block = port->rx_frame > SS_RING_BLOCK ? port->rx_frame : SS_RING_BLOCK;
    struct tpacket_req req = {
        .tp_block_size = block,
        .tp_block_nr = SS_RING_BLOCKS,
        .tp_frame_size = port->rx_frame,
        .tp_frame_nr = block / port->rx_frame * SS_RING_BLOCKS,
    };
    if (setsockopt(port->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req)) return -1;
    int thresh = 1;
    setsockopt(port->fd, SOL_PACKET, PACKET_COPY_THRESH, &thresh, sizeof thresh);
    return map_rx_ring(port, (size_t)req.tp_block_size * req.tp_block_nr, req.tp_frame_nr);
}

/* Puts a TPACKET_V3 block ring on socket fd and maps it; the mapping, or NULL. */
static uint8_t *block_ring_map(int fd) {
    int version = TPACKET_V3;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version)) return NULL;
    struct tpacket_req3 req = {
        .tp_block_size = SS_BLOCK_SIZE,
        .tp_block_nr = SS_BLOCK_COUNT,
        .tp_frame_size = SS_RING_FRAME, /* checked by the kernel, not used: frames are packed */
        .tp_frame_nr = SS_BLOCK_SIZE / SS_RING_FRAME * SS_BLOCK_COUNT,
        .tp_retire_blk_tov = SS_BLOCK_TIMEOUT_MS,
    };
    if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req)) return NULL;
    void *ring = mmap(NULL, (size_t)SS_BLOCK_SIZE * SS_BLOCK_COUNT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return ring == MAP_FAILED ? NULL : ring;
}

/* Sets up the TPACKET_V3 block ring; 0 on success (else the port uses recvmmsg). */
static int block_ring_setup(ss_port *port) {
    uint8_t *ring = block_ring_map(port->fd);
    if (!ring) return -1;
    port->ring = ring;
    port->ring_bytes = (size_t)SS_BLOCK_SIZE * SS_BLOCK_COUNT;
    port->ring_slots = SS_BLOCK_COUNT;
    port->ring_head = 0;
    port->rx_blocks = 1;
    return 0;
}

static inline struct tpacket_block_desc *ring_block(uint8_t *ring, uint32_t i) {
    return (struct tpacket_block_desc *)(void *)(ring + (size_t)i * SS_BLOCK_SIZE);
}

/* Routes the port's frames to its block ring (1) or its frame slots (0): replaces the fanout group's
 * program, which returns once no frame can still be on its way to the other ring (see the top). */
static int fanout_route(int fd, int to_blocks) {
    struct sock_filter ret = BPF_STMT(BPF_RET | BPF_K, (uint32_t)to_blocks);
    struct sock_fprog prog = {.len = 1, .filter = &ret};
    return setsockopt(fd, SOL_PACKET, PACKET_FANOUT_DATA, &prog, sizeof prog);
}

/* Makes a port whose slot socket is bound a hybrid one: the slot socket creates a fanout group (the
 * kernel picks a free id) and, its only member, gets every frame (no program needed yet); the block
 * socket joins the group on the port's first move to blocks (block_ring_open). 0 on success; else the
 * port stays on its slots alone. */
static int hybrid_setup(ss_port *port, unsigned ifindex) {
    int flags = PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_IGNORE_OUTGOING;
    int create = (flags | PACKET_FANOUT_FLAG_UNIQUEID) << 16;
    if (setsockopt(port->fd, SOL_PACKET, PACKET_FANOUT, &create, sizeof create)) {
        flags = PACKET_FANOUT_CBPF; /* a kernel before 6.2: the thread skips outgoing frames itself */
        create = (flags | PACKET_FANOUT_FLAG_UNIQUEID) << 16;
        if (setsockopt(port->fd, SOL_PACKET, PACKET_FANOUT, &create, sizeof create)) return -1;
    }
    int group = 0;
    socklen_t group_len = sizeof group;
    if (getsockopt(port->fd, SOL_PACKET, PACKET_FANOUT, &group, &group_len)) return -1;
    port->hybrid = 1;
    port->ifindex = ifindex;
    port->fanout_join = (group & 0xffff) | flags << 16;
    port->hold_ns = SS_HYBRID_HOLD_NS;
    port->blocks_member = 1;
    return 0;
}

/* Opens a hybrid port's block ring (the switcher thread, on the port's first move to blocks): a second
 * socket with a block ring joins the port's fanout group as member 1, after the group's program has been
 * set to route every frame to member 0, the slots (a relink after a link bounce may have left it
 * otherwise). The new socket drops everything (a socket filter) from its bind until it has joined the
 * group, so it never holds copies of frames the slot ring also got. 0 on success, the socket and its
 * mapping in *fd and *ring. */
static int block_ring_open(ss_port *port, int *fd_out, uint8_t **ring_out) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
    struct sock_fprog drop_all = {.len = 1, .filter = &drop};
    struct sockaddr_ll addr = {0};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = (int)port->ifindex;
    int join = port->fanout_join, unused = 0;
    uint8_t *ring = block_ring_map(fd);
    if (!ring || setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &drop_all, sizeof drop_all) ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr))
        goto fail;
    enlarge_buffers(fd);
    if (port->program_member && fanout_route(port->fd, 0)) goto fail;
    port->program_member = 0;
    if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &join, sizeof join) ||
        setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused))
        goto fail;
    *fd_out = fd;
    *ring_out = ring;
    return 0;
fail:
    if (ring) munmap(ring, (size_t)SS_BLOCK_SIZE * SS_BLOCK_COUNT);
    close(fd);
    return -1;
}

/* Closes a block ring (its socket leaves the fanout group, the kernel stops its retire timer). */
static void block_ring_close(int fd, uint8_t *ring) {
    if (ring) munmap(ring, (size_t)SS_BLOCK_SIZE * SS_BLOCK_COUNT);
    if (fd >= 0) close(fd);
}

static inline struct tpacket2_hdr *ring_slot(const ss_port *port, uint32_t i) {
    return (struct tpacket2_hdr *)(void *)(port->ring + (size_t)i * port->rx_frame);
}

static inline struct tpacket2_hdr *tx_slot(const ss_port *port, uint32_t i) {
    return (struct tpacket2_hdr *)(void *)(port->tx_ring + (size_t)i * port->tx_frame);
}

static inline struct virtio_net_hdr *tx_vnet(struct tpacket2_hdr *h) {
    return (struct virtio_net_hdr *)(void *)((uint8_t *)h + SS_TX_DATA);
}

/* Opens the port's transmit socket with its ring (TPACKET_V2, virtio-net headers, PACKET_LOSS: a frame
 * the kernel cannot parse is skipped, not a stop of the ring); 0 on success, else the port sends with
 * sendmmsg. */
static int tx_ring_setup(ss_port *port, unsigned ifindex) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int version = TPACKET_V2, one = 1;
    /* larger slots on a jumbo MTU, as many bytes in all (fewer slots: the frames queued stay ~2 MB) */
    uint32_t frame = slot_bytes(fd, port->iface, SS_TX_FRAME);
    uint32_t slots = SS_TX_SLOTS / (frame / SS_TX_FRAME);
    uint32_t per_block = slots < 64 ? slots : 64;
    struct tpacket_req req = {
        .tp_block_size = frame * per_block,
        .tp_block_nr = slots / per_block,
        .tp_frame_size = frame,
        .tp_frame_nr = slots,
    };
    struct sockaddr_ll addr = {0};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = 0; /* sends only: no receive hook */
    addr.sll_ifindex = (int)ifindex;
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", port->iface);
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) ||
        setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) ||
        setsockopt(fd, SOL_PACKET, PACKET_LOSS, &one, sizeof one) ||
        setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) || ioctl(fd, SIOCGIFMTU, &ifr) ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr)) {
        close(fd);
        return -1;
    }
    size_t bytes = (size_t)req.tp_block_size * req.tp_block_nr;
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) {
        close(fd);
        return -1;
    }
    enlarge_buffers(fd);
    port->tx_fd = fd;
    port->tx_ring = ring;
    port->tx_ring_bytes = bytes;
    port->tx_head = port->tx_first = 0;
    port->tx_frame = frame;
    port->tx_slots = slots;
    /* the kernel takes at most MTU + link header (+ a VLAN tag) bytes after the virtio-net header */
    uint32_t slot = frame - (uint32_t)SS_TX_DATA - (uint32_t)sizeof(struct virtio_net_hdr);
    uint32_t mtu = (uint32_t)ifr.ifr_mtu + ETH_HLEN;
    port->tx_max = mtu < slot ? mtu : slot;
    return 0;
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
    /* protocol 0: the socket receives nothing until bind() names the interface and ETH_P_ALL (a socket
     * opened with ETH_P_ALL would queue frames of every interface until it is bound) */
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
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
    ss_port *port = calloc(1, sizeof *port);
    if (!port) {
        close(fd);
        return SS_E_NOMEM;
    }
    port->fd = fd;
    snprintf(port->iface, sizeof port->iface, "%s", iface); /* ring_setup reads the interface's MTU */
    port->block_fd = port->opened_fd = port->retired_fd = -1;
    int slots = io->rx_mode == SS_RX_RING || io->rx_mode == SS_RX_HYBRID;
    if ((slots && ring_setup(port)) || (io->rx_mode == SS_RX_BLOCK && block_ring_setup(port))) {
        /* no ring on this kernel/socket: receive with recvmmsg; the ring options must go */
        close(fd);
        fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
        port->fd = fd;
        if (fd < 0) {
            ss_set_error("port %u: socket: %s", number, strerror(errno));
            free(port);
            return SS_E_IO;
        }
    }
    /* options first, then bind: from the first frame on, the kernel skips the host's own
     * transmissions. Sends go through the interface's qdisc (no PACKET_QDISC_BYPASS): the lab shapes
     * links with tc on the switch's interfaces too. */
    int one = 1;
    port->kernel_ignores_outgoing = setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) == 0;
    enlarge_buffers(fd);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) ||
        setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq)) {
        ss_set_error("port %u: cannot use interface '%s': %s", number, iface, strerror(errno));
        if (port->ring) munmap(port->ring, port->ring_bytes);
        close(fd);
        free(port);
        return SS_E_IO;
    }
    port->number = (uint16_t)number;
    port->tx_fd = -1;
    if (io->rx_mode == SS_RX_HYBRID && port->ring) hybrid_setup(port, ifindex); /* else slots alone */
    if (io->tx_ring_wanted) tx_ring_setup(port, ifindex); /* else (or if it fails) sendmmsg */
    io->ports[number] = port;
    io->n_ports++;
    return SS_OK;
}

/* Hands the frames written to the transmit ring since the last flush to the kernel. The kernel takes
 * slots in order and stops at the first it cannot send (qdisc full, link down, no buffer), leaving it
 * and those after it requested: that one is marked to be skipped and counted as an error, and the
 * kernel is asked again for the rest (as sendmmsg skipped a refused message). */
static void ring_flush(ss_port *port) {
    uint32_t n = port->tx_n, done = 0, errors = 0;
    while (done < n) {
        ssize_t r = send(port->tx_fd, NULL, 0, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        /* slots the kernel has taken are no longer requested; find the first still waiting */
        while (done < n) {
            struct tpacket2_hdr *h = tx_slot(port, (port->tx_first + done) % port->tx_slots);
            if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) == TP_STATUS_SEND_REQUEST) break;
            done++;
        }
        if (done == n) break;
        struct tpacket2_hdr *h = tx_slot(port, (port->tx_first + done) % port->tx_slots);
        tx_vnet(h)->hdr_len = SS_TX_SKIP; /* the kernel frees the slot without sending it */
        errors++;
        done++;
    }
    if (errors) { /* the skipped slots go back to the kernel's order: it skips them on the next send */
        ssize_t ignored = send(port->tx_fd, NULL, 0, MSG_DONTWAIT);
        (void)ignored;
    }
    port->tx += n - errors;
    port->tx_errors += errors;
    port->tx_n = 0;
    port->tx_first = port->tx_head;
}

static void port_flush(ss_io *io, ss_port *port) {
    (void)io;
    if (!port->tx_n) return;
    if (port->tx_ring) {
        ring_flush(port);
        return;
    }
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
        /* MSG_DONTWAIT: a port whose queue is full drops, as a switch's egress queue does, instead of
         * stalling every other port */
        int n = sendmmsg(port->fd, msgs + sent, port->tx_n - sent, MSG_DONTWAIT);
        if (n > 0) {
            sent += (uint32_t)n;
            port->tx += (uint64_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            port->tx_errors++; /* refused (queue or socket buffer full, link down, too long): skip it */
            sent++;
        }
    }
    port->tx_n = 0;
    port->tx_data.len = 0;
}

/* Writes a frame into the port's transmit ring (sent at the next flush); a frame longer than a slot
 * or the MTU goes out now with send(), after the frames before it. */
static void ring_emit(ss_port *port, const uint8_t *data, uint32_t len) {
    if (len > port->tx_max) {
        if (port->tx_n) ring_flush(port);
        if (send(port->fd, data, len, MSG_DONTWAIT) < 0)
            port->tx_errors++;
        else
            port->tx++, port->tx_long++;
        return;
    }
    struct tpacket2_hdr *h = tx_slot(port, port->tx_head);
    if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) {
        /* the kernel has not finished this slot's frame: let it take what is requested (or skip what is
         * marked), then look again; still busy: every slot is queued (a full qdisc), the frame drops */
        if (port->tx_n) {
            ring_flush(port);
        } else {
            ssize_t ignored = send(port->tx_fd, NULL, 0, MSG_DONTWAIT);
            (void)ignored;
        }
        if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) {
            port->tx_errors++;
            return;
        }
    }
    struct virtio_net_hdr *vnet = tx_vnet(h);
    memset(vnet, 0, sizeof *vnet);
    vnet->hdr_len = (uint16_t)len; /* copy the whole frame into the packet (see the top of the file) */
    memcpy((uint8_t *)vnet + sizeof *vnet, data, len);
    h->tp_len = len + (uint32_t)sizeof *vnet;
    __atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
    port->tx_head = (port->tx_head + 1) % port->tx_slots;
    port->tx_n++;
}

static void io_emit(ss_worker *w, uint16_t number, const uint8_t *data, uint32_t len) {
    ss_io *io = w->emit_ctx;
    ss_port *port = number < SS_MAX_PORTS ? io->ports[number] : NULL;
    if (!port) {
        io->unknown_port_drops++;
        return;
    }
    if (port->tx_n == SS_IO_BATCH) port_flush(io, port);
    if (!port->pending) {
        port->pending = 1;
        io->pending[io->n_pending++] = number;
    }
    if (port->tx_ring) {
        ring_emit(port, data, len);
        return;
    }
    if (ss_bytes_reserve(&port->tx_data, len)) {
        port->tx_errors++;
        return;
    }
    memcpy(port->tx_data.data + port->tx_data.len, data, len);
    port->tx_data.len += len;
    port->tx_len[port->tx_n++] = len;
}

/* Runs the batch in io->batch_* (frames from `port`) through the pipeline; its outputs wait in the
 * ports' transmit rings (or buffers) for flush_outputs. */
static void run_batch(ss_io *io, ss_port *port, int n) {
    pthread_mutex_lock(&io->lock);
    ss_switch *sw = io->sw;
    if (!sw) {
        pthread_mutex_unlock(&io->lock);
        return;
    }
    if (!io->first_batch_ns) io->first_batch_ns = ss_now_ns();
    ss_worker *w = &sw->io_worker;
    w->emit = io_emit;
    w->emit_ctx = io;
    w->out.len = 0;
    ss_qdepth_maybe_read(&io->qdepth, sw, ss_now_ns());
    pthread_mutex_lock(&sw->lock);
    ss_worker_clock(w);
    for (int i = 0; i < n; i++) {
        if (io->batch_skip[i]) {
            uint64_t *count = io->batch_skip[i] == SS_SKIP_OUTGOING ? &port->rx_outgoing
                              : io->batch_skip[i] == SS_SKIP_CUT   ? &port->rx_truncated
                                                                   : &port->kernel_drops;
            ++*count;
            continue;
        }
        port->rx++;
        w->input = (uint32_t)i;
        ss_worker_process(w, port->number, io->batch_data[i], io->batch_len[i]);
    }
    pthread_mutex_unlock(&sw->lock);
    io->batches++;
    io->frames_in_batches += (uint64_t)n;
    if (w->out.len && sw->events) ss_events_push(sw->events, &w->out, 0);
    w->out.len = 0;
    io->last_batch_ns = ss_now_ns();
    pthread_mutex_unlock(&io->lock);
}

/* Hands every port's waiting outputs to the kernel (one send() per port). Called once per sweep of the
 * ports, so an output port fed from several input ports in one sweep costs one system call. */
static void flush_outputs(ss_io *io) {
    if (!io->n_pending) return;
    pthread_mutex_lock(&io->lock);
    for (uint32_t i = 0; i < io->n_pending; i++) {
        ss_port *out = io->ports[io->pending[i]];
        port_flush(io, out);
        out->pending = 0;
    }
    io->n_pending = 0;
    io->last_batch_ns = ss_now_ns();
    pthread_mutex_unlock(&io->lock);
}

/* Puts slot `h` (status `status`, handed over) of a port's receive ring into the batch at `n`. */
static void slot_to_batch(ss_io *io, ss_port *port, const struct tpacket2_hdr *h, uint32_t status, int n) {
    const struct sockaddr_ll *sll =
        (const struct sockaddr_ll *)(const void *)((const uint8_t *)h + TPACKET_ALIGN(sizeof *h));
    /* the host's own (e.g. captured before the option took) */
    io->batch_skip[n] = sll->sll_pkttype == PACKET_OUTGOING ? SS_SKIP_OUTGOING : SS_RUN;
    if (status & TP_STATUS_COPY) { /* too long for a slot: the whole frame waits in the socket queue */
        /* MSG_TRUNC: the frame's length even when it is longer than the buffer (then it is cut) */
        ssize_t len = recv(port->fd, io->rx_buf + (size_t)n * SS_IO_FRAME, SS_IO_FRAME, MSG_DONTWAIT | MSG_TRUNC);
        if (len < 0) len = 0, io->batch_skip[n] = SS_SKIP_LOST; /* not queued after all: skip the slot */
        if (len > SS_IO_FRAME) len = SS_IO_FRAME, io->batch_skip[n] = SS_SKIP_CUT;
        io->batch_data[n] = io->rx_buf + (size_t)n * SS_IO_FRAME;
        io->batch_len[n] = (uint32_t)len;
    } else {
        io->batch_data[n] = (const uint8_t *)h + h->tp_mac;
        io->batch_len[n] = h->tp_snaplen;
        if (h->tp_snaplen < h->tp_len) io->batch_skip[n] = SS_SKIP_CUT; /* and no room to queue it whole */
    }
}

/* Gives `n` slots of a port's receive ring from `first` back to the kernel. */
static void release_slots(ss_port *port, uint32_t first, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        __atomic_store_n(&ring_slot(port, (first + i) % port->ring_slots)->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

/* One batch from a port's receive ring: frames stay in the ring while they are processed, then their
 * slots go back to the kernel. Returns the frames taken. */
static int receive_ring(ss_io *io, ss_port *port) {
    int n = 0;
    uint32_t first = port->ring_head;
    while (n < SS_IO_BATCH) {
        struct tpacket2_hdr *h = ring_slot(port, port->ring_head);
        uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (!(status & TP_STATUS_USER)) break;
        slot_to_batch(io, port, h, status, n++);
        port->ring_head = (port->ring_head + 1) % port->ring_slots;
    }
    if (n) run_batch(io, port, n);
    release_slots(port, first, (uint32_t)n);
    return n;
}

/* Frame `index` of the `frames` in a block the kernel has handed over (TP_STATUS_USER: it writes no more
 * into it), at `offset`, if its header, its data and (but for the last) the next frame's offset lie
 * within the block; else NULL. The kernel never writes such a header: the check keeps a broken ring
 * from making the thread read outside its mapping. */
static const struct tpacket3_hdr *block_frame(const struct tpacket_block_desc *block, uint32_t offset,
                                              uint32_t index, uint32_t frames) {
    const uint32_t header = TPACKET_ALIGN(sizeof(struct tpacket3_hdr)) + sizeof(struct sockaddr_ll);
    if (offset < sizeof *block || offset > SS_BLOCK_SIZE - header || offset % SS_BLOCK_FRAME_ALIGN) return NULL;
    const struct tpacket3_hdr *h = (const struct tpacket3_hdr *)(const void *)((const uint8_t *)block + offset);
    uint32_t room = SS_BLOCK_SIZE - offset;
    if (h->tp_mac > room || h->tp_snaplen > room - h->tp_mac) return NULL;
    if (index + 1 < frames && (h->tp_next_offset < header || h->tp_next_offset >= room)) return NULL;
    return h;
}

/* Puts a block's frame into the batch at `n`; 0 if it is dropped instead (cut: longer than a block). */
static int block_to_batch(ss_io *io, ss_port *port, const struct tpacket3_hdr *h, int n) {
    if (h->tp_snaplen < h->tp_len) {
        port->rx_truncated++;
        return 0;
    }
    const struct sockaddr_ll *sll =
        (const struct sockaddr_ll *)(const void *)((const uint8_t *)h + TPACKET_ALIGN(sizeof *h));
    io->batch_skip[n] = sll->sll_pkttype == PACKET_OUTGOING ? SS_SKIP_OUTGOING : SS_RUN;
    io->batch_data[n] = (const uint8_t *)h + h->tp_mac;
    io->batch_len[n] = h->tp_snaplen;
    return 1;
}

/* The next block of a block ring (SOFTSWITCH_IO=block), if the kernel has handed it over: its frames go
 * through the pipeline in batches of up to SS_IO_BATCH, read in place, then the block goes back to the
 * kernel (a broken frame header ends the block, its frames from there on counted in kernel_drops; a
 * frame cut to the block's size is dropped, counted in rx_truncated). Returns the frames taken off the
 * ring, run or not, at least 1 for a block handed over: the next block may be ready too, so the thread
 * sweeps again before it sleeps (sweep_ports). */
static int receive_block(ss_io *io, ss_port *port) {
    struct tpacket_block_desc *block = ring_block(port->ring, port->ring_head);
    if (!(__atomic_load_n(&block->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) return 0;
    uint32_t frames = block->hdr.bh1.num_pkts, offset = block->hdr.bh1.offset_to_first_pkt;
    for (uint32_t done = 0; done < frames;) {
        int n = 0;
        for (; n < SS_IO_BATCH && done < frames; done++) {
            const struct tpacket3_hdr *h = block_frame(block, offset, done, frames);
            if (!h) {
                port->kernel_drops += frames - done;
                done = frames;
                break;
            }
            offset += h->tp_next_offset;
            n += block_to_batch(io, port, h, n);
        }
        if (n) run_batch(io, port, n);
    }
    __atomic_store_n(&block->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    port->ring_head = (port->ring_head + 1) % SS_BLOCK_COUNT;
    return frames ? (int)frames : 1;
}

static inline int slot_ready(const ss_port *port) {
    return (__atomic_load_n(&ring_slot(port, port->ring_head)->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
}

/* Asks the switcher thread to move a hybrid port's frames to its block ring (1) or back to its slots
 * (0). Replacing the fanout's program waits for an RCU grace period (14 ms measured at load 7), so the
 * I/O thread does not make the call: it keeps reading the ring the frames went to until the switcher
 * is done, then drains it and reads the other. */
static void hybrid_request(ss_io *io, ss_port *port, int target) {
    pthread_mutex_lock(&io->switch_lock);
    port->switch_target = target;
    port->switch_started_ns = ss_now_ns();
    __atomic_store_n(&port->switch_state, SS_SWITCH_ASKED, __ATOMIC_RELEASE);
    pthread_cond_signal(&io->switch_wanted);
    pthread_mutex_unlock(&io->switch_lock);
}

/* The switcher thread: replaces the fanout programs the I/O thread asks for (opening a port's block
 * ring first if it has none), closes the block rings it gives up, then wakes it. While a port's request
 * is SS_SWITCH_ASKED the I/O thread leaves its block_ring, blocks_member and retired_* alone. */
static void *switcher_thread(void *arg) {
    ss_io *io = arg;
    pthread_setname_np(pthread_self(), "softswitch-sw");
    pthread_mutex_lock(&io->switch_lock);
    while (!io->switcher_stopping) {
        int any = 0;
        for (uint32_t p = 0; p < SS_MAX_PORTS; p++) {
            ss_port *port = io->ports[p];
            if (!port || __atomic_load_n(&port->switch_state, __ATOMIC_ACQUIRE) != SS_SWITCH_ASKED) continue;
            any = 1;
            int target = port->switch_target, failed = 0, opened_fd = -1;
            uint8_t *opened_ring = NULL;
            pthread_mutex_unlock(&io->switch_lock);
            if (target == SS_CLOSE_BLOCKS) {
                block_ring_close(port->retired_fd, port->retired_ring);
            } else {
                if (target == SS_TO_BLOCKS && !port->block_ring) failed = block_ring_open(port, &opened_fd, &opened_ring);
                int member = target == SS_TO_BLOCKS ? port->blocks_member : !port->blocks_member;
                if (!failed) failed = fanout_route(port->fd, member);
                if (!failed) port->program_member = member;
                if (failed && opened_ring) { /* the frames stay on slots: no ring (and timer) for nothing */
                    block_ring_close(opened_fd, opened_ring);
                    opened_fd = -1, opened_ring = NULL;
                }
            }
            pthread_mutex_lock(&io->switch_lock);
            if (target == SS_CLOSE_BLOCKS) port->retired_fd = -1, port->retired_ring = NULL;
            port->opened_fd = opened_fd;
            port->opened_ring = opened_ring;
            port->switch_failed = failed;
            __atomic_store_n(&port->switch_state, SS_SWITCH_DONE, __ATOMIC_RELEASE);
            uint64_t one = 1;
            ssize_t ignored = write(io->wake_fd, &one, sizeof one);
            (void)ignored;
        }
        if (!any) pthread_cond_wait(&io->switch_wanted, &io->switch_lock);
    }
    pthread_mutex_unlock(&io->switch_lock);
    return NULL;
}

/* The switcher has done what it was asked: a block ring it opened becomes the port's, and after a move
 * frames go to the other ring from now on, the one they went to drained first. */
static void hybrid_switched(ss_io *io, ss_port *port) {
    uint64_t now = ss_now_ns();
    __atomic_store_n(&port->switch_state, SS_SWITCH_NONE, __ATOMIC_RELEASE);
    if (port->switch_target == SS_CLOSE_BLOCKS) return;
    if (port->opened_ring) {
        pthread_mutex_lock(&io->switch_lock); /* ss_io_port_stats reads the block socket */
        port->block_fd = port->opened_fd;
        port->block_ring = port->opened_ring;
        pthread_mutex_unlock(&io->switch_lock);
        port->opened_fd = -1;
        port->opened_ring = NULL;
        port->block_head = port->block_done = port->block_offset = 0;
        port->block_seq = ring_block(port->block_ring, 0)->hdr.bh1.seq_num; /* the kernel opened the first block */
        port->block_rings++;
    }
    if (port->switch_failed) { /* the frames go where they went; a failed move to blocks is tried later */
        if (port->switch_target == SS_TO_BLOCKS) {
            port->hold_ns = port->hold_ns * 2 > SS_HYBRID_HOLD_MAX_NS ? SS_HYBRID_HOLD_MAX_NS : port->hold_ns * 2;
            port->hold_until_ns = now + port->hold_ns;
        }
        return;
    }
    port->switch_ns += now - port->switch_started_ns;
    port->switches++;
    port->on_blocks = port->switch_target;
    port->draining = 1;
    port->window_start_ns = now;
    port->window_bytes = 0;
    if (port->on_blocks) {
        port->full_blocks = 0;
        return;
    }
    /* a short stay on blocks: the rate hovers at the threshold, or the traffic stalls behind a half-full
     * block (a window-limited stream); wait longer before the next try */
    if (port->full_blocks < SS_HYBRID_STAY_BLOCKS)
        port->hold_ns = port->hold_ns * 2 > SS_HYBRID_HOLD_MAX_NS ? SS_HYBRID_HOLD_MAX_NS : port->hold_ns * 2;
    else
        port->hold_ns = SS_HYBRID_HOLD_NS;
    port->hold_until_ns = now + port->hold_ns;
    port->slots_since_ns = now;
}

/* Whether a hybrid port may give up its block ring: back on slots for SS_HYBRID_RETIRE_NS, no move
 * asked, nothing left to read in the block ring (checked by the caller). */
static inline int hybrid_may_retire(const ss_port *port, uint64_t now) {
    return port->block_ring && !port->on_blocks && !port->draining && !port->switch_state && !port->waits_for_block &&
           now - port->slots_since_ns >= SS_HYBRID_RETIRE_NS;
}

/* Gives the port's empty block ring to the switcher to close: the program has routed every frame to the
 * slots since the move back (a grace period ago), so none can reach the ring any more. The next block
 * socket joins as member 1 (the slot socket is the group's only member once this one has left). Not
 * covered: a link bounce whose relink swaps the members (this kernel keeps their order) between the
 * check that the ring is empty and the close would send the frames of that moment to the closing ring,
 * lost as frames on a bouncing link may be. */
static void hybrid_retire(ss_io *io, ss_port *port) {
    struct tpacket_stats st = {0};
    socklen_t len = sizeof st;
    pthread_mutex_lock(&io->switch_lock);
    if (getsockopt(port->block_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) port->retired_drops += st.tp_drops;
    port->retired_fd = port->block_fd;
    port->retired_ring = port->block_ring;
    port->block_fd = -1;
    port->block_ring = NULL;
    pthread_mutex_unlock(&io->switch_lock);
    port->blocks_member = 1;
    hybrid_request(io, port, SS_CLOSE_BLOCKS);
}

/* A frame's or block's kernel timestamp (ns, CLOCK_REALTIME): orders frames across a port's two rings. */
static inline uint64_t kernel_ns(uint32_t sec, uint32_t nsec) {
    return (uint64_t)sec * 1000000000ull + nsec;
}

/* Whether the kernel is filling block `at` of a hybrid port's block ring (not handed over, opened since
 * the thread gave it back, frames in it) and then when it opened it. A block the kernel has not opened
 * again (the ring was full, until the next frame or its timer) still shows its earlier fill's header:
 * only the block whose sequence number follows the last one read is the one being filled. No frame of
 * it is read: the kernel counts a frame (num_pkts) before it writes the frame's header and data. */
static int block_filling(const ss_port *port, uint32_t at, uint64_t *opened_ns) {
    const struct tpacket_block_desc *block = ring_block(port->block_ring, at);
    if (__atomic_load_n(&block->hdr.bh1.seq_num, __ATOMIC_ACQUIRE) != port->block_seq ||
        !__atomic_load_n(&block->hdr.bh1.num_pkts, __ATOMIC_ACQUIRE))
        return 0;
    *opened_ns = kernel_ns(block->hdr.bh1.ts_first_pkt.ts_sec, block->hdr.bh1.ts_first_pkt.ts_nsec);
    return 1;
}

/* Whether a hybrid port's block ring (1) or slots (0) hold frames the thread has not read. */
static int hybrid_ring_has_frames(const ss_port *port, int blocks) {
    if (!blocks) return slot_ready(port);
    if (!port->block_ring) return 0;
    const struct tpacket_block_desc *block = ring_block(port->block_ring, port->block_head);
    uint64_t opened_ns;
    return (__atomic_load_n(&block->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) ||
           block_filling(port, port->block_head, &opened_ns);
}

/* A handed-over block whose frames are all taken (given back after the batch): the next one's sequence
 * number, and on blocks the rate that keeps the port there. */
static void hybrid_block_taken(ss_port *port, const struct tpacket_block_desc *block, int moving) {
    port->block_seq = block->hdr.bh1.seq_num + 1;
    if (!port->on_blocks || moving) return;
    if (!(block->hdr.bh1.block_status & TP_STATUS_BLK_TMO)) port->full_blocks++;
    port->window_bytes += block->hdr.bh1.blk_len;
}

/* The rate of a hybrid port on slots (`bytes` read at `now`, a block's frame overhead counted): a
 * block's worth within SS_HYBRID_WINDOW_NS moves it to blocks, unless a hold is on. */
static void hybrid_slot_rate(ss_io *io, ss_port *port, uint64_t bytes, uint64_t now) {
    if (now - port->window_start_ns >= SS_HYBRID_WINDOW_NS) {
        port->window_start_ns = now;
        port->window_bytes = 0;
    }
    port->window_bytes += bytes;
    if (port->window_bytes >= SS_BLOCK_SIZE && now >= port->hold_until_ns) hybrid_request(io, port, SS_TO_BLOCKS);
}

/* One batch from a hybrid port. Frames are read only once the kernel has handed them over (a slot, or a
 * block with TP_STATUS_USER), never in the block it is filling. While a move is asked, the ring the
 * frames went to is read; after it, that ring until it is empty (the grace period put all its frames
 * before the other's), then both rings, frame by frame in the order of their kernel timestamps: a link
 * bounce relinks the two sockets to the fanout group without a grace period (frames can go to the other
 * ring for a moment, or for good if the relink changed their order), and a slot frame waits while the
 * block being filled, opened before it arrived, may hold older frames (at most the block's timeout).
 * Returns the frames put in the batch (a frame cut to a block's size is taken but dropped, counted in
 * rx_truncated); it reads until both rings are empty or the batch is full, so 0 means nothing waits. */
static int receive_hybrid(ss_io *io, ss_port *port) {
    int state = __atomic_load_n(&port->switch_state, __ATOMIC_ACQUIRE);
    if (state == SS_SWITCH_DONE) hybrid_switched(io, port);
    int moving = state == SS_SWITCH_ASKED;
    if (port->draining && !hybrid_ring_has_frames(port, !port->on_blocks)) port->draining = 0;
    int use_blocks = port->block_ring && (moving ? port->on_blocks : port->draining ? !port->on_blocks : 1);
    int use_slots = moving ? !port->on_blocks : port->draining ? port->on_blocks : 1;
    uint32_t finished = 0, slots = 0, from_blocks = 0, from_slots = 0;
    uint64_t slot_bytes = 0;
    int n = 0;
    port->waits_for_block = 0;
    while (n < SS_IO_BATCH) {
        const struct tpacket3_hdr *b = NULL;
        uint64_t opened_ns = 0;
        int filling = 0;
        if (use_blocks && finished < SS_BLOCK_COUNT) {
            uint32_t at = (port->block_head + finished) % SS_BLOCK_COUNT;
            struct tpacket_block_desc *block = ring_block(port->block_ring, at);
            if (__atomic_load_n(&block->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
                uint32_t frames = block->hdr.bh1.num_pkts;
                if (port->block_done >= frames) {
                    hybrid_block_taken(port, block, moving);
                    finished++;
                    port->block_done = 0;
                    continue;
                }
                if (!port->block_done) port->block_offset = block->hdr.bh1.offset_to_first_pkt;
                b = block_frame(block, port->block_offset, port->block_done, frames);
                if (!b) { /* a broken header ends the block */
                    port->kernel_drops += frames - port->block_done;
                    port->block_done = frames;
                    continue;
                }
            } else {
                filling = block_filling(port, at, &opened_ns);
            }
        }
        struct tpacket2_hdr *h = NULL;
        uint32_t status = 0;
        if (use_slots) {
            h = ring_slot(port, (port->ring_head + slots) % port->ring_slots);
            status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
            if (!(status & TP_STATUS_USER)) h = NULL;
        }
        /* The merge by timestamps assumes a frame's kernel timestamp is never earlier than the block's
         * ts_first_pkt and that the clock runs forward: a frame whose skb->tstamp was set earlier (another
         * socket enabled timestamping before this one) or a CLOCK_REALTIME step can order frames wrongly
         * in the moment of a relink (outside it only one ring has frames). */
        if (b && (!h || kernel_ns(b->tp_sec, b->tp_nsec) <= kernel_ns(h->tp_sec, h->tp_nsec))) {
            n += block_to_batch(io, port, b, n);
            port->block_offset += b->tp_next_offset;
            port->block_done++;
            from_blocks++;
            continue;
        }
        if (!h) break;
        if (filling && kernel_ns(h->tp_sec, h->tp_nsec) >= opened_ns) {
            port->waits_for_block = 1;
            break;
        }
        slot_to_batch(io, port, h, status, n);
        slot_bytes += io->batch_len[n++] + SS_BLOCK_FRAME_OVERHEAD;
        slots++;
        from_slots++;
    }
    if (n) run_batch(io, port, n);
    release_slots(port, port->ring_head, slots);
    port->ring_head = (port->ring_head + slots) % port->ring_slots;
    for (uint32_t i = 0; i < finished; i++) {
        struct tpacket_block_desc *block = ring_block(port->block_ring, port->block_head);
        __atomic_store_n(&block->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        port->block_head = (port->block_head + 1) % SS_BLOCK_COUNT;
    }
    if (moving) return n;
    /* frames only in the ring the program does not route to, SS_HYBRID_STRAYS in a row: a link bounce
     * relinked the sockets in the other order, so the program's member is the other socket now */
    uint32_t routed = port->on_blocks ? from_blocks : from_slots, strays = port->on_blocks ? from_slots : from_blocks;
    if (!port->draining) port->strays = routed ? 0 : port->strays + strays;
    if (port->strays >= SS_HYBRID_STRAYS) {
        port->blocks_member = !port->blocks_member;
        port->on_blocks = !port->on_blocks;
        port->strays = 0;
        port->window_start_ns = port->slots_since_ns = ss_now_ns();
        port->window_bytes = 0;
        return n;
    }
    uint64_t now = ss_now_ns();
    if (hybrid_may_retire(port, now) && !hybrid_ring_has_frames(port, 1)) {
        hybrid_retire(io, port);
        return n;
    }
    if (port->on_blocks) {
        /* The kernel's retire timer runs every millisecond whatever the rate, so even at full rate some
         * blocks are handed over part-full: a block's timeout is no sign of a low rate. The rate is: the
         * bytes handed over per SS_HYBRID_DOWN_WINDOW_NS, back to slots under half the rate that moved
         * the port to blocks (hysteresis) */
        if (finished && now - port->window_start_ns >= SS_HYBRID_DOWN_WINDOW_NS) {
            if (port->window_bytes < (uint64_t)SS_BLOCK_SIZE / 2 * (SS_HYBRID_DOWN_WINDOW_NS / SS_HYBRID_WINDOW_NS))
                hybrid_request(io, port, SS_TO_SLOTS);
            port->window_start_ns = now;
            port->window_bytes = 0;
        }
    } else if (from_slots) {
        hybrid_slot_rate(io, port, slot_bytes, now);
    }
    return n;
}

/* One batch from a hybrid port that has no block ring and no move pending: its slots as receive_ring
 * reads them (the cost of frame slots alone), and the rate that moves it to blocks. */
static int receive_hybrid_slots(ss_io *io, ss_port *port) {
    int n = receive_ring(io, port);
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) bytes += io->batch_len[i] + SS_BLOCK_FRAME_OVERHEAD;
    if (n) hybrid_slot_rate(io, port, bytes, ss_now_ns());
    return n;
}

/* Whether the thread may sleep without watching a hybrid port's slots: they wait (and poll() would
 * report them at once, a spin) while the block the kernel is filling may hold older frames, until its
 * timeout hands it over (the block socket reports that). */
static inline int hybrid_waits_for_block(const ss_port *port) {
    return port->block_ring && (port->waits_for_block || (port->draining && !port->on_blocks && !port->switch_state));
}

/* Whether a hybrid port's ring of blocks (1) or slots (0) is the one a pending move goes to: the thread
 * reads it only once the switcher is done (it writes wake_fd then), so poll() must not watch its socket
 * meanwhile, or frames arriving there would wake it at once, a spin for the whole move. */
static inline int hybrid_move_target(const ss_port *port, int blocks) {
    return port->hybrid && __atomic_load_n(&port->switch_state, __ATOMIC_ACQUIRE) == SS_SWITCH_ASKED &&
           port->on_blocks != blocks;
}

/* One batch with recvmmsg (ports without a ring). Returns the frames taken. */
static int receive_recvmmsg(ss_io *io, ss_port *port) {
    for (int k = 0; k < SS_IO_BATCH; k++) io->rx_msgs[k].msg_hdr.msg_namelen = sizeof io->rx_addr[k];
    int got = recvmmsg(port->fd, io->rx_msgs, SS_IO_BATCH, MSG_DONTWAIT, NULL);
    if (got <= 0) return 0;
    for (int i = 0; i < got; i++) {
        io->batch_data[i] = io->rx_iov[i].iov_base;
        io->batch_len[i] = io->rx_msgs[i].msg_len;
        io->batch_skip[i] = io->rx_addr[i].sll_pkttype == PACKET_OUTGOING ? SS_SKIP_OUTGOING
                            : io->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC ? SS_SKIP_CUT /* longer than SS_IO_FRAME */
                                                                           : SS_RUN;
    }
    run_batch(io, port, got);
    return got;
}

/* Frames waiting at a port, seen in user space without a system call: the status word of the ring's
 * next slot or block. A port without a ring (recvmmsg) is read at every sweep (a read that finds
 * nothing costs a system call, as the poll() it replaces). */
static inline int port_has_input(const ss_port *port) {
    /* receive_hybrid looks at both rings (a link event may swap them) and at the switcher's answer */
    if (port->hybrid && (port->block_ring || port->switch_state)) return 1;
    if (port->rx_blocks) {
        const struct tpacket_block_desc *block =
            (const struct tpacket_block_desc *)(const void *)(port->ring + (size_t)port->ring_head * SS_BLOCK_SIZE);
        return (__atomic_load_n(&block->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
    }
    if (port->ring) return (__atomic_load_n(&ring_slot(port, port->ring_head)->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
    return 1;
}

/* One batch (a block with the block ring) from each port with frames waiting, in port order: a port
 * that stays busy gets one batch per sweep like every other, so it starves none. Returns the frames
 * taken (skipped and dropped ones too): not 0 while a port may still hold frames, so the thread sleeps
 * only after a sweep that found nothing. */
static int sweep_ports(ss_io *io, ss_port **ports, uint32_t n) {
    int total = 0;
    for (uint32_t i = 0; i < n && !io->paused; i++) {
        ss_port *port = ports[i];
        if (!port_has_input(port)) continue;
        int got = port->hybrid      ? (port->block_ring || port->switch_state ? receive_hybrid(io, port)
                                                                               : receive_hybrid_slots(io, port))
                  : port->rx_blocks ? receive_block(io, port)
                  : port->ring      ? receive_ring(io, port)
                                    : receive_recvmmsg(io, port);
        total += got;
    }
    flush_outputs(io);
    return total;
}

/* The I/O thread: sweeps the ports' rings in user space for as long as frames keep coming, and sleeps in
 * poll() only when a sweep finds every port empty. While frames keep coming it makes no system call but
 * one send() per output port and sweep, and the kernel has nobody to wake for each arriving frame. */
static void *io_thread(void *arg) {
    ss_io *io = arg;
    pthread_setname_np(pthread_self(), "softswitch-io");
    struct pollfd fds[2 * SS_MAX_PORTS + 1];
    ss_port *by_index[SS_MAX_PORTS];
    uint32_t n = 0, n_fds = 0, slots_fd[SS_MAX_PORTS]; /* by_index[i]'s slot socket is fds[slots_fd[i]] */
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++)
        if (io->ports[p]) {
            slots_fd[n] = n_fds;
            fds[n_fds].fd = io->ports[p]->fd;
            fds[n_fds++].events = POLLIN;
            if (io->ports[p]->hybrid) { /* its block socket while it has one (set before each poll) */
                fds[n_fds].fd = -1;
                fds[n_fds++].events = POLLIN;
            }
            by_index[n++] = io->ports[p];
        }
    fds[n_fds].fd = io->wake_fd;
    fds[n_fds].events = POLLIN;
    while (!io->stopping) {
        if (io->paused) {
            io->pause_acked = 1;
            uint64_t value;
            ssize_t ignored = read(io->wake_fd, &value, sizeof value);
            (void)ignored;
            poll(&fds[n_fds], 1, 10);
            continue;
        }
        if (sweep_ports(io, by_index, n)) continue;
        /* a hybrid port on blocks (or between rings) may hold a frame in a block the kernel has not
         * handed over yet: sleep at most SS_HYBRID_IDLE_MS, and an idle port goes back to slots */
        int timeout = -1;
        uint64_t now = ss_now_ns();
        for (uint32_t i = 0; i < n; i++) {
            ss_port *port = by_index[i]; /* fd -1: not watched */
            int ms = -1;
            if (port->on_blocks || port->draining || port->switch_state || port->waits_for_block) {
                ms = SS_HYBRID_IDLE_MS;
            } else if (port->block_ring) { /* wake to close it (receive_hybrid); never sooner than the idle wait */
                uint64_t since = now - port->slots_since_ns;
                ms = (int)((since >= SS_HYBRID_RETIRE_NS ? 0 : SS_HYBRID_RETIRE_NS - since) / 1000000) + SS_HYBRID_IDLE_MS;
            }
            if (ms >= 0 && (timeout < 0 || ms < timeout)) timeout = ms;
            fds[slots_fd[i]].fd = hybrid_waits_for_block(port) || hybrid_move_target(port, 0) ? -1 : port->fd;
            if (port->hybrid) fds[slots_fd[i] + 1].fd = port->block_ring && !hybrid_move_target(port, 1) ? port->block_fd : -1;
        }
        __atomic_add_fetch(&io->sleeps, 1, __ATOMIC_RELAXED);
        int ready = poll(fds, n_fds + 1, timeout);
        if (io->stopping) break;
        if (ready == 0)
            for (uint32_t i = 0; i < n; i++)
                if (by_index[i]->on_blocks && !by_index[i]->draining && !by_index[i]->switch_state)
                    hybrid_request(io, by_index[i], SS_TO_SLOTS);
        if (fds[n_fds].revents & POLLIN) {
            uint64_t value;
            ssize_t ignored = read(io->wake_fd, &value, sizeof value);
            (void)ignored;
        }
        if (ready < 0) {
            if (errno == EINTR) continue;
            break;
        }
        /* A link going down sets an error on the port's socket (ENETDOWN) that poll() reports until it is
         * read; a ring port never reads the socket, so read it here or every poll() returns at once */
        for (uint32_t i = 0; i < n_fds; i++)
            if (fds[i].revents & POLLERR) {
                int error = 0;
                socklen_t error_len = sizeof error;
                getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &error, &error_len);
            }
    }
    return NULL;
}

SS_EXPORT int ss_io_start(ss_io *io) {
    if (io->running) return SS_OK;
    io->stopping = 0;
    int hybrid = 0;
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++) hybrid |= io->ports[p] && io->ports[p]->hybrid;
    if (hybrid && !io->switcher_running) {
        io->switcher_stopping = 0;
        if (pthread_create(&io->switcher, NULL, switcher_thread, io)) {
            ss_set_error("cannot start the port switcher thread: %s", strerror(errno));
            return SS_E_IO;
        }
        io->switcher_running = 1;
    }
    if (pthread_create(&io->thread, NULL, io_thread, io)) {
        ss_set_error("cannot start the port I/O thread: %s", strerror(errno));
        return SS_E_IO;
    }
    io->running = 1;
    return SS_OK;
}

/* Reads the ports' queue depths (their root qdiscs' lengths) before a batch runs whenever the last
 * reading is `interval_ns` old or more (ss_qdepth.c); 0 stops reading. `cell_bytes`: the queue cell a TNA
 * program's enq_qdepth counts (its frames' cells are stored; a v1model program gets frames). After the
 * ports are added and before the thread starts; 0 or an error code. */
SS_EXPORT int ss_io_queue_depth(ss_io *io, uint64_t interval_ns, uint32_t cell_bytes) {
    if (io->running) {
        ss_set_error("queue depth reading cannot change while the I/O thread runs");
        return SS_E_INVALID;
    }
    ss_qdepth_close(&io->qdepth);
    if (!interval_ns || !io->n_ports) return SS_OK;
    unsigned ifindexes[SS_MAX_PORTS];
    uint16_t numbers[SS_MAX_PORTS];
    uint32_t n = 0;
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++)
        if (io->ports[p]) {
            ifindexes[n] = if_nametoindex(io->ports[p]->iface);
            if (!ifindexes[n]) {
                ss_set_error("queue depth of port %u: no interface '%s': %s", p, io->ports[p]->iface, strerror(errno));
                return SS_E_IO;
            }
            numbers[n++] = (uint16_t)p;
        }
    return ss_qdepth_open(&io->qdepth, ifindexes, numbers, n, interval_ns, cell_bytes);
}

/* Readings of the ports' queue depths so far, and the sends of the requests the kernel refused */
SS_EXPORT void ss_io_queue_depth_stats(ss_io *io, uint64_t *out) {
    pthread_mutex_lock(&io->lock);
    out[0] = io->qdepth.samples;
    out[1] = io->qdepth.errors;
    pthread_mutex_unlock(&io->lock);
}

/* Pauses (1) or resumes (0) reading the ports; frames wait in the rings and socket buffers meanwhile.
 * A pause returns once the thread has stopped reading (the caller releases the GIL meanwhile). */
SS_EXPORT void ss_io_pause(ss_io *io, int paused) {
    io->pause_acked = 0;
    io->paused = paused;
    uint64_t one = 1;
    ssize_t ignored = write(io->wake_fd, &one, sizeof one);
    (void)ignored;
    while (paused && io->running && !io->pause_acked) usleep(100);
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
    if (io->switcher_running) {
        pthread_mutex_lock(&io->switch_lock);
        io->switcher_stopping = 1;
        pthread_cond_signal(&io->switch_wanted);
        pthread_mutex_unlock(&io->switch_lock);
        pthread_join(io->switcher, NULL);
        io->switcher_running = 0;
    }
    for (uint32_t p = 0; p < SS_MAX_PORTS; p++) {
        ss_port *port = io->ports[p];
        if (!port) continue;
        if (port->ring) munmap(port->ring, port->ring_bytes);
        close(port->fd);
        block_ring_close(port->block_fd, port->block_ring); /* and the ones between the threads */
        block_ring_close(port->opened_fd, port->opened_ring);
        block_ring_close(port->retired_fd, port->retired_ring);
        if (port->tx_ring) munmap(port->tx_ring, port->tx_ring_bytes);
        if (port->tx_fd >= 0) close(port->tx_fd);
        ss_bytes_free(&port->tx_data);
        free(port);
        io->ports[p] = NULL;
    }
    io->n_ports = 0;
    ss_qdepth_close(&io->qdepth);
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

/* Port counters: rx, tx, tx_errors, rx_outgoing (frames the host sent, skipped), how the port receives
 * (0: recvmmsg, 1: a ring of frame slots, 2: a ring of blocks, 3: hybrid), kernel drops (the socket's
 * or ring's), 1 when it sends through a ring (0: sendmmsg), frames sent with send() as too long for the
 * ring, and for a hybrid port: 1 when its frames go to blocks now, moves between the rings, nanoseconds
 * those moves took; then frames dropped as cut (rx_truncated), 1 when a hybrid port has its block ring now
 * and the block rings it has opened; -1 if no such port. */
SS_EXPORT int ss_io_port_stats(ss_io *io, uint32_t number, uint64_t *out) {
    ss_port *port = number < SS_MAX_PORTS ? io->ports[number] : NULL;
    if (!port) return -1;
    out[0] = port->rx;
    out[1] = port->tx;
    out[2] = port->tx_errors;
    out[3] = port->rx_outgoing;
    out[4] = port->hybrid ? 3 : port->rx_blocks ? 2 : port->ring != NULL;
    out[6] = port->tx_ring != NULL;
    out[7] = port->tx_long;
    struct tpacket_stats st = {0};
    socklen_t len = sizeof st;
    if (getsockopt(port->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) port->kernel_drops += st.tp_drops;
    len = sizeof st;
    pthread_mutex_lock(&io->switch_lock); /* the block socket comes and goes (hybrid_switched, hybrid_retire) */
    if (port->block_ring && getsockopt(port->block_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
        port->kernel_drops += st.tp_drops;
    port->kernel_drops += port->retired_drops;
    port->retired_drops = 0;
    out[12] = port->block_ring != NULL;
    pthread_mutex_unlock(&io->switch_lock);
    out[5] = port->kernel_drops;
    out[8] = (uint64_t)port->on_blocks;
    out[9] = port->switches;
    out[10] = port->switch_ns;
    out[11] = port->rx_truncated;
    out[13] = port->block_rings;
    return 0;
}

/* unknown_port_drops, batches, frames in batches, first batch start and last batch end (ns, monotonic),
 * times the thread slept in poll() */
SS_EXPORT void ss_io_stats(ss_io *io, uint64_t *out) {
    pthread_mutex_lock(&io->lock);
    out[0] = io->unknown_port_drops;
    out[1] = io->batches;
    out[2] = io->frames_in_batches;
    out[3] = io->first_batch_ns;
    out[4] = io->last_batch_ns;
    out[5] = __atomic_load_n(&io->sleeps, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&io->lock);
}

SS_EXPORT void ss_io_stats_reset(ss_io *io) {
    pthread_mutex_lock(&io->lock);
    io->batches = io->frames_in_batches = io->first_batch_ns = io->last_batch_ns = 0;
    __atomic_store_n(&io->sleeps, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&io->lock);
}
