/* SPDX-License-Identifier: MIT */
/* budget.c -- stage budgets; see budget.h. */
#include "jsonobj.h"
#include "budget.h"

static const char *const members[] = {"compressed_bytes", "entries", "expanded_bytes", "layers", "wall_time_ns", NULL};

void berth_stage_limits_default(struct berth_stage_limits *ret)
{
    ret->compressed_bytes = BERTH_STAGE_MAX_COMPRESSED_BYTES;
    ret->expanded_bytes = BERTH_STAGE_MAX_EXPANDED_BYTES;
    ret->entries = BERTH_STAGE_MAX_ENTRIES;
    ret->layers = BERTH_STAGE_MAX_LAYERS;
    ret->wall_time_ns = BERTH_STAGE_MAX_WALL_TIME_NS;
}

int berth_stage_limits_from_json(const json_t *obj, struct berth_stage_limits *ret, struct berth_error *reterr)
{
    struct berth_stage_limits l;
    int64_t cb, eb, en, la, wt;
    int r;

    berth_stage_limits_default(&l);
    if (!obj) {
        *ret = l;
        return 0;
    }
    cb = (int64_t)l.compressed_bytes;
    eb = (int64_t)l.expanded_bytes;
    en = (int64_t)l.entries;
    la = l.layers;
    wt = l.wall_time_ns;
    if ((r = berth_json_only_members(obj, "limits", members, reterr)) < 0 ||
        (r = berth_json_int_member(obj, "limits", "compressed_bytes", false, 1,
                                   (int64_t)BERTH_STAGE_MAX_COMPRESSED_BYTES, &cb, reterr)) < 0 ||
        (r = berth_json_int_member(obj, "limits", "expanded_bytes", false, 1, (int64_t)BERTH_STAGE_MAX_EXPANDED_BYTES,
                                   &eb, reterr)) < 0 ||
        (r = berth_json_int_member(obj, "limits", "entries", false, 1, (int64_t)BERTH_STAGE_MAX_ENTRIES, &en, reterr)) <
            0 ||
        (r = berth_json_int_member(obj, "limits", "layers", false, 1, BERTH_STAGE_MAX_LAYERS, &la, reterr)) < 0 ||
        (r = berth_json_int_member(obj, "limits", "wall_time_ns", false, 1, BERTH_STAGE_MAX_WALL_TIME_NS, &wt,
                                   reterr)) < 0)
        return r;
    l.compressed_bytes = (uint64_t)cb;
    l.expanded_bytes = (uint64_t)eb;
    l.entries = (uint64_t)en;
    l.layers = (unsigned)la;
    l.wall_time_ns = wt;
    *ret = l;
    return 0;
}
