/* softswitch native runtime: helpers for the C that softswitch/backend_c generates.
 *
 * Values: a bit<W> or int<W> value is its W-bit pattern (two's complement for int<W>) in a uint64_t
 * (W <= 64) or an ss_u128 (W <= 128), with every bit above W zero. Operators whose plain C form would
 * be wrong or undefined for such patterns live here: shifts by amounts >= W, arithmetic right shift,
 * sign extension, saturating arithmetic, division by zero (drops the packet). Big-endian loads and
 * stores read and write header fields at constant offsets; with constant arguments they fold into a
 * load, a byte swap and a shift.
 */
#ifndef SS_VALUES_H
#define SS_VALUES_H

#include "ss_program.h"

typedef unsigned __int128 ss_u128;
typedef __int128 ss_i128;

/* field access must fold to a load and a shift: never left to the compiler's inlining budget */
#define SS_ALWAYS_INLINE static inline __attribute__((always_inline))

/* A generated function with a loop over lanes (the C back end's lane runs, and header I/O of a run of
   same-width fields): never inlined (deep in its caller's branches gcc would take the loop for cold code
   and compile it for size), and on x86-64 built twice, for AVX2 and for the baseline instruction set,
   the loader picking the one the CPU runs (ifunc): the baseline has no 64-bit compares or byte shuffles,
   so gcc vectorises these loops only with AVX2. glibc only: ifunc is glibc's (musl's gcc refuses the
   attribute). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && defined(__GLIBC__)
#define SS_LANE_FUNCTION static __attribute__((noinline, target_clones("avx2", "default")))
#else
#define SS_LANE_FUNCTION static __attribute__((noinline))
#endif

/* ------------------------------------------------------------------ big-endian bytes */

/* n (1..8) bytes at b as a big-endian number */
SS_ALWAYS_INLINE uint64_t ss_load_be(const uint8_t *b, uint32_t n) {
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (n) {
    case 1: return b[0];
    case 2: memcpy(&v16, b, 2); return __builtin_bswap16(v16);
    case 3: memcpy(&v16, b, 2); return (uint64_t)__builtin_bswap16(v16) << 8 | b[2];
    case 4: memcpy(&v32, b, 4); return __builtin_bswap32(v32);
    case 8: memcpy(&v64, b, 8); return __builtin_bswap64(v64);
    default: {
        uint64_t v = 0;
        for (uint32_t i = 0; i < n; i++) v = (v << 8) | b[i];
        return v;
    }
    }
}

/* n (1..16) bytes at b as a big-endian number */
SS_ALWAYS_INLINE ss_u128 ss_load_be128(const uint8_t *b, uint32_t n) {
    if (n <= 8) return ss_load_be(b, n);
    return (ss_u128)ss_load_be(b, n - 8) << 64 | ss_load_be(b + n - 8, 8);
}

/* the low n (1..8) bytes of v at b, big-endian */
SS_ALWAYS_INLINE void ss_store_be(uint8_t *b, uint32_t n, uint64_t v) {
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (n) {
    case 1: b[0] = (uint8_t)v; return;
    case 2: v16 = __builtin_bswap16((uint16_t)v); memcpy(b, &v16, 2); return;
    case 4: v32 = __builtin_bswap32((uint32_t)v); memcpy(b, &v32, 4); return;
    case 8: v64 = __builtin_bswap64(v); memcpy(b, &v64, 8); return;
    default:
        for (uint32_t i = n; i-- > 0; v >>= 8) b[i] = (uint8_t)v;
    }
}

SS_ALWAYS_INLINE void ss_store_be128(uint8_t *b, uint32_t n, ss_u128 v) {
    if (n <= 8) {
        ss_store_be(b, n, (uint64_t)v);
        return;
    }
    ss_store_be(b, n - 8, (uint64_t)(v >> 64));
    ss_store_be(b + n - 8, 8, (uint64_t)v);
}

/* `w` (<= 64) bits at bit offset `bitoff` of b (MSB first); meant for constant bitoff and w */
SS_ALWAYS_INLINE uint64_t ss_field_get(const uint8_t *b, uint32_t bitoff, uint32_t w) {
    uint32_t first = bitoff >> 3, n = ((bitoff + w + 7) >> 3) - first;
    uint32_t shift = 8 * n - (bitoff & 7) - w;
    if (n <= 8) return (ss_load_be(b + first, n) >> shift) & ss_mask64(w);
    return (uint64_t)(ss_load_be128(b + first, n) >> shift) & ss_mask64(w);
}

/* `w` (<= 128) bits at bit offset `bitoff` of b */
SS_ALWAYS_INLINE ss_u128 ss_field_get128(const uint8_t *b, uint32_t bitoff, uint32_t w) {
    if (w <= 64) return ss_field_get(b, bitoff, w);
    return (ss_u128)ss_field_get(b, bitoff, w - 64) << 64 | ss_field_get(b, bitoff + w - 64, 64);
}

/* `w` (<= 128) bits at a run-time bit offset of a packet (the bytes must exist) */
static inline ss_u128 ss_bits_get128(const uint8_t *data, uint64_t bitoff, uint32_t w) {
    if (w <= 64) return ss_bits_get(data, bitoff, w);
    return (ss_u128)ss_bits_get(data, bitoff, w - 64) << 64 | ss_bits_get(data, bitoff + w - 64, 64);
}

static inline void ss_bits_put128(uint8_t *buf, uint64_t bitoff, uint32_t w, ss_u128 v) {
    if (w <= 64) {
        ss_bits_put(buf, bitoff, w, (uint64_t)v);
        return;
    }
    ss_bits_put(buf, bitoff, w - 64, (uint64_t)(v >> 64));
    ss_bits_put(buf, bitoff + w - 64, 64, (uint64_t)v);
}

/* ------------------------------------------------------------------ W-bit patterns */

static inline ss_u128 ss_mask128(uint32_t w) { return w >= 128 ? ~(ss_u128)0 : (((ss_u128)1 << w) - 1); }

/* the 64-bit pattern of the sign-extended W-bit pattern v */
static inline uint64_t ss_sext(uint64_t v, uint32_t w) {
    return w >= 64 ? v : (uint64_t)((int64_t)(v << (64 - w)) >> (64 - w));
}

static inline ss_u128 ss_sext128(ss_u128 v, uint32_t w) {
    return w >= 128 ? v : (ss_u128)((ss_i128)(v << (128 - w)) >> (128 - w));
}

/* << of a bit<W>/int<W> value: modulo 2^W, 0 when amount >= W */
static inline uint64_t ss_shl(uint64_t v, uint64_t amount, uint32_t w) {
    return amount >= w ? 0 : (v << amount) & ss_mask64(w);
}

static inline ss_u128 ss_shl128(ss_u128 v, uint64_t amount, uint32_t w) {
    return amount >= w ? 0 : (v << amount) & ss_mask128(w);
}

/* >> of a bit<W> value (logical): 0 when amount >= W */
static inline uint64_t ss_shr(uint64_t v, uint64_t amount, uint32_t w) { return amount >= w ? 0 : v >> amount; }

static inline ss_u128 ss_shr128(ss_u128 v, uint64_t amount, uint32_t w) { return amount >= w ? 0 : v >> amount; }

/* >> of an int<W> value (arithmetic): 0 or -1 when amount >= W */
static inline uint64_t ss_shr_signed(uint64_t v, uint64_t amount, uint32_t w) {
    if (amount >= w) amount = w - 1;
    return (uint64_t)((int64_t)ss_sext(v, w) >> amount) & ss_mask64(w);
}

static inline ss_u128 ss_shr_signed128(ss_u128 v, uint64_t amount, uint32_t w) {
    if (amount >= w) amount = w - 1;
    return (ss_u128)((ss_i128)ss_sext128(v, w) >> amount) & ss_mask128(w);
}

/* a shift amount wider than 64 bits, clamped (any amount >= 256 shifts everything out) */
static inline uint64_t ss_shift_amount128(ss_u128 amount) { return amount > 255 ? 255 : (uint64_t)amount; }

/* |+| and |-| of bit<W> */
static inline uint64_t ss_sat_add(uint64_t a, uint64_t b, uint32_t w) {
    uint64_t s = a + b, m = ss_mask64(w);
    return (s < a || s > m) ? m : s;
}

static inline uint64_t ss_sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static inline ss_u128 ss_sat_add128(ss_u128 a, ss_u128 b, uint32_t w) {
    ss_u128 s = a + b, m = ss_mask128(w);
    return (s < a || s > m) ? m : s;
}

static inline ss_u128 ss_sat_sub128(ss_u128 a, ss_u128 b) { return a > b ? a - b : 0; }

/* |+| and |-| of int<W>: saturate at -2^(W-1) and 2^(W-1)-1 (computed in 128 bits for every width) */
static inline ss_u128 ss_sat_signed128(ss_i128 x, ss_i128 y, int subtract, uint32_t w) {
    ss_i128 hi = w >= 128 ? (ss_i128)(~(ss_u128)0 >> 1) : (ss_i128)(((ss_u128)1 << (w - 1)) - 1), lo = -hi - 1, s;
    int overflow = subtract ? __builtin_sub_overflow(x, y, &s) : __builtin_add_overflow(x, y, &s);
    if (overflow)
        s = (subtract ? y > 0 : y < 0) ? lo : hi;
    else if (s > hi)
        s = hi;
    else if (s < lo)
        s = lo;
    return (ss_u128)s & ss_mask128(w);
}

static inline ss_u128 ss_sat_add_signed128(ss_u128 a, ss_u128 b, uint32_t w) {
    return ss_sat_signed128((ss_i128)ss_sext128(a, w), (ss_i128)ss_sext128(b, w), 0, w);
}

static inline ss_u128 ss_sat_sub_signed128(ss_u128 a, ss_u128 b, uint32_t w) {
    return ss_sat_signed128((ss_i128)ss_sext128(a, w), (ss_i128)ss_sext128(b, w), 1, w);
}

static inline uint64_t ss_sat_add_signed(uint64_t a, uint64_t b, uint32_t w) {
    return (uint64_t)ss_sat_add_signed128(a, b, w);
}

static inline uint64_t ss_sat_sub_signed(uint64_t a, uint64_t b, uint32_t w) {
    return (uint64_t)ss_sat_sub_signed128(a, b, w);
}

/* / and % (unsigned only in P4): a zero divisor drops the packet (counted as an error) */
static inline uint64_t ss_div(ss_packet *p, uint64_t a, uint64_t b) {
    if (!b) ss_packet_fail(p, "division by zero");
    return a / b;
}

static inline uint64_t ss_mod(ss_packet *p, uint64_t a, uint64_t b) {
    if (!b) ss_packet_fail(p, "division by zero");
    return a % b;
}

static inline ss_u128 ss_div128(ss_packet *p, ss_u128 a, ss_u128 b) {
    if (!b) ss_packet_fail(p, "division by zero");
    return a / b;
}

static inline ss_u128 ss_mod128(ss_packet *p, ss_u128 a, ss_u128 b) {
    if (!b) ss_packet_fail(p, "division by zero");
    return a % b;
}

/* a computed header stack index: out of range drops the packet (counted as an error) */
static inline uint64_t ss_stack_index(ss_packet *p, uint64_t index, uint32_t size) {
    if (index >= size) ss_packet_fail(p, "header stack index out of range");
    return index;
}

/* ------------------------------------------------------------------ checksums */

/* csum16 (RFC 1071) of n bytes (an odd length gets a zero byte appended): the same as
 * ss_hash_bytes(SS_HASH_CSUM16, ...), inline for the fixed-size field lists of checksum updates */
SS_ALWAYS_INLINE uint64_t ss_csum16(const uint8_t *b, uint32_t n) {
    uint64_t sum = 0;
    uint32_t i = 0;
    for (; i + 1 < n; i += 2) sum += ss_load_be(b + i, 2);
    if (i < n) sum += (uint64_t)b[i] << 8;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return ~sum & 0xFFFF;
}

/* ------------------------------------------------------------------ table results, port output */

/* what t.apply() gives the program: hit/miss and the action that ran (its descriptor index) */
typedef struct ss_apply_result {
    uint32_t hit;
    uint32_t action;
} ss_apply_result;

/* where a deparser's packet.emit() writes */
typedef struct ss_out_cursor {
    uint8_t *out;
    uint32_t len;
} ss_out_cursor;

#endif
