/* softswitch native runtime: v1model meters and direct meters.
 *
 * Each cell is an RFC 2698 two-rate three-colour marker, colour-blind, as BMv2 meters packets: a
 * committed bucket (rate cir, depth cburst) and a peak bucket (pir, pburst), both full when the cell is
 * configured, refilled by the time since the cell's last packet. A packet of `units` (1, or its length
 * for byte meters) is RED when the peak bucket holds fewer tokens, else takes them and is YELLOW when
 * the committed bucket holds fewer, else takes those too and is GREEN. The arithmetic is the Python
 * runtime's (softswitch/runtime/externs.py TwoRateMeter), in doubles, in the same order, so both back
 * ends mark the same packets the same colours for the same clock readings. */
#include <stdlib.h>

#include "ss_internal.h"

static double meter_now(const ss_switch *sw) {
    return sw->meter_clock_set ? sw->meter_clock : (double)ss_now_ns() * 1e-9;
}

static double min_of(double a, double b) { return b < a ? b : a; } /* Python's min(a, b) */

static uint32_t cell_mark(ss_meter_cell *c, double units, double now) {
    if (!c || !c->configured) return SS_GREEN;
    double elapsed = now - c->last;
    if (elapsed < 0.0) elapsed = 0.0;
    c->last = now;
    c->committed = min_of(c->cburst, c->committed + c->cir * elapsed);
    c->peak = min_of(c->pburst, c->peak + c->pir * elapsed);
    if (c->peak < units) return SS_RED;
    c->peak -= units;
    if (c->committed < units) return SS_YELLOW;
    c->committed -= units;
    return SS_GREEN;
}

static double packet_units(const ss_packet *p, const ss_meter *m) {
    return m->desc->unit == SS_METER_BYTES ? (double)p->sm.packet_length : 1.0;
}

uint32_t ss_meter_execute(ss_packet *p, uint32_t meter, uint64_t index) {
    ss_meter *m = &p->sw->meters[meter];
    if (index >= m->desc->size) return SS_GREEN;
    return cell_mark(&m->cells[index], packet_units(p, m), meter_now(p->sw));
}

void ss_direct_meter_mark(ss_packet *p, uint32_t meter, const ss_action_call *hit) {
    ss_meter *m = &p->sw->meters[meter];
    if (!hit) {
        m->color = SS_GREEN;
        return;
    }
    ss_entry *e = (ss_entry *)((const uint8_t *)hit - offsetof(ss_entry, call));
    m->color = cell_mark(e->meter_cell, packet_units(p, m), meter_now(p->sw));
}

uint32_t ss_direct_meter_read(ss_packet *p, uint32_t meter) { return p->sw->meters[meter].color; }

/* ------------------------------------------------------------------ control API (Python) */

static void cell_configure(ss_meter_cell *c, const double *config, double now) {
    c->cir = config[0];
    c->cburst = config[1];
    c->pir = config[2];
    c->pburst = config[3];
    c->committed = c->cburst;
    c->peak = c->pburst;
    c->last = now;
    c->configured = 1;
}

/* Configures cell `index` of an indexed meter: config = {cir, cburst, pir, pburst} (Python checked
 * them); NULL clears it (every packet GREEN again). */
SS_EXPORT int ss_ctl_meter_set(ss_switch *sw, uint32_t meter, uint64_t index, const double *config) {
    if (meter >= sw->prog->n_meters || index >= sw->prog->meters[meter].size) {
        ss_set_error("no meter cell %u[%llu]", meter, (unsigned long long)index);
        return SS_E_INVALID;
    }
    pthread_mutex_lock(&sw->lock);
    ss_meter_cell *c = &sw->meters[meter].cells[index];
    if (config)
        cell_configure(c, config, meter_now(sw));
    else
        c->configured = 0;
    pthread_mutex_unlock(&sw->lock);
    return SS_OK;
}

/* The direct meter cell of the entry of `table` with this match spec and priority (as
 * ss_ctl_table_find): config as ss_ctl_meter_set. The cell lives and dies with the entry. */
SS_EXPORT int ss_ctl_direct_meter_set(ss_switch *sw, uint32_t table, const uint8_t *spec, int64_t priority,
                                      const double *config) {
    int rc = SS_OK;
    if (table >= sw->prog->n_tables) {
        ss_set_error("no table with index %u", table);
        return SS_E_INVALID;
    }
    pthread_mutex_lock(&sw->lock);
    ss_table *t = &sw->tables[table];
    ss_entry *e = ss_table_find_entry(t, spec, priority);
    if (!e) {
        ss_set_error("table %s: no entry with this key", t->desc->name);
        rc = SS_E_NOT_FOUND;
    } else if (!config) {
        free(e->meter_cell);
        e->meter_cell = NULL;
    } else {
        if (!e->meter_cell) e->meter_cell = calloc(1, sizeof(ss_meter_cell));
        if (!e->meter_cell)
            rc = SS_E_NOMEM;
        else
            cell_configure(e->meter_cell, config, meter_now(sw));
    }
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* Meters read `seconds` instead of the monotonic clock (set = 1), or the clock again (set = 0): tests
 * make marking deterministic with it, as they give the Python runtime's meters their own clock. */
SS_EXPORT void ss_ctl_meter_clock(ss_switch *sw, int set, double seconds) {
    pthread_mutex_lock(&sw->lock);
    sw->meter_clock_set = set;
    sw->meter_clock = seconds;
    pthread_mutex_unlock(&sw->lock);
}
