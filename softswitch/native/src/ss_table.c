/* Match-action tables in native memory: storage, the control API and the data-path lookup.
 *
 * Every table keeps its entries in a hash map keyed by an "index key" and in a list in insertion order
 * (the order of read-back and of priority ties, as the Python runtime's dict). The index key is:
 *   exact tables (only exact fields): the key bytes;         lookup = one map probe;
 *   lpm tables (exact + one lpm field): the key bytes with the lpm field masked to its prefix, then the
 *       prefix length (2 bytes);                              lookup = one probe per prefix length in
 *       use, longest first;
 *   scan tables (any ternary, range or optional field): values, masks and the priority (identity only);
 *       lookup = entries in (priority descending, insertion ascending) order, first match wins.
 * A table without keys always runs its default action (as the Python runtime does).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ss_internal.h"

/* ------------------------------------------------------------------ hash map */

uint64_t ss_hash_key(const uint8_t *key, uint32_t len) {
    uint64_t h = 0x243F6A8885A308D3ull ^ ((uint64_t)len * 0x9E3779B97F4A7C15ull);
    uint32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, key + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 31;
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, key + i, len - i);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 31;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h ? h : 1;
}

int ss_map_init(ss_map *m, uint32_t key_len, ss_map_key_fn key_of) {
    m->mask = 15;
    m->count = 0;
    m->key_len = key_len;
    m->key_of = key_of;
    m->slots = calloc(m->mask + 1, sizeof(ss_map_slot));
    return m->slots ? SS_OK : SS_E_NOMEM;
}

void ss_map_free(ss_map *m) {
    free(m->slots);
    m->slots = NULL;
}

void *ss_map_get(const ss_map *m, const uint8_t *key, uint64_t hash) {
    uint64_t i = hash & m->mask;
    for (;;) {
        const ss_map_slot *s = &m->slots[i];
        if (!s->hash) return NULL;
        if (s->hash == hash && memcmp(m->key_of(s->value), key, m->key_len) == 0) return s->value;
        i = (i + 1) & m->mask;
    }
}

static void map_insert_slot(ss_map_slot *slots, uint64_t mask, void *value, uint64_t hash) {
    uint64_t i = hash & mask;
    while (slots[i].hash) i = (i + 1) & mask;
    slots[i].hash = hash;
    slots[i].value = value;
}

int ss_map_put(ss_map *m, void *value, uint64_t hash) {
    if ((m->count + 1) * 2 > m->mask + 1) { /* keep the load under 1/2 */
        uint64_t cap = (m->mask + 1) * 2;
        ss_map_slot *slots = calloc(cap, sizeof(ss_map_slot));
        if (!slots) return SS_E_NOMEM;
        for (uint64_t i = 0; i <= m->mask; i++)
            if (m->slots[i].hash) map_insert_slot(slots, cap - 1, m->slots[i].value, m->slots[i].hash);
        free(m->slots);
        m->slots = slots;
        m->mask = cap - 1;
    }
    map_insert_slot(m->slots, m->mask, value, hash);
    m->count++;
    return SS_OK;
}

void *ss_map_remove(ss_map *m, const uint8_t *key, uint64_t hash) {
    uint64_t i = hash & m->mask;
    for (;;) {
        ss_map_slot *s = &m->slots[i];
        if (!s->hash) return NULL;
        if (s->hash == hash && memcmp(m->key_of(s->value), key, m->key_len) == 0) break;
        i = (i + 1) & m->mask;
    }
    void *value = m->slots[i].value;
    /* backward-shift deletion: move later members of the probe run into the hole */
    uint64_t hole = i, j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].hash) break;
        uint64_t home = m->slots[j].hash & m->mask;
        /* can slot j's member live in the hole? only if its home is not in (hole, j] */
        int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!between) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].hash = 0;
    m->slots[hole].value = NULL;
    m->count--;
    return value;
}

/* ------------------------------------------------------------------ tables */

static const uint8_t *entry_index_key(const void *value) { return ((const ss_entry *)value)->index_key; }

uint32_t ss_action_words(const ss_program *prog, uint32_t action) {
    uint32_t words = 0;
    if (action >= prog->n_actions) return 0;
    const ss_action_desc *a = &prog->actions[action];
    for (uint32_t i = 0; i < a->n_params; i++) words += (a->params[i].bitwidth + 63) / 64;
    return words;
}

int ss_table_init(ss_table *t, const ss_program *prog, const ss_table_desc *desc) {
    memset(t, 0, sizeof *t);
    t->desc = desc;
    t->prog = prog;
    t->n_keys = desc->n_keys;
    t->key_offset = calloc(desc->n_keys + 1, sizeof(uint32_t));
    t->key_width = calloc(desc->n_keys + 1, sizeof(uint32_t));
    t->range_fields = calloc(desc->n_keys + 1, sizeof(uint32_t));
    if (!t->key_offset || !t->key_width || !t->range_fields) return SS_E_NOMEM;
    int exact_only = 1, scan = 0;
    t->lpm_field = -1;
    for (uint32_t i = 0; i < desc->n_keys; i++) {
        t->key_offset[i] = t->key_bytes;
        t->key_width[i] = (desc->keys[i].bitwidth + 7) / 8;
        t->key_bytes += t->key_width[i];
        uint32_t kind = desc->keys[i].match_kind;
        if (kind != SS_MATCH_EXACT) exact_only = 0;
        if (kind == SS_MATCH_TERNARY || kind == SS_MATCH_RANGE || kind == SS_MATCH_OPTIONAL) scan = 1;
        if (kind == SS_MATCH_LPM && t->lpm_field < 0) t->lpm_field = (int)i;
        if (kind == SS_MATCH_RANGE) t->range_fields[t->n_range++] = i;
    }
    if (desc->n_keys == 0)
        t->mode = SS_MODE_NONE;
    else if (exact_only)
        t->mode = SS_MODE_EXACT;
    else if (!scan)
        t->mode = SS_MODE_LPM;
    else
        t->mode = SS_MODE_SCAN;
    t->cmp_bytes = (t->key_bytes + 7) & ~7u;
    switch (t->mode) {
    case SS_MODE_EXACT: t->index_key_len = t->key_bytes; break;
    case SS_MODE_LPM: t->index_key_len = t->key_bytes + 2; break;
    case SS_MODE_SCAN: t->index_key_len = 2 * t->key_bytes + 8; break;
    default: t->index_key_len = 0;
    }
    if (t->mode == SS_MODE_LPM) {
        uint32_t w = desc->keys[t->lpm_field].bitwidth;
        t->lpm_len_count = calloc(w + 1, sizeof(uint32_t));
        t->lpm_lens = calloc(w + 1, sizeof(uint32_t));
        if (!t->lpm_len_count || !t->lpm_lens) return SS_E_NOMEM;
    }
    t->scratch = calloc(1, t->index_key_len + t->cmp_bytes + 16);
    uint32_t max_words = 1;
    for (uint32_t a = 0; a < prog->n_actions; a++) {
        uint32_t w = ss_action_words(prog, a);
        if (w > max_words) max_words = w;
    }
    t->default_data = calloc(max_words, sizeof(uint64_t));
    if (!t->scratch || !t->default_data) return SS_E_NOMEM;
    t->default_call.action = 0;
    t->default_call.hit = 0;
    t->default_call.data = t->default_data;
    return ss_map_init(&t->map, t->index_key_len, entry_index_key);
}

/* Points an entry at a profile's member or group (both NULL: at its own call), releasing what it
 * pointed at before. */
static void entry_point_at(ss_entry *e, ss_member *member, ss_group *group) {
    if (e->member) e->member->entries--;
    if (e->group) e->group->entries--;
    e->member = member;
    e->group = group;
    if (member) member->entries++;
    if (group) group->entries++;
    e->run = member ? &member->call : group ? &group->call : &e->call;
}

static void entry_free(ss_entry *e) {
    entry_point_at(e, NULL, NULL);
    free(e->meter_cell);
    free(e);
}

static void table_clear(ss_table *t) {
    ss_entry *e = t->first;
    while (e) {
        ss_entry *next = e->next;
        entry_free(e);
        e = next;
    }
    t->first = t->last = NULL;
    t->count = 0;
    ss_map_free(&t->map);
    ss_map_init(&t->map, t->index_key_len, entry_index_key);
    if (t->lpm_len_count) memset(t->lpm_len_count, 0, (t->desc->keys[t->lpm_field].bitwidth + 1) * sizeof(uint32_t));
    t->n_lpm_lens = 0;
    free(t->sorted);
    t->sorted = NULL;
    t->sorted_cap = 0;
}

void ss_table_free(ss_table *t) {
    if (!t->desc) return;
    table_clear(t);
    ss_map_free(&t->map);
    free(t->key_offset);
    free(t->key_width);
    free(t->range_fields);
    free(t->lpm_len_count);
    free(t->lpm_lens);
    free(t->scratch);
    free(t->default_data);
}

static uint32_t popcount_bytes(const uint8_t *p, uint32_t n) {
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) c += (uint32_t)__builtin_popcount(p[i]);
    return c;
}

/* The index key of an entry given by its spec (values, then masks/highs) and priority. */
static void make_index_key(const ss_table *t, const uint8_t *spec, int64_t priority, uint8_t *out) {
    switch (t->mode) {
    case SS_MODE_EXACT: memcpy(out, spec, t->key_bytes); break;
    case SS_MODE_LPM: {
        memcpy(out, spec, t->key_bytes);
        uint32_t f = (uint32_t)t->lpm_field;
        uint32_t plen = popcount_bytes(spec + t->key_bytes + t->key_offset[f], t->key_width[f]);
        out[t->key_bytes] = (uint8_t)(plen >> 8);
        out[t->key_bytes + 1] = (uint8_t)plen;
        break;
    }
    case SS_MODE_SCAN:
        memcpy(out, spec, 2 * t->key_bytes);
        for (int i = 0; i < 8; i++) out[2 * t->key_bytes + i] = (uint8_t)((uint64_t)priority >> (56 - 8 * i));
        break;
    default: break;
    }
}

static uint32_t lpm_plen_of(const ss_table *t, const ss_entry *e) {
    return ((uint32_t)e->index_key[t->key_bytes] << 8) | e->index_key[t->key_bytes + 1];
}

static void lpm_rebuild_lens(ss_table *t) {
    uint32_t w = t->desc->keys[t->lpm_field].bitwidth;
    t->n_lpm_lens = 0;
    for (uint32_t l = w + 1; l-- > 0;)
        if (t->lpm_len_count[l]) t->lpm_lens[t->n_lpm_lens++] = l;
}

/* scan order: priority descending, then insertion ascending */
static int scan_before(const ss_entry *a, const ss_entry *b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    return a->seq < b->seq;
}

static uint64_t scan_position(const ss_table *t, const ss_entry *e) {
    uint64_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (scan_before(t->sorted[mid], e))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static ss_entry *entry_new(const ss_table *t, const uint8_t *spec, const uint8_t *present, int64_t priority,
                           uint32_t action, const uint64_t *data) {
    uint32_t words = ss_action_words(t->prog, action);
    size_t kb = t->key_bytes;
    size_t size = sizeof(ss_entry) + words * 8 + 2 * (size_t)t->cmp_bytes + 2 * kb + t->n_keys + t->index_key_len;
    ss_entry *e = calloc(1, size);
    if (!e) return NULL;
    uint8_t *p = (uint8_t *)(e + 1);
    uint64_t *d = (uint64_t *)p;
    p += words * 8;
    e->cmp_value = p;
    p += t->cmp_bytes;
    e->cmp_mask = p;
    p += t->cmp_bytes;
    e->spec = p;
    p += 2 * kb;
    e->present = p;
    p += t->n_keys;
    e->index_key = p;
    memcpy(e->spec, spec, 2 * kb);
    if (present) memcpy(e->present, present, t->n_keys);
    if (words) memcpy(d, data, words * 8);
    e->n_words = words;
    e->priority = priority;
    e->call.action = action;
    e->call.hit = 1;
    e->call.data = d;
    e->run = &e->call;
    make_index_key(t, spec, priority, e->index_key);
    if (t->mode == SS_MODE_SCAN) {
        for (size_t i = 0; i < kb; i++) {
            e->cmp_mask[i] = spec[kb + i];
            e->cmp_value[i] = spec[i] & spec[kb + i];
        }
        for (uint32_t r = 0; r < t->n_range; r++) {
            uint32_t f = t->range_fields[r];
            memset(e->cmp_mask + t->key_offset[f], 0, t->key_width[f]);
            memset(e->cmp_value + t->key_offset[f], 0, t->key_width[f]);
        }
    }
    return e;
}

static ss_entry *table_find(ss_table *t, const uint8_t *spec, int64_t priority) {
    make_index_key(t, spec, priority, t->scratch);
    return ss_map_get(&t->map, t->scratch, ss_hash_key(t->scratch, t->index_key_len));
}

/* The priority that is part of an entry's identity: its own in tables with ternary, range or optional
 * fields (scan tables: P4Runtime orders and tells apart their entries by it), 0 in every other table. */
static int64_t identity_priority(const ss_table *t, int64_t priority) {
    return t->mode == SS_MODE_SCAN ? priority : 0;
}

ss_entry *ss_table_find_entry(ss_table *t, const uint8_t *spec, int64_t priority) {
    return table_find(t, spec, identity_priority(t, priority));
}

/* The entry with this key (its priority counts in scan tables only) for a control call, or NULL with the
 * error set ("no entry with this key", then `to`: what the call meant to do with it). */
static ss_entry *existing_entry(ss_table *t, const uint8_t *spec, int64_t priority, const char *to) {
    ss_entry *e = ss_table_find_entry(t, spec, priority);
    if (!e) ss_set_error("table %s: no entry with this key%s", t->desc->name, to);
    return e;
}

/* ------------------------------------------------------------------ data path */

static inline int range_ok(const ss_table *t, const ss_entry *e, const uint8_t *key) {
    for (uint32_t r = 0; r < t->n_range; r++) {
        uint32_t f = t->range_fields[r], off = t->key_offset[f], w = t->key_width[f];
        if (memcmp(key + off, e->spec + off, w) < 0) return 0;
        if (memcmp(key + off, e->spec + t->key_bytes + off, w) > 0) return 0;
    }
    return 1;
}

static const ss_entry *table_match(ss_table *t, const uint8_t *key) {
    switch (t->mode) {
    case SS_MODE_EXACT: return ss_map_get(&t->map, key, ss_hash_key(key, t->key_bytes));
    case SS_MODE_LPM: {
        uint32_t kb = t->key_bytes, f = (uint32_t)t->lpm_field, off = t->key_offset[f], w = t->key_width[f];
        uint32_t pad = w * 8 - t->desc->keys[f].bitwidth; /* leading zero bits of the field's bytes */
        uint8_t k[kb + 2]; /* on the stack: lookups may run on several threads */
        memcpy(k, key, kb);
        for (uint32_t i = 0; i < t->n_lpm_lens; i++) {
            uint32_t plen = t->lpm_lens[i];
            /* keep the first pad + plen bits of the field */
            uint32_t keep = pad + plen;
            for (uint32_t b = 0; b < w; b++) {
                uint32_t bit0 = b * 8;
                uint8_t m;
                if (keep >= bit0 + 8)
                    m = 0xFF;
                else if (keep <= bit0)
                    m = 0;
                else
                    m = (uint8_t)(0xFF << (8 - (keep - bit0)));
                k[off + b] = key[off + b] & m;
            }
            k[kb] = (uint8_t)(plen >> 8);
            k[kb + 1] = (uint8_t)plen;
            const ss_entry *e = ss_map_get(&t->map, k, ss_hash_key(k, kb + 2));
            if (e) return e;
        }
        return NULL;
    }
    case SS_MODE_SCAN: {
        uint64_t k[t->cmp_bytes / 8 + 1];
        memset(k, 0, t->cmp_bytes);
        memcpy(k, key, t->key_bytes);
        uint32_t words = t->cmp_bytes / 8;
        for (uint64_t i = 0; i < t->count; i++) {
            const ss_entry *e = t->sorted[i];
            const uint64_t *v = (const uint64_t *)(const void *)e->cmp_value;
            const uint64_t *m = (const uint64_t *)(const void *)e->cmp_mask;
            uint32_t j = 0;
            for (; j < words; j++)
                if ((k[j] & m[j]) != v[j]) break;
            if (j < words) continue;
            if (t->n_range && !range_ok(t, e, key)) continue;
            return e;
        }
        return NULL;
    }
    default: return NULL;
    }
}

const ss_action_call *ss_table_lookup(ss_packet *p, uint32_t table, const uint8_t *key) {
    ss_table *t = &p->sw->tables[table];
    ss_entry *e = (ss_entry *)table_match(t, key);
    if (!e) return &t->default_call;
    if (t->desc->direct_counter) {
        e->packets++;
        e->bytes += p->sm.packet_length;
    }
    return e->run;
}

const ss_action_call *ss_group_select(ss_packet *p, uint32_t table, const ss_action_call *group, uint64_t hash) {
    const ss_group *g = (const ss_group *)(const void *)((const uint8_t *)group - offsetof(ss_group, call));
    if (!g->n) return &p->sw->tables[table].default_call;
    return &g->members[hash % g->n]->call;
}

uint32_t ss_key_bytes(const ss_switch *sw, uint32_t table) { return sw->tables[table].key_bytes; }

/* ------------------------------------------------------------------ control API (Python) */

static ss_table *table_of(ss_switch *sw, uint32_t table) {
    if (table >= sw->prog->n_tables) {
        ss_set_error("no table with index %u", table);
        return NULL;
    }
    return &sw->tables[table];
}

static int check_action(const ss_table *t, uint32_t action) {
    if (action >= t->prog->n_actions) {
        ss_set_error("table %s: no action with index %u", t->desc->name, action);
        return SS_E_INVALID;
    }
    return SS_OK;
}

/* Inserts an entry (the caller holds sw->lock and has checked the action); *out gets it. */
static int table_insert(ss_table *t, const uint8_t *spec, const uint8_t *present, int64_t priority, uint32_t action,
                        const uint64_t *data, int check_size, ss_entry **out) {
    priority = identity_priority(t, priority);
    if (table_find(t, spec, priority)) {
        ss_set_error("table %s: an entry with this key already exists", t->desc->name);
        return SS_E_EXISTS;
    }
    if (check_size && t->count >= t->desc->size) {
        ss_set_error("table %s is full (%u entries)", t->desc->name, t->desc->size);
        return SS_E_FULL;
    }
    ss_entry *e = entry_new(t, spec, present, priority, action, data);
    if (!e) return SS_E_NOMEM;
    if (t->mode == SS_MODE_SCAN && t->count + 1 > t->sorted_cap) {
        uint64_t cap = t->sorted_cap ? t->sorted_cap * 2 : 16;
        ss_entry **s = realloc(t->sorted, cap * sizeof *s);
        if (!s) {
            entry_free(e);
            return SS_E_NOMEM;
        }
        t->sorted = s;
        t->sorted_cap = cap;
    }
    if (ss_map_put(&t->map, e, ss_hash_key(e->index_key, t->index_key_len))) {
        entry_free(e);
        return SS_E_NOMEM;
    }
    e->seq = t->next_seq++;
    e->prev = t->last;
    if (t->last)
        t->last->next = e;
    else
        t->first = e;
    t->last = e;
    if (t->mode == SS_MODE_SCAN) {
        uint64_t pos = scan_position(t, e);
        memmove(t->sorted + pos + 1, t->sorted + pos, (t->count - pos) * sizeof(ss_entry *));
        t->sorted[pos] = e;
    }
    if (t->mode == SS_MODE_LPM && t->lpm_len_count[lpm_plen_of(t, e)]++ == 0) lpm_rebuild_lens(t);
    t->count++;
    *out = e;
    return SS_OK;
}

SS_EXPORT int ss_ctl_table_insert(ss_switch *sw, uint32_t table, const uint8_t *spec, const uint8_t *present,
                                  int64_t priority, uint32_t action, const uint64_t *data, int check_size) {
    int rc = SS_OK;
    ss_entry *e;
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    if (!t)
        rc = SS_E_INVALID;
    else if (!(rc = check_action(t, action)))
        rc = table_insert(t, spec, present, priority, action, data, check_size, &e);
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* An entry of a table with an action profile: inserts it (create) or points the entry with this key at
 * member (group = 0) or group (1) `id` of profile `profile` (ss_profile.c); a lookup runs what the member
 * or group holds at the time. */
SS_EXPORT int ss_ctl_table_put_ref(ss_switch *sw, uint32_t table, const uint8_t *spec, const uint8_t *present,
                                   int64_t priority, uint32_t profile, int group, int64_t id, int create,
                                   int check_size) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    ss_member *m = t && !group ? ss_profile_member(sw, profile, id) : NULL;
    ss_group *g = t && group ? ss_profile_group(sw, profile, id) : NULL;
    if (!m && !g) {
        rc = SS_E_INVALID;
        goto out;
    }
    ss_entry *e = NULL;
    if (create) {
        rc = table_insert(t, spec, present, priority, SS_ACTION_GROUP, NULL, check_size, &e);
    } else {
        e = existing_entry(t, spec, priority, " to modify");
        if (!e) rc = SS_E_NOT_FOUND;
    }
    if (!rc) entry_point_at(e, m, g);
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_table_modify(ss_switch *sw, uint32_t table, const uint8_t *spec, int64_t priority,
                                  uint32_t action, const uint64_t *data) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    if (!t) {
        rc = SS_E_INVALID;
        goto out;
    }
    if ((rc = check_action(t, action))) goto out;
    ss_entry *old = existing_entry(t, spec, priority, " to modify");
    if (!old) {
        rc = SS_E_NOT_FOUND;
        goto out;
    }
    uint32_t words = ss_action_words(t->prog, action);
    if (words <= old->n_words) { /* in place: the entry keeps its position, seq and counters */
        memcpy((uint64_t *)old->call.data, data, words * 8);
        old->call.action = action;
        old->n_words = words;
        entry_point_at(old, NULL, NULL); /* runs its own action now */
        goto out;
    }
    ss_entry *e = entry_new(t, old->spec, old->present, old->priority, action, data);
    if (!e) {
        rc = SS_E_NOMEM;
        goto out;
    }
    e->seq = old->seq;
    e->packets = old->packets;
    e->bytes = old->bytes;
    e->meter_cell = old->meter_cell; /* the entry keeps its direct meter cell */
    old->meter_cell = NULL;
    e->prev = old->prev;
    e->next = old->next;
    if (e->prev)
        e->prev->next = e;
    else
        t->first = e;
    if (e->next)
        e->next->prev = e;
    else
        t->last = e;
    uint64_t h = ss_hash_key(old->index_key, t->index_key_len);
    ss_map_remove(&t->map, old->index_key, h);
    ss_map_put(&t->map, e, h); /* cannot grow: one out, one in */
    if (t->mode == SS_MODE_SCAN) t->sorted[scan_position(t, old)] = e;
    entry_free(old);
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_table_delete(ss_switch *sw, uint32_t table, const uint8_t *spec, int64_t priority) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    if (!t) {
        rc = SS_E_INVALID;
        goto out;
    }
    ss_entry *e = existing_entry(t, spec, priority, " to delete");
    if (!e) {
        rc = SS_E_NOT_FOUND;
        goto out;
    }
    ss_map_remove(&t->map, e->index_key, ss_hash_key(e->index_key, t->index_key_len));
    if (t->mode == SS_MODE_SCAN) {
        uint64_t pos = scan_position(t, e);
        memmove(t->sorted + pos, t->sorted + pos + 1, (t->count - pos - 1) * sizeof(ss_entry *));
    }
    if (t->mode == SS_MODE_LPM && --t->lpm_len_count[lpm_plen_of(t, e)] == 0) lpm_rebuild_lens(t);
    if (e->prev)
        e->prev->next = e->next;
    else
        t->first = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        t->last = e->prev;
    t->count--;
    entry_free(e);
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* The direct counter of the entry with this key: counters[0] packets, counters[1] bytes. */
SS_EXPORT int ss_ctl_table_find(ss_switch *sw, uint32_t table, const uint8_t *spec, int64_t priority,
                                uint64_t *counters) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    if (!t) {
        rc = SS_E_INVALID;
        goto out;
    }
    ss_entry *e = existing_entry(t, spec, priority, "");
    if (!e) {
        rc = SS_E_NOT_FOUND;
        goto out;
    }
    counters[0] = e->packets;
    counters[1] = e->bytes;
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

SS_EXPORT int ss_ctl_table_clear(ss_switch *sw, uint32_t table) {
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    if (t) table_clear(t);
    pthread_mutex_unlock(&sw->lock);
    return t ? SS_OK : SS_E_INVALID;
}

SS_EXPORT uint64_t ss_ctl_table_count(ss_switch *sw, uint32_t table) {
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    uint64_t n = t ? t->count : 0;
    pthread_mutex_unlock(&sw->lock);
    return n;
}

/* The entry after the one a reader took last: by its key, or (deleted meanwhile, or deleted and added
 * again: another seq) the first entry added after it, since the list is in insertion (seq) order. */
static ss_entry *read_resume(ss_table *t, const uint8_t *after_spec, int64_t after_priority, uint64_t after_seq) {
    if (!after_spec) return t->first;
    ss_entry *e = ss_table_find_entry(t, after_spec, after_priority);
    if (e && e->seq == after_seq) return e->next;
    for (e = t->first; e && e->seq <= after_seq; e = e->next) {}
    return e;
}

/* Entries in insertion order, a piece per call: the switch lock (which the data path takes per batch)
 * is held for at most max_entries entries, so reading a large table never stops the ports for the whole
 * copy. The call resumes after the entry the caller read last (after_*: its record's spec, priority and
 * seq; after_spec NULL: from the first entry). Each entry is copied whole under the lock, so each
 * record is the entry as it was at one moment; across pieces the result is not a snapshot: an entry
 * added meanwhile after the cursor is read, one deleted before the cursor was reached is not; a key
 * deleted and added again after its record was copied is copied again (the caller keeps the newer). Per
 * entry, written to buf:
 *   int64 priority, uint32 action, uint32 words, uint64 packets, uint64 bytes, uint64 seq,
 *   spec (2 * key_bytes), present (n_keys), padding to 8, words * 8 bytes of action data.
 * An entry that points at a profile's member or group gives action SS_ACTION_MEMBER or SS_ACTION_GROUP
 * and one word: the member's or group's id (int64).
 * Returns the bytes written (whole entries that fit in cap), 0 when no entry follows the cursor (or no
 * such table), or minus the bytes the next entry needs when it alone does not fit in cap. */
SS_EXPORT int64_t ss_ctl_table_read(ss_switch *sw, uint32_t table, const uint8_t *after_spec, int64_t after_priority,
                                    uint64_t after_seq, uint32_t max_entries, uint8_t *buf, uint64_t cap) {
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    int64_t written = 0;
    if (!t) goto out;
    uint64_t fixed = 40 + ((2 * (uint64_t)t->key_bytes + t->n_keys + 7) & ~7ull);
    uint8_t *p = buf;
    uint32_t n = 0;
    for (ss_entry *e = read_resume(t, after_spec, after_priority, after_seq); e && n < max_entries; e = e->next, n++) {
        uint32_t words = e->n_words, action = e->call.action;
        const void *data = e->call.data;
        if (e->member || e->group) {
            words = 1;
            action = e->member ? SS_ACTION_MEMBER : SS_ACTION_GROUP;
            data = e->member ? e->member->key : e->group->key;
        }
        uint64_t size = fixed + words * 8ull;
        if ((uint64_t)written + size > cap) {
            if (!written) written = -(int64_t)size;
            break;
        }
        memcpy(p, &e->priority, 8);
        memcpy(p + 8, &action, 4);
        memcpy(p + 12, &words, 4);
        memcpy(p + 16, &e->packets, 8);
        memcpy(p + 24, &e->bytes, 8);
        memcpy(p + 32, &e->seq, 8);
        memset(p + 40, 0, fixed - 40);
        memcpy(p + 40, e->spec, 2 * t->key_bytes);
        memcpy(p + 40 + 2 * t->key_bytes, e->present, t->n_keys);
        memcpy(p + fixed, data, words * 8);
        p += size;
        written += (int64_t)size;
    }
out:
    pthread_mutex_unlock(&sw->lock);
    return written;
}

SS_EXPORT int ss_ctl_table_set_default(ss_switch *sw, uint32_t table, uint32_t action, const uint64_t *data) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    if (!t) {
        rc = SS_E_INVALID;
        goto out;
    }
    if ((rc = check_action(t, action))) goto out;
    uint32_t words = ss_action_words(t->prog, action);
    if (words) memcpy(t->default_data, data, words * 8);
    t->default_call.action = action;
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* The default action and its data (room for the largest action's words); returns the action index. */
SS_EXPORT int64_t ss_ctl_table_get_default(ss_switch *sw, uint32_t table, uint64_t *data) {
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    int64_t action = -1;
    if (t) {
        action = t->default_call.action;
        memcpy(data, t->default_data, ss_action_words(t->prog, (uint32_t)action) * 8);
    }
    pthread_mutex_unlock(&sw->lock);
    return action;
}

/* What the data path would run for `key` (no direct counter update): the action index, *hit and
 * its data; -1 for an unknown table. */
SS_EXPORT int64_t ss_ctl_table_lookup(ss_switch *sw, uint32_t table, const uint8_t *key, uint32_t *hit,
                                      uint64_t *data) {
    pthread_mutex_lock(&sw->lock);
    ss_table *t = table_of(sw, table);
    int64_t action = -1;
    if (t) {
        const ss_entry *e = table_match(t, key);
        const ss_action_call *c = e ? e->run : &t->default_call;
        action = c->action;
        *hit = c->hit;
        uint32_t words = ss_action_words(t->prog, c->action);
        if (words) memcpy(data, c->data, words * 8); /* a group's call has no data (NULL) */
    }
    pthread_mutex_unlock(&sw->lock);
    return action;
}
