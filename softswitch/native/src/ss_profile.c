/* Action profiles and selectors in native memory: members (an action with its data) and groups (members
 * in selection order), by the ids the control plane gives them. Entries of the tables a profile implements
 * point at them (ss_table.c), so a change here reaches every such entry in one write under sw->lock and
 * the data path waits for that write only, not for one per entry. Which member ids exist, their BMv2
 * handles, the weights and every check with its message stay in Python (ActionProfileState); this file
 * refuses what would leave a dangling pointer. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ss_internal.h"

static const uint8_t *member_key(const void *value) { return ((const ss_member *)value)->key; }
static const uint8_t *group_key(const void *value) { return ((const ss_group *)value)->key; }

static ss_profile *profile_of(ss_switch *sw, uint32_t profile) {
    if (profile >= sw->n_profiles) {
        ss_set_error("no action profile with index %u", profile);
        return NULL;
    }
    return sw->profiles[profile];
}

/* The member or group with this id in map m, or NULL. */
static void *by_id(const ss_map *m, int64_t id) {
    uint8_t key[8];
    memcpy(key, &id, 8);
    return ss_map_get(m, key, ss_hash_key(key, 8));
}

/* The object with this id in map m, or a new zeroed one of `size` bytes (its 8-byte key at
 * `key_offset`) put there; NULL: out of memory. */
static void *by_id_or_new(ss_map *m, int64_t id, size_t size, size_t key_offset) {
    void *found = by_id(m, id);
    if (found) return found;
    uint8_t *made = calloc(1, size);
    if (!made) return NULL;
    memcpy(made + key_offset, &id, 8);
    if (ss_map_put(m, made, ss_hash_key(made + key_offset, 8))) {
        free(made);
        return NULL;
    }
    return made;
}

ss_member *ss_profile_member(ss_switch *sw, uint32_t profile, int64_t id) {
    ss_profile *p = profile_of(sw, profile);
    ss_member *m = p ? by_id(&p->members, id) : NULL;
    if (p && !m) ss_set_error("action profile %u has no member %lld", profile, (long long)id);
    return m;
}

ss_group *ss_profile_group(ss_switch *sw, uint32_t profile, int64_t id) {
    ss_profile *p = profile_of(sw, profile);
    ss_group *g = p ? by_id(&p->groups, id) : NULL;
    if (p && !g) ss_set_error("action profile %u has no group %lld", profile, (long long)id);
    return g;
}

static void group_free(ss_group *g) {
    for (uint32_t i = 0; i < g->n; i++) g->members[i]->slots--;
    free(g->members);
    free(g);
}

static void member_free(ss_member *m) {
    free((void *)m->call.data);
    free(m);
}

static void profile_free(ss_profile *p) {
    for (uint64_t i = 0; i <= p->groups.mask; i++)
        if (p->groups.slots[i].hash) group_free(p->groups.slots[i].value);
    for (uint64_t i = 0; i <= p->members.mask; i++)
        if (p->members.slots[i].hash) member_free(p->members.slots[i].value);
    ss_map_free(&p->groups);
    ss_map_free(&p->members);
    free(p);
}

/* Frees every profile (the tables, whose entries point into them, first). */
void ss_profiles_free(ss_switch *sw) {
    for (uint32_t i = 0; i < sw->n_profiles; i++) profile_free(sw->profiles[i]);
    free(sw->profiles);
    sw->profiles = NULL;
    sw->n_profiles = 0;
}

/* A new, empty action profile: its index for the calls below, or -1 (out of memory). */
SS_EXPORT int64_t ss_ctl_profile_add(ss_switch *sw) {
    int64_t index = -1;
    pthread_mutex_lock(&sw->lock);
    ss_profile *p = calloc(1, sizeof *p);
    ss_profile **grown = p ? realloc(sw->profiles, (sw->n_profiles + 1) * sizeof *grown) : NULL;
    if (grown) sw->profiles = grown;
    if (!grown || ss_map_init(&p->members, 8, member_key) || ss_map_init(&p->groups, 8, group_key)) {
        if (p) {
            ss_map_free(&p->members);
            ss_map_free(&p->groups);
        }
        free(p);
        ss_set_error("out of memory");
        goto out;
    }
    sw->profiles[sw->n_profiles] = p;
    index = sw->n_profiles++;
out:
    pthread_mutex_unlock(&sw->lock);
    return index;
}

/* Profile `profile` with sw->lock taken (the caller unlocks), or NULL (lock released, error set). */
static ss_profile *locked_profile(ss_switch *sw, uint32_t profile) {
    pthread_mutex_lock(&sw->lock);
    ss_profile *p = profile_of(sw, profile);
    if (!p) pthread_mutex_unlock(&sw->lock);
    return p;
}

/* Creates member `id` or replaces its action and data (the words of `action`'s parameters at `data`):
 * entries and groups that point at it run the new action from the next packet on. */
SS_EXPORT int ss_ctl_profile_member_set(ss_switch *sw, uint32_t profile, int64_t id, uint32_t action,
                                        const uint64_t *data) {
    ss_profile *p = locked_profile(sw, profile);
    if (!p) return SS_E_INVALID;
    int rc = SS_OK;
    if (action >= sw->prog->n_actions) {
        ss_set_error("action profile %u: no action with index %u", profile, action);
        rc = SS_E_INVALID;
        goto out;
    }
    uint32_t words = ss_action_words(sw->prog, action);
    uint64_t *copy = calloc((size_t)words + 1, 8);
    if (!copy) {
        rc = SS_E_NOMEM;
        goto out;
    }
    if (words) memcpy(copy, data, (size_t)words * 8);
    ss_member *m = by_id_or_new(&p->members, id, sizeof *m, offsetof(ss_member, key));
    if (!m) {
        free(copy);
        rc = SS_E_NOMEM;
        goto out;
    }
    m->call.hit = 1;
    free((void *)m->call.data);
    m->call.data = copy;
    m->call.action = action;
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* The one sequence of both deletes, under sw->lock: find the member (group = 0) or group (1) `id`,
 * refuse it while something points at it, take it out of its map and free it. */
static int delete_one(ss_switch *sw, uint32_t profile, int group, int64_t id) {
    int rc = SS_OK;
    pthread_mutex_lock(&sw->lock);
    ss_member *m = group ? NULL : ss_profile_member(sw, profile, id);
    ss_group *g = group ? ss_profile_group(sw, profile, id) : NULL;
    if (!m && !g) {
        rc = profile < sw->n_profiles ? SS_E_NOT_FOUND : SS_E_INVALID;
    } else if (m && (m->entries || m->slots)) {
        ss_set_error("action profile %u: member %lld is in use (%llu entries, %llu group places)", profile,
                     (long long)id, (unsigned long long)m->entries, (unsigned long long)m->slots);
        rc = SS_E_INVALID;
    } else if (g && g->entries) {
        ss_set_error("action profile %u: group %lld is used by %llu entries", profile, (long long)id,
                     (unsigned long long)g->entries);
        rc = SS_E_INVALID;
    } else if (m) {
        ss_map_remove(&sw->profiles[profile]->members, m->key, ss_hash_key(m->key, 8));
        member_free(m);
    } else {
        ss_map_remove(&sw->profiles[profile]->groups, g->key, ss_hash_key(g->key, 8));
        group_free(g);
    }
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* Deletes member `id`: SS_E_INVALID while an entry or a group points at it. */
SS_EXPORT int ss_ctl_profile_member_delete(ss_switch *sw, uint32_t profile, int64_t id) {
    return delete_one(sw, profile, 0, id);
}

/* Creates group `id` or replaces its members by `n` member ids in selection order (BMv2's handle order,
 * a member of weight w w times): entries that point at it select among them from the next packet on. */
SS_EXPORT int ss_ctl_profile_group_set(ss_switch *sw, uint32_t profile, int64_t id, uint32_t n,
                                       const int64_t *member_ids) {
    ss_profile *p = locked_profile(sw, profile);
    if (!p) return SS_E_INVALID;
    int rc = SS_OK;
    ss_member **members = calloc((size_t)n + 1, sizeof *members);
    if (!members) {
        rc = SS_E_NOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!(members[i] = ss_profile_member(sw, profile, member_ids[i]))) {
            free(members);
            rc = SS_E_INVALID;
            goto out;
        }
    ss_group *g = by_id_or_new(&p->groups, id, sizeof *g, offsetof(ss_group, key));
    if (!g) {
        free(members);
        rc = SS_E_NOMEM;
        goto out;
    }
    g->call.action = SS_ACTION_GROUP;
    g->call.hit = 1;
    for (uint32_t i = 0; i < n; i++) members[i]->slots++;
    for (uint32_t i = 0; i < g->n; i++) g->members[i]->slots--;
    free(g->members);
    g->members = members;
    g->n = n;
out:
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* Deletes group `id`: SS_E_INVALID while an entry points at it. */
SS_EXPORT int ss_ctl_profile_group_delete(ss_switch *sw, uint32_t profile, int64_t id) {
    return delete_one(sw, profile, 1, id);
}

/* The table entries that point at member (group = 0) or group (1) `id`; -1 if there is no such one. */
SS_EXPORT int64_t ss_ctl_profile_entries(ss_switch *sw, uint32_t profile, int group, int64_t id) {
    pthread_mutex_lock(&sw->lock);
    int64_t n = -1;
    if (group) {
        ss_group *g = ss_profile_group(sw, profile, id);
        if (g) n = (int64_t)g->entries;
    } else {
        ss_member *m = ss_profile_member(sw, profile, id);
        if (m) n = (int64_t)m->entries;
    }
    pthread_mutex_unlock(&sw->lock);
    return n;
}
