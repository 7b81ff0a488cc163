/* tofino1_specs.p4 for softswitch: the types and sizes that depend on the device (Tofino 1).
 * Written for softswitch from the TNA documentation. */
#ifndef _SOFTSWITCH_TOFINO1_SPECS_P4_
#define _SOFTSWITCH_TOFINO1_SPECS_P4_
#define _TOFINO1_P4_SPECS_

#include <core.p4>

/* A port number is 9 bits: pipe in bits 8..7, port within the pipe in bits 6..0. */
#define PORT_ID_WIDTH 9
typedef bit<PORT_ID_WIDTH> PortId_t;

#define MULTICAST_GROUP_ID_WIDTH 16
typedef bit<MULTICAST_GROUP_ID_WIDTH> MulticastGroupId_t;

#define QUEUE_ID_WIDTH 5
typedef bit<QUEUE_ID_WIDTH> QueueId_t;

#define MIRROR_TYPE_WIDTH 3
typedef bit<MIRROR_TYPE_WIDTH> MirrorType_t;

#define MIRROR_ID_WIDTH 10
typedef bit<MIRROR_ID_WIDTH> MirrorId_t;

#define RESUBMIT_TYPE_WIDTH 3
typedef bit<RESUBMIT_TYPE_WIDTH> ResubmitType_t;

#define DIGEST_TYPE_WIDTH 3
typedef bit<DIGEST_TYPE_WIDTH> DigestType_t;

#define REPLICATION_ID_WIDTH 16
typedef bit<REPLICATION_ID_WIDTH> ReplicationId_t;

#define L1_EXCLUSION_ID_WIDTH 16
typedef bit<L1_EXCLUSION_ID_WIDTH> L1ExclusionId_t;

#define L2_EXCLUSION_ID_WIDTH 9
typedef bit<L2_EXCLUSION_ID_WIDTH> L2ExclusionId_t;

typedef error ParserError_t;

/* Bits of per-port metadata (phase 0) in front of every packet entering the ingress parser, after the
 * ingress intrinsic metadata: a parser skips them with advance() or reads them with port_metadata_unpack(). */
const bit<32> PORT_METADATA_SIZE = 32w64;

#define DEVPORT_PIPE_MASK 0x180
#define DEVPORT_PIPE(port) (port)[8:7]
#define DEVPORT_PORT_MASK 0x7f
#define DEVPORT_PORT(port) (port)[6:0]

#endif
