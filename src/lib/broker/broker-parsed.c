/* SPDX-License-Identifier: MIT */
/*
 * broker-parsed.c -- a submission's job document parsed ahead of its batch
 * (broker.h, struct berth_parsed_job), and the one place a batch gets a
 * submission's job from: the parse done ahead, or its own.
 */
#include <errno.h>
#include <stdlib.h>

#include "broker-internal.h"
#include "canon.h"
#include "macro.h"

struct berth_parsed_job {
    int r;                  /* berth_job_parse()'s return */
    struct berth_job *job;  /* when r == 0 ... */
    char *text;             /* ... with its canonical form (the journal's copy) */
    struct berth_error err; /* when r < 0 */
};

int berth_parsed_job_new(const char *body, size_t len, struct berth_parsed_job **ret)
{
    struct berth_parsed_job *p;

    if (!body || !ret)
        return -EINVAL;
    if (len > BERTH_JOB_MAX)
        return -EFBIG;
    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->err = (struct berth_error)BERTH_ERROR_INIT;
    p->r = berth_job_parse(body, len, &p->job, &p->err);
    if (p->r == 0 && berth_json_serialize(p->job->doc, 0, &p->text, NULL, NULL) < 0) {
        /* Parsed but not kept whole: the batch does it again itself. */
        berth_parsed_job_free(p);
        return -ENOMEM;
    }
    *ret = p;
    return 0;
}

void berth_parsed_job_free(struct berth_parsed_job *p)
{
    if (!p)
        return;
    berth_job_free(p->job);
    free(p->text);
    free(p);
}

int broker_submission_job(const struct berth_submission *s, struct broker_job_ref *ref, struct berth_error *reterr)
{
    int r;

    *ref = (struct broker_job_ref){0};
    if (s->parsed) {
        if (s->parsed->r < 0) {
            if (reterr)
                *reterr = s->parsed->err;
            return s->parsed->r;
        }
        ref->job = s->parsed->job;
        ref->text = s->parsed->text;
        return 0;
    }
    r = berth_job_parse(s->body, s->len, &ref->owned, reterr);
    if (r < 0)
        return r;
    ref->job = ref->owned;
    return 0;
}

void broker_job_ref_clear(struct broker_job_ref *ref)
{
    berth_job_free(ref->owned);
    *ref = (struct broker_job_ref){0};
}
