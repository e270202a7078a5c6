/* SPDX-License-Identifier: MIT */
/*
 * cmd-job.c -- berthctl submit, inspect, wait, cancel, collect and
 * capabilities: the verbs that talk to berthd about jobs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "berthctl.h"
#include "canon.h"
#include "client.h"
#include "clock.h"
#include "digest.h"
#include "encoding.h"
#include "enrol.h"
#include "fsutil.h"
#include "job.h"
#include "jsonobj.h"
#include "macro.h"
#include "receipt.h"

#define DEFAULT_WAIT_SECONDS 600
#define LONG_POLL_MAX_NS (60LL * BERTH_NS_PER_SEC) /* the most berthd parks one request (docs/api.md) */
#define EARLY_PAUSE_MS 100                         /* after a 202 that came before its bound (berthd shutting down) */

static void help_jobs(const char *verb)
{
    printf("Usage: berthctl [--config=CLIENT.json] submit JOB.json [--wait] [--timeout=SECONDS] [--json]\n"
           "       berthctl [--config=CLIENT.json] inspect ID [--json]\n"
           "       berthctl [--config=CLIENT.json] wait ID [--timeout=SECONDS] [--json]\n"
           "       berthctl [--config=CLIENT.json] cancel ID [--json]\n"
           "       berthctl [--config=CLIENT.json] collect ID [--out=DIR] [--json]\n"
           "       berthctl [--config=CLIENT.json] capabilities [--json]\n"
           "\n"
           "Talk to berthd over HTTPS with the client certificate named in the client\n"
           "configuration (--config, or $BERTH_CLIENT_CONFIG; see docs/berthd.md).  Every\n"
           "receipt and result received is verified against the broker public key pinned in\n"
           "that configuration before anything is printed; a reply signed by another key is\n"
           "an error (exit status 3).  Redirects are refused.\n"
           "\n"
           "  submit JOB.json   send a sealed job (schema v1, at most 1 MiB; checked locally\n"
           "                    first) and print its signed receipt.  Resending the same\n"
           "                    document is safe: the broker answers with the same receipt.\n"
           "                    --wait then waits for the result as \"wait\" does.\n"
           "  inspect ID        print the job's state, revision and receipt\n"
           "  wait ID           wait until the job has a signed result (at most --timeout\n"
           "                    seconds, default %d; berthd answers the moment the result\n"
           "                    is signed: a long poll of up to 60 s per request, asked\n"
           "                    again until the timeout), verify it, write the job's stdout to\n"
           "                    standard output and its stderr to standard error, and\n"
           "                    summarise on standard error; --json prints the result\n"
           "                    document instead\n"
           "  cancel ID         ask the broker to cancel the job (recorded before the\n"
           "                    sandbox is stopped) and print its state\n"
           "  collect ID        fetch and verify the final result; with --out=DIR write\n"
           "                    DIR/result.json, DIR/receipt.json, DIR/stdout, DIR/stderr\n"
           "                    and, for each output the result lists, DIR/outputs/ID,\n"
           "                    fetched and checked against the digest and size in the\n"
           "                    signed result before anything is written (a mismatch, or\n"
           "                    the broker finding its stored copy corrupt, is exit\n"
           "                    status 3).  DIR is created 0700; existing files are never\n"
           "                    overwritten\n"
           "  capabilities      print what this client may do: principal, scope, granted\n"
           "                    pools and images, limits ceiling, backends\n"
           "\n"
           "Exit status: 0 success (for wait and submit --wait: the job exited with status\n"
           "0); 1 the request was refused or failed, or the job did not exit 0; 2 usage\n"
           "error; 3 a receipt or result failed verification.\n"
           "\n"
           "Example:\n"
           "  berthctl --config=/srv/berth/client.json submit job.json --wait\n",
           DEFAULT_WAIT_SECONDS);
    (void)verb;
}

/* Print @value as the user asked: canonical with --json, indented otherwise. */
static int print(const struct bctl_globals *g, const char *verb, const json_t *value)
{
    return bctl_print_json(verb, value, g->json);
}

static int verify_failed(const char *verb, const char *what, const struct berth_error *err)
{
    bctl_error(verb, "the %s does not verify against the pinned broker key: %s", what, err->message);
    return BCTL_EXIT_VERIFY;
}

/* Verify a receipt envelope against the pinned key and check that it is the
 * receipt of job @id (a broker must not answer with another job's receipt,
 * however validly signed). */
static int check_receipt(struct berth_https *c, const char *verb, const json_t *receipt, const struct berth_job *job,
                         const char *id)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const json_t *body = NULL;
    const char *got;

    if (berth_receipt_verify(receipt, berth_https_broker_key(c), job, &body, &err) < 0)
        return verify_failed(verb, "receipt", &err);
    got = json_string_value(json_object_get(body, "job_id"));
    if (!streq(got, id)) {
        bctl_error(verb, "the broker answered for job %s with the receipt of another job", id);
        return BCTL_EXIT_VERIFY;
    }
    return BCTL_EXIT_OK;
}

static int job_id_ok(const char *verb, const char *id)
{
    if (!berth_job_id_valid(id))
        return bctl_usage_error(verb, "a job id is 1 to %d of [A-Za-z0-9._-], not all dots; \"%s\" is not",
                                BERTH_JOB_ID_MAX, id ?: "");
    return BCTL_EXIT_OK;
}

/* GET @path, requiring @want (or @want2) as status; *@ret the JSON body. */
static int get(struct berth_https *c, const char *verb, const char *path, long want, long want2, long *ret_status,
               json_t **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    long status = 0;
    json_t *body = NULL;

    if (berth_https_request(c, "GET", path, NULL, 0, &status, &body, NULL, NULL, &err) < 0)
        return bctl_error(verb, "%s", err.message);
    if (status != want && status != want2) {
        int r = bctl_client_fail(verb, status, body);
        json_decref(body);
        return r;
    }
    if (!body) {
        return bctl_error(verb, "the broker's reply to %s is not JSON", path);
    }
    if (ret_status)
        *ret_status = status;
    *ret = body;
    return BCTL_EXIT_OK;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int write_b64(FILE *out, const json_t *v)
{
    size_t n = json_string_length(v), len = 0;
    _cleanup_free_ uint8_t *raw = malloc(n + 1);

    if (!raw || berth_base64url_decode(json_string_value(v), n, raw, n + 1, &len) < 0)
        return -EBADMSG;
    if (len && fwrite(raw, 1, len, out) != len)
        return -EIO;
    return fflush(out) == 0 ? 0 : -EIO;
}

/* Fetch and verify the final result of @id (binding it to its receipt and,
 * when known, to @job); 1 with nothing in *@ret while it is still pending.
 * @known: NULL, or @id's receipt as this run already verified it (the
 * submission's reply), which saves asking for it again. */
static int fetch_result(struct berth_https *c, const char *verb, const char *id, const struct berth_job *job,
                        const json_t *known, int64_t wait_ns, json_t **ret_result, json_t **ret_receipt,
                        char ret_state[32])
{
    struct berth_error err = BERTH_ERROR_INIT;
    char path[256];
    json_t *result = NULL, *view = NULL, *receipt;
    long status = 0;
    int r;

    if (wait_ns > 0)
        snprintf(path, sizeof(path), "/v1/jobs/%s/result?wait_ns=%lld", id, (long long)wait_ns);
    else
        snprintf(path, sizeof(path), "/v1/jobs/%s/result", id);
    berth_https_set_wait(c, wait_ns);
    r = get(c, verb, path, 200, 202, &status, &result);
    berth_https_set_wait(c, 0);
    if (r != BCTL_EXIT_OK)
        return r;
    if (status == 202) {
        snprintf(ret_state, 32, "%s", json_string_value(json_object_get(result, "state")) ?: "pending");
        json_decref(result);
        return -1;
    }
    if (known) {
        receipt = json_incref((json_t *)known);
    } else {
        snprintf(path, sizeof(path), "/v1/jobs/%s", id);
        r = get(c, verb, path, 200, 200, NULL, &view);
        if (r != BCTL_EXIT_OK) {
            json_decref(result);
            return r;
        }
        receipt = json_incref(json_object_get(view, "receipt"));
        json_decref(view);
    }
    if (!known && (r = check_receipt(c, verb, receipt, job, id)) != BCTL_EXIT_OK) {
        json_decref(result);
        json_decref(receipt);
        return r;
    }
    if (berth_result_verify(result, berth_https_broker_key(c), job, receipt, NULL, &err) < 0) {
        json_decref(result);
        json_decref(receipt);
        return verify_failed(verb, "result", &err);
    }
    *ret_result = result;
    *ret_receipt = receipt;
    return BCTL_EXIT_OK;
}

static int wait_result(const struct bctl_globals *g, struct berth_https *c, const char *verb, const char *id,
                       const struct berth_job *job, const json_t *known, long timeout_s)
{
    int64_t deadline = berth_deadline_ns(CLOCK_MONOTONIC, (int64_t)timeout_s * BERTH_NS_PER_SEC);
    json_t *result = NULL, *receipt = NULL;
    const json_t *body, *code;
    const char *status;
    char state[32] = "";
    int r;

    /* A long poll: berthd answers the moment the result is signed, or at
     * the bound asked for (the time left, at most 60 s per request). */
    for (;;) {
        int64_t now = 0, asked, asked_at;

        if (berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0)
            now = deadline;
        asked = deadline - now;
        asked = asked > LONG_POLL_MAX_NS ? LONG_POLL_MAX_NS : asked > 0 ? asked : 0;
        asked_at = now;
        r = fetch_result(c, verb, id, job, known, asked, &result, &receipt, state);
        if (r != -1)
            break;
        if (berth_deadline_passed(CLOCK_MONOTONIC, deadline))
            return bctl_error(verb, "job %s is still %s after %ld seconds", id, state, timeout_s);
        /* Answered before its bound (berthd is shutting down): do not ask again in a tight loop. */
        if (berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0 && now - asked_at < asked)
            sleep_ms(EARLY_PAUSE_MS);
    }
    if (r != BCTL_EXIT_OK)
        return r;
    body = json_object_get(result, "result");
    status = json_string_value(json_object_get(body, "status"));
    code = json_object_get(body, "exit_code");
    if (g->json) {
        r = print(g, verb, result);
    } else {
        if (write_b64(stdout, json_object_get(body, "stdout")) < 0 ||
            write_b64(stderr, json_object_get(body, "stderr")) < 0)
            r = bctl_error(verb, "writing the job's output failed");
        fprintf(stderr, "berthctl %s: job %s ", verb, id);
        bctl_fputs_clean(status ?: "?", stderr);
        if (json_is_integer(code))
            fprintf(stderr, " with exit code %lld", (long long)json_integer_value(code));
        if (json_is_string(json_object_get(body, "reason"))) {
            fputs(" (", stderr);
            bctl_fputs_clean(json_string_value(json_object_get(body, "reason")), stderr);
            fputs(")", stderr);
        }
        fputs("; result signed by ", stderr);
        bctl_fputs_clean(json_string_value(json_object_get(body, "key_id")) ?: "?", stderr);
        fputs(", verified\n", stderr);
    }
    if (r == BCTL_EXIT_OK && !(streq(status, "exited") && json_is_integer(code) && json_integer_value(code) == 0))
        r = BCTL_EXIT_FAIL;
    json_decref(result);
    json_decref(receipt);
    return r;
}

static int parse_timeout(const char *verb, const char *arg, long *ret)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = strtol(arg, &end, 10);
    if (errno || !*arg || *end || v < 1 || v > 7 * 24 * 3600)
        return bctl_usage_error(verb, "--timeout takes whole seconds from 1 to 604800, not \"%s\"", arg);
    *ret = v;
    return BCTL_EXIT_OK;
}

static int do_submit(const struct bctl_globals *g, struct berth_https *c, const char *verb, const char *file, bool wait,
                     long timeout_s)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    struct berth_job *job = NULL;
    json_t *reply = NULL;
    long status = 0;
    size_t len = 0;
    int r;

    if (bctl_read_input(file, BERTH_JOB_MAX, &text, &len, &err) < 0)
        return bctl_error(verb, "%s: %s", bctl_input_name(file), err.message);
    if (berth_job_parse(text, len, &job, &err) < 0)
        return bctl_error(verb, "%s: %s", bctl_input_name(file), err.message);
    if (berth_https_request(c, "POST", "/v1/jobs", text, len, &status, &reply, NULL, NULL, &err) < 0) {
        berth_job_free(job);
        return bctl_error(verb, "%s", err.message);
    }
    if (status != 201 && status != 200) {
        r = bctl_client_fail(verb, status, reply);
    } else if ((r = check_receipt(c, verb, reply, job, job->id)) != BCTL_EXIT_OK) {
        /* reported */
    } else if (!wait) {
        r = print(g, verb, reply);
    } else {
        if (!g->json)
            fprintf(stderr, "berthctl %s: job %s %s; receipt verified\n", verb, job->id,
                    status == 201 ? "accepted" : "was already accepted");
        r = wait_result(g, c, verb, job->id, job, reply, timeout_s);
    }
    json_decref(reply);
    berth_job_free(job);
    return r;
}

static int do_inspect(const struct bctl_globals *g, struct berth_https *c, const char *verb, const char *id)
{
    char path[256];
    json_t *view = NULL;
    int r;

    snprintf(path, sizeof(path), "/v1/jobs/%s", id);
    if ((r = get(c, verb, path, 200, 200, NULL, &view)) != BCTL_EXIT_OK)
        return r;
    if ((r = check_receipt(c, verb, json_object_get(view, "receipt"), NULL, id)) == BCTL_EXIT_OK)
        r = print(g, verb, view);
    json_decref(view);
    return r;
}

static int do_cancel(const struct bctl_globals *g, struct berth_https *c, const char *verb, const char *id)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char path[256];
    json_t *body = NULL;
    long status = 0;
    int r;

    snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
    if (berth_https_request(c, "POST", path, "", 0, &status, &body, NULL, NULL, &err) < 0)
        return bctl_error(verb, "%s", err.message);
    r = status == 202 ? print(g, verb, body) : bctl_client_fail(verb, status, body);
    json_decref(body);
    return r;
}

static int write_out(const char *verb, int dirfd, const char *dir, const char *name, const void *data, size_t len)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (berth_publish_at(dirfd, name, data, len, 0600, 0, &err) < 0)
        return bctl_error(verb, "%s/%s: %s", dir, name, err.message);
    return BCTL_EXIT_OK;
}

static int write_json_out(const char *verb, int dirfd, const char *dir, const char *name, const json_t *v)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (berth_json_serialize(v, 0, &text, &len, NULL) < 0)
        return bctl_error(verb, "out of memory");
    text[len] = '\n'; /* serialize leaves room for the NUL: reuse it */
    return write_out(verb, dirfd, dir, name, text, len + 1);
}

static int write_b64_out(const char *verb, int dirfd, const char *dir, const char *name, const json_t *v)
{
    size_t n = json_string_length(v), len = 0;
    _cleanup_free_ uint8_t *raw = malloc(n + 1);

    if (!raw || berth_base64url_decode(json_string_value(v), n, raw, n + 1, &len) < 0)
        return bctl_error(verb, "%s is not base64url", name);
    return write_out(verb, dirfd, dir, name, raw, len);
}

/* The captured outputs of the signed result @body, each fetched into a
 * temporary file of DIR/outputs (@dirfd) and checked against the digest
 * and size the result names; @ret (n entries) keeps them for
 * publish_outputs().  Nothing is published here. */
static int fetch_outputs(struct berth_https *c, const char *verb, const char *id, const json_t *body, int dirfd,
                         const char *dir, struct berth_publish *ret)
{
    const json_t *o;
    size_t i;

    json_array_foreach(json_object_get(body, "outputs"), i, o) {
        struct berth_error err = BERTH_ERROR_INIT;
        const char *oid = json_string_value(json_object_get(o, "id"));
        const char *digest = json_string_value(json_object_get(o, "digest"));
        uint64_t size = (uint64_t)json_integer_value(json_object_get(o, "size")), got = 0;
        json_t *reply = NULL;
        char path[512];
        long status = 0;
        int r;

        if (!berth_job_id_valid(oid))
            return bctl_error(verb, "the result names an output \"%s\" berthctl will not write", oid ?: "");
        if (berth_publish_begin(dirfd, oid, &ret[i], &err) < 0)
            return bctl_error(verb, "%s/outputs/%s: %s", dir, oid, err.message);
        snprintf(path, sizeof(path), "/v1/jobs/%s/outputs/%s", id, oid);
        if (berth_https_download(c, path, ret[i].fd, size, NULL, &got, &status, &reply, &err) < 0)
            return bctl_error(verb, "output %s: %s", oid, err.message);
        if (status != 200) {
            r = bctl_client_fail(verb, status, reply);
            /* The broker found the stored bytes are not the ones its result signed. */
            if (streq_ptr(json_string_value(json_object_get(reply, "error")), "corrupt"))
                r = BCTL_EXIT_VERIFY;
            json_decref(reply);
            return r;
        }
        if (berth_digest_fd_matches(ret[i].fd, size, digest, &err) < 0) {
            bctl_error(verb, "output %s does not match the signed result: %s", oid, err.message);
            return BCTL_EXIT_VERIFY;
        }
    }
    return BCTL_EXIT_OK;
}

/* Give the @n fetched outputs of @p their names (or, @commit false, drop them). */
static int publish_outputs(const char *verb, const char *dir, struct berth_publish *p, size_t n, bool commit)
{
    int r = BCTL_EXIT_OK;
    size_t i;

    for (i = 0; i < n; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        if (!commit || r != BCTL_EXIT_OK)
            berth_publish_abort(&p[i]);
        else if (p[i].fd >= 0 && berth_publish_commit(&p[i], 0600, 0, &err) < 0)
            r = bctl_error(verb, "%s/outputs/%s: %s", dir, p[i].name, err.message);
    }
    return r;
}

static int do_collect(const struct bctl_globals *g, struct berth_https *c, const char *verb, const char *id,
                      const char *out)
{
    struct berth_error err = BERTH_ERROR_INIT;
    json_t *result = NULL, *receipt = NULL;
    const json_t *body;
    char state[32] = "";
    _cleanup_close_ int dirfd = -1, outfd = -1;
    _cleanup_free_ struct berth_publish *outs = NULL;
    size_t n_outs = 0, i;
    int r;

    r = fetch_result(c, verb, id, NULL, NULL, 0, &result, &receipt, state);
    if (r == -1)
        return bctl_error(verb, "job %s has no result yet (it is %s)", id, state);
    if (r != BCTL_EXIT_OK)
        return r;
    if (!out) {
        r = print(g, verb, result);
        goto done;
    }
    if (mkdir(out, 0700) < 0 && errno != EEXIST) {
        r = bctl_error(verb, "%s: %s", out, strerror(errno));
        goto done;
    }
    dirfd = berth_open_trusted(out, O_RDONLY | O_DIRECTORY, 0, &err);
    if (dirfd < 0) {
        r = bctl_error(verb, "%s: %s", out, err.message);
        goto done;
    }
    body = json_object_get(result, "result");
    /* Outputs first, each checked against the signed result before anything is written. */
    n_outs = json_array_size(json_object_get(body, "outputs"));
    if (n_outs) {
        outs = calloc(n_outs, sizeof(*outs));
        if (!outs) {
            r = bctl_error(verb, "out of memory");
            goto done;
        }
        for (i = 0; i < n_outs; i++)
            outs[i].fd = -1;
        if (mkdirat(dirfd, "outputs", 0700) < 0 && errno != EEXIST) {
            r = bctl_error(verb, "%s/outputs: %s", out, strerror(errno));
            goto done;
        }
        outfd = berth_open_beneath(dirfd, "outputs", O_RDONLY | O_DIRECTORY, 0, &err);
        if (outfd < 0) {
            r = bctl_error(verb, "%s/outputs: %s", out, err.message);
            goto done;
        }
        if ((r = fetch_outputs(c, verb, id, body, outfd, out, outs)) != BCTL_EXIT_OK)
            goto done;
    }
    if ((r = write_json_out(verb, dirfd, out, "result.json", result)) != BCTL_EXIT_OK ||
        (r = write_json_out(verb, dirfd, out, "receipt.json", receipt)) != BCTL_EXIT_OK ||
        (r = write_b64_out(verb, dirfd, out, "stdout", json_object_get(body, "stdout"))) != BCTL_EXIT_OK ||
        (r = write_b64_out(verb, dirfd, out, "stderr", json_object_get(body, "stderr"))) != BCTL_EXIT_OK)
        goto done;
    if ((r = publish_outputs(verb, out, outs, n_outs, true)) != BCTL_EXIT_OK)
        goto done;
    if (!g->json)
        printf("job %s: %s; result, receipt, stdout and stderr%s written to %s\n", id,
               json_string_value(json_object_get(body, "status")), n_outs ? " and its outputs, verified," : "", out);
done:
    if (outs)
        publish_outputs(verb, out, outs, n_outs, false);
    json_decref(result);
    json_decref(receipt);
    return r;
}

static int do_capabilities(const struct bctl_globals *g, struct berth_https *c, const char *verb)
{
    json_t *body = NULL;
    int r;

    if ((r = get(c, verb, "/v1/capabilities", 200, 200, NULL, &body)) != BCTL_EXIT_OK)
        return r;
    r = print(g, verb, body);
    json_decref(body);
    return r;
}

int cmd_job(struct bctl_globals *g, int argc, char **argv)
{
    enum { OPT_WAIT = 0x200, OPT_TIMEOUT, OPT_OUT };
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"wait", no_argument, NULL, OPT_WAIT},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"out", required_argument, NULL, OPT_OUT},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    const char *verb = argv[0] + strlen("berthctl ");
    _cleanup_free_ char *out = NULL;
    struct berth_https *c = NULL;
    bool wait = false, submit = streq(verb, "submit"), caps = streq(verb, "capabilities");
    long timeout_s = DEFAULT_WAIT_SECONDS;
    int ch, r;

    while ((ch = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        r = bctl_global_option(g, verb, ch, optarg);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (ch) {
        case 'h': help_jobs(verb); return BCTL_EXIT_OK;
        case OPT_WAIT:
            if (!submit)
                return bctl_usage_error(verb, "--wait belongs to submit");
            wait = true;
            break;
        case OPT_TIMEOUT:
            if (!submit && !streq(verb, "wait"))
                return bctl_usage_error(verb, "--timeout belongs to submit --wait and wait");
            if ((r = parse_timeout(verb, optarg, &timeout_s)) != BCTL_EXIT_OK)
                return r;
            break;
        case OPT_OUT:
            if (!streq(verb, "collect"))
                return bctl_usage_error(verb, "--out belongs to collect");
            if ((r = bctl_absolute_arg(verb, "--out", optarg, &out)) != 0)
                return r;
            break;
        default: return bctl_usage_hint(verb);
        }
    }
    if (caps && optind != argc)
        return bctl_usage_error(verb, "capabilities takes no argument");
    if (!caps && optind + 1 != argc)
        return bctl_usage_error(verb, "%s takes exactly one %s", verb, submit ? "job file" : "job id");
    if (!submit && !caps && (r = job_id_ok(verb, argv[optind])) != BCTL_EXIT_OK)
        return r;
    if ((r = bctl_client_open(g, verb, &c)) != BCTL_EXIT_OK)
        return r;
    if (submit)
        r = do_submit(g, c, verb, argv[optind], wait, timeout_s);
    else if (caps)
        r = do_capabilities(g, c, verb);
    else if (streq(verb, "inspect"))
        r = do_inspect(g, c, verb, argv[optind]);
    else if (streq(verb, "wait"))
        r = wait_result(g, c, verb, argv[optind], NULL, NULL, timeout_s);
    else if (streq(verb, "cancel"))
        r = do_cancel(g, c, verb, argv[optind]);
    else
        r = do_collect(g, c, verb, argv[optind], out);
    berth_https_free(c);
    return r;
}
