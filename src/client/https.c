/* SPDX-License-Identifier: MIT */
/* https.c -- the HTTPS client of berth's programs; see https.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "canon.h"
#include "https.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

#define PEM_MAX (1024 * 1024)

struct berth_https {
    CURL *curl;
    json_t *doc;
    char *url; /* without a trailing slash */
    uint8_t broker_key[BERTH_ED25519_PUBLIC_LEN];
    char *cert, *key, *ca;
    size_t cert_len, key_len, ca_len;
    int64_t timeout_ns;
    char errbuf[CURL_ERROR_SIZE];
};

static const char *const config_members[] = {
    "broker_public_key", "ca", "certificate", "private_key", "schema_version", "timeout_ns", "url", NULL,
};

static int read_file(const char *what, const char *path, bool secret, char **ret, size_t *ret_len,
                     struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG,
        .uid = secret ? (uint32_t)geteuid() : BERTH_UID_ANY,
        .mode_mask = secret ? 077 : 022,
        .mode = 0,
        .max_size = PEM_MAX,
        .one_link = 1,
    };

    int r = berth_read_file_at(AT_FDCWD, path, &expect, ret, ret_len, reterr);

    if (r < 0)
        berth_error_prefix(reterr, "%s %s", what, path);
    return r;
}

void berth_https_free(struct berth_https *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    json_decref(c->doc);
    free(c->url);
    free(c->cert);
    berth_secret_free(c->key, c->key_len);
    free(c->ca);
    free(c);
}

const uint8_t *berth_https_broker_key(const struct berth_https *c)
{
    return c->broker_key;
}

static int parse_config(struct berth_https *c, const char *path, const char *text, size_t len,
                        struct berth_error *reterr)
{
    const char *url = NULL, *pub = NULL, *cert = NULL, *key = NULL, *ca = NULL;
    int64_t version = 0;
    int r;

    c->timeout_ns = 30000000000LL;
    if ((r = berth_json_parse(text, len, BERTH_HTTPS_CONFIG_MAX, &c->doc, reterr)) < 0 ||
        (r = berth_json_only_members(c->doc, "client", config_members, reterr)) < 0 ||
        (r = berth_json_int_member(c->doc, "client", "schema_version", true, 1, 1, &version, reterr)) < 0 ||
        (r = berth_json_string_member(c->doc, "client", "url", true, &url, reterr)) < 0 ||
        (r = berth_json_string_member(c->doc, "client", "broker_public_key", true, &pub, reterr)) < 0 ||
        (r = berth_json_string_member(c->doc, "client", "certificate", true, &cert, reterr)) < 0 ||
        (r = berth_json_string_member(c->doc, "client", "private_key", true, &key, reterr)) < 0 ||
        (r = berth_json_string_member(c->doc, "client", "ca", true, &ca, reterr)) < 0 ||
        (r = berth_json_int_member(c->doc, "client", "timeout_ns", false, 1000000, 3600000000000LL, &c->timeout_ns,
                                   reterr)) < 0) {
        berth_error_prefix(reterr, "%s", path);
        return r == -ENOMEM ? r : -EBADMSG;
    }
    if (strncmp(url, "https://", 8) != 0 || strlen(url) > 2048 || strpbrk(url, " \t\r\n?#"))
        return berth_error_set(reterr, -EBADMSG, "%s: client.url must be an https:// URL without query or fragment",
                               path);
    if (berth_public_key_from_b64url(pub, c->broker_key) < 0)
        return berth_error_set(reterr, -EBADMSG, "%s: client.broker_public_key must be 43 base64url characters", path);
    if (cert[0] != '/' || key[0] != '/' || ca[0] != '/')
        return berth_error_set(reterr, -EBADMSG, "%s: certificate, private_key and ca must be absolute paths", path);
    c->url = strdup(url);
    if (!c->url)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    while (strlen(c->url) > 8 && c->url[strlen(c->url) - 1] == '/')
        c->url[strlen(c->url) - 1] = '\0';
    if ((r = read_file("certificate", cert, false, &c->cert, &c->cert_len, reterr)) < 0 ||
        (r = read_file("private key", key, true, &c->key, &c->key_len, reterr)) < 0 ||
        (r = read_file("CA bundle", ca, false, &c->ca, &c->ca_len, reterr)) < 0)
        return r;
    return 0;
}

int berth_https_open(const char *path, struct berth_https **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    struct berth_https *c;
    const struct berth_file_expect expect = {
        .type = S_IFREG,
        .uid = BERTH_UID_ANY,
        .mode_mask = 022,
        .mode = 0,
        .max_size = BERTH_HTTPS_CONFIG_MAX,
        .one_link = 1,
    };
    struct curl_blob cert, key, ca;
    size_t len = 0;
    int r;

    if (!path || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    if ((r = berth_read_file_at(AT_FDCWD, path, &expect, &text, &len, reterr)) < 0) {
        berth_error_prefix(reterr, "%s", path);
        return r;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = parse_config(c, path, text, len, reterr)) < 0) {
        berth_https_free(c);
        return r;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(c->curl = curl_easy_init())) {
        berth_https_free(c);
        return berth_error_set(reterr, -EIO, "libcurl failed to initialise");
    }
    cert = (struct curl_blob){.data = c->cert, .len = c->cert_len, .flags = CURL_BLOB_NOCOPY};
    key = (struct curl_blob){.data = c->key, .len = c->key_len, .flags = CURL_BLOB_NOCOPY};
    ca = (struct curl_blob){.data = c->ca, .len = c->ca_len, .flags = CURL_BLOB_NOCOPY};
    if (curl_easy_setopt(c->curl, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_SSLCERTTYPE, "PEM") != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_SSLKEYTYPE, "PEM") != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_CAINFO_BLOB, &ca) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_CAPATH, NULL) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_SSLVERSION, (long)(CURL_SSLVERSION_TLSv1_3 | CURL_SSLVERSION_MAX_DEFAULT)) !=
            CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*") != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ns / 1000000)) != CURLE_OK ||
        curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf) != CURLE_OK) {
        berth_https_free(c);
        return berth_error_set(reterr, -EIO, "this libcurl lacks a feature berth needs (blobs, TLS 1.3, protocol lists)");
    }
    *ret = c;
    return 0;
}

void berth_https_set_wait(struct berth_https *c, int64_t wait_ns)
{
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)((c->timeout_ns + (wait_ns > 0 ? wait_ns : 0)) / 1000000));
}

static size_t collect(char *data, size_t size, size_t n, void *userdata)
{
    struct berth_buf *b = userdata;

    if (berth_buf_append(b, data, size * n) < 0)
        return 0; /* more than BERTH_HTTPS_REPLY_MAX: libcurl aborts the transfer */
    return size * n;
}

/*
 * Set up one transfer of @method on @path with the request @headers (NULL
 * or NULL-terminated, appended to the standard ones), the body @body when
 * not NULL, and the reply body going to @write (@userdata); then run it.
 * Return: 0 with *@ret_status; -EIO (@reterr says why; @write_error names
 * what a CURLE_WRITE_ERROR means).
 */
static int perform(struct berth_https *c, const char *method, const char *path, const char *const *headers,
                   const char *content_type, const char *body, size_t len, curl_write_callback write, void *userdata,
                   const char *write_error, long *ret_status, struct berth_error *reterr)
{
    struct curl_slist *list = NULL, *l;
    _cleanup_free_ char *url = NULL;
    CURLcode rc;
    long status = 0;
    size_t i;
    int r = 0;

    if (asprintf(&url, "%s%s", c->url, path) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    list = curl_slist_append(list, "Accept: application/json");
    if (list && body && content_type) {
        char type[128];
        snprintf(type, sizeof(type), "Content-Type: %s", content_type);
        list = (l = curl_slist_append(list, type)) ? l : NULL;
    }
    if (list)
        list = (l = curl_slist_append(list, "Expect:")) ? l : NULL;
    for (i = 0; list && headers && headers[i]; i++)
        list = (l = curl_slist_append(list, headers[i])) ? l : NULL;
    if (!list)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    c->errbuf[0] = '\0';
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, userdata);
    if (body || !streq(method, "GET")) {
        curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, streq(method, "POST") ? NULL : method);
    } else {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
    }
    rc = curl_easy_perform(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(list);
    if (rc != CURLE_OK)
        return berth_error_set(reterr, -EIO, "%s %s: %s", method, url,
                               rc == CURLE_WRITE_ERROR ? write_error
                                                       : (c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc)));
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400)
        return berth_error_set(reterr, -EIO,
                               "%s %s: the broker answered with a redirect (%ld), which berth "
                               "refuses",
                               method, url, status);
    *ret_status = status;
    return r;
}

int berth_https_request(struct berth_https *c, const char *method, const char *path, const char *body, size_t len,
                        long *ret_status, json_t **ret_body, char **ret_text, size_t *ret_text_len,
                        struct berth_error *reterr)
{
    return berth_https_send(c, method, path, NULL, "application/json", body, len, ret_status, ret_body, ret_text,
                            ret_text_len, reterr);
}

int berth_https_send(struct berth_https *c, const char *method, const char *path, const char *const *headers,
                     const char *content_type, const char *body, size_t len, long *ret_status, json_t **ret_body,
                     char **ret_text, size_t *ret_text_len, struct berth_error *reterr)
{
    struct berth_buf reply = BERTH_BUF_INIT(BERTH_HTTPS_REPLY_MAX);
    long status = 0;
    int r;

    r = perform(c, method, path, headers, content_type, body, len, collect, &reply,
                "the reply is larger than berth accepts", &status, reterr);
    if (r < 0) {
        berth_buf_free(&reply);
        return r;
    }
    *ret_status = status;
    if (ret_body) {
        *ret_body = NULL;
        if (reply.len)
            berth_json_parse(reply.data, reply.len, BERTH_HTTPS_REPLY_MAX, ret_body, NULL);
    }
    if (ret_text) {
        *ret_text = berth_buf_steal(&reply, ret_text_len);
        if (!*ret_text)
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    berth_buf_free(&reply);
    return r;
}

int berth_https_error(long status, const json_t *body, struct berth_error *reterr)
{
    const char *code = json_string_value(json_object_get(body, "error"));
    const char *message = json_string_value(json_object_get(body, "message"));

    if (code && message)
        return berth_error_set(reterr, -EPROTO, "%ld %s: %s", status, code, message);
    return berth_error_set(reterr, -EPROTO, "the broker answered %ld", status);
}

/* A download: the body of a 200 goes to the file, any other reply is collected. */
struct download {
    struct berth_https *c;
    int fd;
    uint64_t max_bytes, written;
    struct berth_sha256 *hash;
    struct berth_buf error;
    bool status_known, ok, too_large, write_failed;
    int write_errno;
};

static size_t download_write(char *data, size_t size, size_t n, void *userdata)
{
    struct download *d = userdata;
    size_t len = size * n;
    long status = 0;
    int r;

    if (!d->status_known) {
        curl_easy_getinfo(d->c->curl, CURLINFO_RESPONSE_CODE, &status);
        d->ok = status == 200;
        d->status_known = true;
    }
    if (!d->ok)
        return berth_buf_append(&d->error, data, len) < 0 ? 0 : len;
    if (len > d->max_bytes - d->written) {
        d->too_large = true;
        return 0;
    }
    if (d->hash && berth_sha256_update(d->hash, data, len) < 0) {
        d->write_failed = true;
        d->write_errno = ENOMEM;
        return 0;
    }
    if ((r = berth_write_all(d->fd, data, len)) < 0) {
        d->write_failed = true;
        d->write_errno = -r;
        return 0;
    }
    d->written += len;
    return len;
}

int berth_https_download(struct berth_https *c, const char *path, int fd, uint64_t max_bytes,
                         struct berth_sha256 *hash, uint64_t *ret_bytes, long *ret_status, json_t **ret_error,
                         struct berth_error *reterr)
{
    struct download d = {.c = c, .fd = fd, .max_bytes = max_bytes, .hash = hash, .error = BERTH_BUF_INIT(65536)};
    char what[128];
    long status = 0;
    int r;

    /* A large body may take longer than the client's timeout: only a stalled one fails. */
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 0L);
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, (long)(c->timeout_ns / 1000000000));
    snprintf(what, sizeof(what), "the reply is larger than %llu bytes", (unsigned long long)max_bytes);
    r = perform(c, "GET", path, NULL, NULL, NULL, 0, download_write, &d, what, &status, reterr);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ns / 1000000));
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 0L);
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, 0L);
    if (r < 0 && d.write_failed)
        r = berth_error_set(reterr, -d.write_errno, "writing what arrived failed: %s", strerror(d.write_errno));
    if (r == 0) {
        *ret_status = status;
        *ret_bytes = d.written;
        *ret_error = NULL;
        if (status != 200 && d.error.len)
            berth_json_parse(d.error.data, d.error.len, 65536, ret_error, NULL);
    }
    berth_buf_free(&d.error);
    return r;
}
