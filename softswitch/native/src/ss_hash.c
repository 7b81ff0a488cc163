/* Hash and checksum algorithms of v1model, as the Python runtime (softswitch/runtime/support.py) and
 * BMv2 compute them, with a streaming interface so a checksum can continue over the payload. */
#include "ss_internal.h"

static uint16_t crc16_table[256];
static uint32_t crc32_table[256];

__attribute__((constructor)) static void hash_tables_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r16 = b, r32 = b;
        for (int i = 0; i < 8; i++) {
            r16 = (r16 & 1) ? (r16 >> 1) ^ 0xA001 : r16 >> 1;
            r32 = (r32 & 1) ? (r32 >> 1) ^ 0xEDB88320u : r32 >> 1;
        }
        crc16_table[b] = (uint16_t)r16;
        crc32_table[b] = r32;
    }
}

SS_EXPORT void ss_hash_init(ss_hash_state *h, uint32_t algo) {
    h->algo = algo;
    h->odd = 0;
    h->pending = 0;
    h->acc = algo == SS_HASH_CRC32 ? 0xFFFFFFFFu : 0;
}

SS_EXPORT void ss_hash_update(ss_hash_state *h, const uint8_t *data, size_t len) {
    size_t i = 0;
    switch (h->algo) {
    case SS_HASH_CRC16: {
        uint32_t r = (uint32_t)h->acc;
        for (; i < len; i++) r = (r >> 8) ^ crc16_table[(r ^ data[i]) & 0xFF];
        h->acc = r;
        break;
    }
    case SS_HASH_CRC32: {
        uint32_t r = (uint32_t)h->acc;
        for (; i < len; i++) r = (r >> 8) ^ crc32_table[(r ^ data[i]) & 0xFF];
        h->acc = r;
        break;
    }
    case SS_HASH_CSUM16:
    case SS_HASH_XOR16: {
        int xor = h->algo == SS_HASH_XOR16;
        uint64_t acc = h->acc;
        if (h->odd && len) {
            uint32_t word = ((uint32_t)h->pending << 8) | data[0];
            acc = xor ? (acc ^ word) : acc + word;
            h->odd = 0;
            i = 1;
        }
        for (; i + 1 < len; i += 2) {
            uint32_t word = ((uint32_t)data[i] << 8) | data[i + 1];
            acc = xor ? (acc ^ word) : acc + word;
        }
        if (i < len) {
            h->pending = data[i];
            h->odd = 1;
        }
        h->acc = acc;
        break;
    }
    default: { /* identity: the low 64 bits of the big-endian number */
        uint64_t acc = h->acc;
        for (; i < len; i++) acc = (acc << 8) | data[i];
        h->acc = acc;
    }
    }
}

SS_EXPORT uint64_t ss_hash_final(ss_hash_state *h) {
    switch (h->algo) {
    case SS_HASH_CRC16: return h->acc & 0xFFFF;
    case SS_HASH_CRC32: return (~(uint32_t)h->acc) & 0xFFFFFFFFu;
    case SS_HASH_CSUM16: {
        uint64_t s = h->acc;
        if (h->odd) s += (uint32_t)h->pending << 8; /* zero byte appended */
        while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
        return (~s) & 0xFFFF;
    }
    case SS_HASH_XOR16: {
        uint64_t s = h->acc;
        if (h->odd) s ^= (uint32_t)h->pending << 8;
        return s & 0xFFFF;
    }
    default: return h->acc;
    }
}

SS_EXPORT uint64_t ss_hash_bytes(uint32_t algo, const uint8_t *data, size_t len) {
    ss_hash_state h;
    ss_hash_init(&h, algo);
    ss_hash_update(&h, data, len);
    return ss_hash_final(&h);
}

SS_EXPORT uint64_t ss_hash_extern(uint32_t algo, const uint8_t *data, size_t len, uint64_t base, uint64_t max,
                                  uint32_t width) {
    uint64_t h;
    if (algo == SS_HASH_IDENTITY && max) { /* the whole number mod max, however many bytes */
        unsigned __int128 r = 0;
        for (size_t i = 0; i < len; i++) r = ((r << 8) | data[i]) % max;
        h = base + (uint64_t)r;
    } else {
        h = ss_hash_bytes(algo, data, len);
        h = max ? base + h % max : base + h; /* truncated below: the low 64 bits of h suffice */
    }
    return h & ss_mask64(width);
}
