/* SPDX-License-Identifier: MIT */
/*
 * http-probe.c -- the raw test client of berthd's front door: exact bytes
 * over TLS 1.3, connections that hold slots, and a request with a hard
 * deadline.  The manual is the --help text below; the tests that use it are
 * tests/cli/test-berthd-frontdoor.sh.  Test-only: built by "make check",
 * never installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "http-probe-hold.h"
#include "http-probe-net.h"
#include "http-probe-reply.h"
#include "macro.h"

#define NS_PER_MS 1000000LL
#define FILE_MAX (64 * 1024 * 1024) /* bytes of a request file */
#define CONNECT_MS 10000            /* send: connect, handshake, and writing */
#define SEND_READ_MAX_MS 60000      /* send: reading in all, however the server trickles */
#define FD_SPARE 32                 /* descriptors kept beyond one per holder */

/* Exit statuses (the manual's EXIT STATUS). */
#define EXIT_NO_REPLY 1
#define EXIT_PROBE_FAILED 2

static const char manual[] =
    "NAME\n"
    "    http-probe - raw HTTP/1.1-over-TLS test client for berthd's front door\n"
    "\n"
    "SYNOPSIS\n"
    "    http-probe send --connect HOST:PORT --ca CA.pem [--cert C.pem --key K.pem]\n"
    "                    [--source ADDR] [--wait-ms N] FILE\n"
    "    http-probe get --connect HOST:PORT --ca CA.pem --cert C.pem --key K.pem\n"
    "                   [--source ADDR] --deadline-ms N PATH\n"
    "    http-probe hold-tcp --connect HOST:PORT --count N --source ADDR[,ADDR...]\n"
    "                        --seconds S [--reconnect-ms N]\n"
    "    http-probe hold-slow --connect HOST:PORT --ca CA.pem --cert C.pem --key K.pem\n"
    "                         --count N --seconds S [--source ADDR[,ADDR...]] [--interval-ms N]\n"
    "    http-probe trickle-handshake --connect HOST:PORT --ca CA.pem [--cert C.pem --key K.pem]\n"
    "                                 --seconds S [--source ADDR] [--interval-ms N]\n"
    "    http-probe --help\n"
    "\n"
    "DESCRIPTION\n"
    "    A client for tests that must send what well-behaved clients never\n"
    "    send: exact request bytes, connections that hold a server's slots, a\n"
    "    TLS handshake one byte at a time.  It speaks TLS 1.3 only, verifies the\n"
    "    server certificate against CA.pem and the IP address of HOST (numeric\n"
    "    IPv4, or IPv6 in brackets; names are never resolved), offers ALPN\n"
    "    http/1.1, and presents C.pem/K.pem (PEM, key unencrypted) when given.\n"
    "    ADDR is a numeric local address bound before connecting, for example\n"
    "    127.0.0.7: all of 127.0.0.0/8 is loopback on Linux, so one host can\n"
    "    play many sources.\n"
    "\n"
    "    The server has \"closed\" the connection when it sent a TLS close_notify\n"
    "    or a fatal alert, or the TCP stream ended or was reset.\n"
    "\n"
    "    Responses are framed as RFC 9112 section 6.3 says for a client:\n"
    "    Content-Length, chunked, none for 1xx/204/304, else up to the close.\n"
    "    A response to HEAD is not known as such; its declared length is read\n"
    "    as a body.\n"
    "\n"
    "SUBCOMMANDS\n"
    "    send FILE\n"
    "        Connect, complete the handshake, write FILE's bytes exactly as they\n"
    "        are (CR, LF and NUL included; several requests in a row are one\n"
    "        pipelined write), then read until the server closes the connection\n"
    "        or --wait-ms pass with nothing new.  Prints one line per response\n"
    "        status line, in order:\n"
    "            status NNN\n"
    "        (or \"unframed\" once, for bytes that start no response), then one of\n"
    "            closed      the server closed the connection\n"
    "            open        it was still open when the wait ended\n"
    "        If the handshake itself is ended by the server, prints\n"
    "        \"handshake failed\" then \"closed\"; if it does not finish within\n"
    "        10 s, \"handshake timeout\" then \"open\".  A server that closes while\n"
    "        FILE is being written is read from all the same (what it answered\n"
    "        before closing is still printed).\n"
    "\n"
    "    get PATH\n"
    "        One \"GET PATH HTTP/1.1\" with Host: HOST:PORT and Connection: close.\n"
    "        --deadline-ms bounds everything: connect, handshake, request, and\n"
    "        the complete reply.  Prints \"status NNN\" of the final response and\n"
    "        exits 0; or prints \"deadline\" (no complete reply in time) or\n"
    "        \"closed\" (the server refused or closed first) and exits 1.\n"
    "\n"
    "    hold-tcp\n"
    "        --count plain TCP connections that send nothing, bound in turn to\n"
    "        the --source addresses, for --seconds.  A connection the server\n"
    "        closes, or one that fails to connect, is made again after\n"
    "        --reconnect-ms (default 100).  Prints:\n"
    "            connects N   connections established\n"
    "            closes N     established connections the server closed\n"
    "            failed N     connection attempts that failed\n"
    "            open N       connections still established at the end\n"
    "\n"
    "    hold-slow\n"
    "        --count TLS connections (at most 4 handshaking at a time), each of\n"
    "        which after its handshake sends the request head\n"
    "        \"GET /v1/health HTTP/1.1\\r\\nHost: HOST\\r\\nX-Slow: aaa...\" one byte\n"
    "        every --interval-ms (default 1000) and never finishes it: a\n"
    "        slowloris.  Ends when the server closed them all, or after\n"
    "        --seconds.  Prints:\n"
    "            connections N     connections started\n"
    "            handshakes N      handshakes completed\n"
    "            closed N          connections the server closed\n"
    "            open N            connections still open at the end\n"
    "            first_close_s S   seconds from a connection's start to the\n"
    "                              earliest close (\"-\" if none closed)\n"
    "            last_close_s S    the same, to the latest close\n"
    "\n"
    "    trickle-handshake\n"
    "        One connection whose TLS handshake bytes go out one every\n"
    "        --interval-ms (default 1000), for at most --seconds.  Prints\n"
    "            hello_bytes N     bytes of the ClientHello\n"
    "            sent N            bytes sent\n"
    "        then one of\n"
    "            closed S          the server closed it, S seconds after the connect\n"
    "            handshake S       the handshake completed after S seconds\n"
    "            open              neither, within --seconds\n"
    "\n"
    "OPTIONS\n"
    "    --connect HOST:PORT   the server: 127.0.0.1:8443 or [::1]:8443\n"
    "    --ca FILE             PEM certificates the server certificate must chain to\n"
    "    --cert FILE           PEM client certificate (chain), with --key\n"
    "    --key FILE            PEM private key of --cert\n"
    "    --source ADDR[,...]   local address(es) to bind (send and get: one)\n"
    "    --wait-ms N           send: how long a quiet open connection is read (default 2000)\n"
    "    --deadline-ms N       get: the hard deadline (required)\n"
    "    --count N             holders: connections (1..10000)\n"
    "    --seconds S           holders: how long (1..3600)\n"
    "    --interval-ms N       hold-slow, trickle-handshake: between two bytes\n"
    "    --reconnect-ms N      hold-tcp: pause before connecting again\n"
    "    --help                this text\n"
    "\n"
    "EXIT STATUS\n"
    "    0  the probe ran (whatever the server did: that is what is printed)\n"
    "    1  get: no complete reply (\"deadline\" or \"closed\")\n"
    "    2  the probe itself failed: bad usage, a file that does not load, a\n"
    "       source address that cannot be bound, a server certificate that\n"
    "       does not verify, nothing listening (send, trickle-handshake); a\n"
    "       message on standard error says which\n"
    "\n"
    "EXAMPLES\n"
    "    printf 'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >req\n"
    "    http-probe send --connect 127.0.0.1:8443 --ca ca.pem --cert c.pem --key c.key req\n"
    "    http-probe hold-tcp --connect 127.0.0.1:8443 --count 400 \\\n"
    "        --source 127.0.0.2,127.0.0.3 --seconds 10 &\n"
    "    http-probe get --connect 127.0.0.1:8443 --ca ca.pem --cert c.pem --key c.key \\\n"
    "        --deadline-ms 1000 /v1/health\n";

enum option_bit {
    OPT_CONNECT = 1 << 0,
    OPT_CA = 1 << 1,
    OPT_CERT = 1 << 2,
    OPT_KEY = 1 << 3,
    OPT_SOURCE = 1 << 4,
    OPT_WAIT = 1 << 5,
    OPT_DEADLINE = 1 << 6,
    OPT_COUNT = 1 << 7,
    OPT_SECONDS = 1 << 8,
    OPT_INTERVAL = 1 << 9,
    OPT_RECONNECT = 1 << 10,
};

static const struct option long_options[] = {
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"ca", required_argument, NULL, OPT_CA},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"source", required_argument, NULL, OPT_SOURCE},
    {"wait-ms", required_argument, NULL, OPT_WAIT},
    {"deadline-ms", required_argument, NULL, OPT_DEADLINE},
    {"count", required_argument, NULL, OPT_COUNT},
    {"seconds", required_argument, NULL, OPT_SECONDS},
    {"interval-ms", required_argument, NULL, OPT_INTERVAL},
    {"reconnect-ms", required_argument, NULL, OPT_RECONNECT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct options {
    unsigned given;
    const char *connect, *ca, *cert, *key, *source, *operand;
    long wait_ms, deadline_ms, count, seconds, interval_ms, reconnect_ms;
};

/* What main() prepared for a subcommand. */
struct run {
    const struct options *opt;
    struct probe_target target;
};

struct command {
    const char *name;
    int (*run)(const struct run *run, struct berth_error *reterr);
    unsigned allowed, required;
    const char *operand; /* the name of the one operand, or NULL for none */
    bool one_source;     /* --source names one address, not a list */
};

/* ------------------------------------------------------------------------ */
/* send                                                                      */

static void print_status(int status, void *arg)
{
    (void)arg;
    if (status == PROBE_REPLY_UNFRAMED)
        printf("unframed\n");
    else
        printf("status %d\n", status);
    fflush(stdout);
}

static int read_request(const char *path, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return berth_error_set(reterr, -errno, "%s: %s", path, strerror(errno));
    return berth_read_fd(fd, FILE_MAX, ret, ret_len, reterr);
}

/* Read and print until the server closes, or @wait_ms pass with nothing new:
 * 1 closed, 0 open, or an error. */
static int read_replies(SSL *ssl, long wait_ms, struct berth_error *reterr)
{
    struct probe_replies replies;
    int64_t hard = berth_deadline_ns(CLOCK_MONOTONIC, SEND_READ_MAX_MS * NS_PER_MS);
    char buf[16384];
    ssize_t n;

    probe_replies_init(&replies);
    for (;;) {
        int64_t quiet = berth_deadline_ns(CLOCK_MONOTONIC, wait_ms * NS_PER_MS);
        n = probe_tls_read(ssl, buf, sizeof(buf), quiet < hard ? quiet : hard, reterr);
        if (n == 0)
            return 1;
        if (n == -ETIMEDOUT)
            return 0;
        if (n < 0)
            return (int)n;
        probe_replies_feed(&replies, buf, (size_t)n, print_status, NULL);
    }
}

static int send_run(const struct run *run, struct berth_error *reterr)
{
    struct berth_error note = BERTH_ERROR_INIT;
    _cleanup_(SSL_freep) SSL *ssl = NULL;
    _cleanup_close_ int fd = -1;
    _cleanup_free_ char *data = NULL;
    int64_t deadline = berth_deadline_ns(CLOCK_MONOTONIC, CONNECT_MS * NS_PER_MS);
    size_t len = 0;
    int r;

    if ((r = read_request(run->opt->operand, &data, &len, reterr)) < 0 ||
        (r = probe_target_connect(&run->target, 0, deadline, &fd, reterr)) < 0 ||
        (r = probe_tls_new(run->target.tls, fd, run->target.to.host, &ssl, reterr)) < 0)
        return r;
    r = probe_tls_handshake(ssl, deadline, &note);
    if (r == -ECONNRESET || r == -ETIMEDOUT) {
        fprintf(stderr, "http-probe: %s\n", note.message);
        printf(r == -ETIMEDOUT ? "handshake timeout\nopen\n" : "handshake failed\nclosed\n");
        return 0;
    }
    if (r < 0)
        return berth_error_set(reterr, r, "%s", note.message);
    r = probe_tls_write(ssl, data, len, deadline, &note);
    if (r == -EPIPE || r == -ETIMEDOUT)
        fprintf(stderr, "http-probe: writing FILE stopped: %s\n", note.message); /* its answer is still read */
    else if (r < 0)
        return berth_error_set(reterr, r, "%s", note.message);
    r = read_replies(ssl, run->opt->wait_ms, reterr);
    if (r < 0)
        return r;
    printf("%s\n", r ? "closed" : "open");
    return 0;
}

/* ------------------------------------------------------------------------ */
/* get                                                                       */

/* get's outcome when the server (not the probe) stopped it: its line, and exit 1. */
static int no_reply(int r, const struct berth_error *note)
{
    if (note->message[0])
        fprintf(stderr, "http-probe: %s\n", note->message);
    printf("%s\n", r == -ETIMEDOUT ? "deadline" : "closed");
    return EXIT_NO_REPLY;
}

static int get_run(const struct run *run, struct berth_error *reterr)
{
    struct berth_error note = BERTH_ERROR_INIT;
    _cleanup_(SSL_freep) SSL *ssl = NULL;
    _cleanup_close_ int fd = -1;
    _cleanup_free_ char *request = NULL;
    int64_t deadline = berth_deadline_ns(CLOCK_MONOTONIC, run->opt->deadline_ms * NS_PER_MS);
    const struct probe_addr *to = &run->target.to;
    struct probe_replies replies;
    char buf[16384];
    ssize_t n;
    int r;

    if (asprintf(&request, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", run->opt->operand,
                 run->opt->connect) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = probe_tcp_socket(to, probe_target_source(&run->target, 0), &fd, reterr)) < 0)
        return r;
    if ((r = probe_tcp_connect(fd, to, &note)) < 0)
        return no_reply(r, &note);
    r = probe_wait(fd, POLLOUT, deadline);
    if (r < 0)
        return berth_error_set(reterr, r, "poll: %s", strerror(-r));
    if (r == 0)
        return no_reply(-ETIMEDOUT, &note);
    if ((r = probe_tcp_connected(fd)) < 0) {
        berth_error_set(&note, r, "connecting to %s: %s", to->host, strerror(-r));
        return no_reply(r, &note);
    }
    if ((r = probe_tls_new(run->target.tls, fd, to->host, &ssl, reterr)) < 0)
        return r;
    r = probe_tls_handshake(ssl, deadline, &note);
    if (r == 0)
        r = probe_tls_write(ssl, request, strlen(request), deadline, &note);
    if (r == -ECONNRESET || r == -EPIPE || r == -ETIMEDOUT)
        return no_reply(r, &note);
    if (r < 0)
        return berth_error_set(reterr, r, "%s", note.message);
    probe_replies_init(&replies);
    while (replies.complete == 0) {
        n = probe_tls_read(ssl, buf, sizeof(buf), deadline, &note);
        if (n == 0 || n == -ETIMEDOUT)
            return no_reply(n == 0 ? -ECONNRESET : -ETIMEDOUT, &note);
        if (n < 0)
            return berth_error_set(reterr, (int)n, "%s", note.message);
        probe_replies_feed(&replies, buf, (size_t)n, NULL, NULL);
        if (replies.state == PROBE_REPLY_IGNORE)
            return berth_error_set(reterr, -EBADMSG, "the server's reply is not HTTP/1.1");
    }
    printf("status %d\n", replies.status);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* the holders                                                               */

/* Room for one descriptor per holder. */
static int fd_room(long count, struct berth_error *reterr)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)count + FD_SPARE;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return berth_error_set(reterr, -errno, "getrlimit: %s", strerror(errno));
    if (rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
        return berth_error_set(reterr, -EMFILE, "%ld connections need %llu descriptors; the limit is %llu", count,
                               (unsigned long long)need, (unsigned long long)rl.rlim_max);
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return berth_error_set(reterr, -errno, "setrlimit: %s", strerror(errno));
    return 0;
}

static int hold_tcp_run(const struct run *run, struct berth_error *reterr)
{
    int r = fd_room(run->opt->count, reterr);

    return r < 0 ? r
                 : probe_hold_tcp(&run->target, run->opt->count, run->opt->seconds, run->opt->reconnect_ms, stdout,
                                  reterr);
}

static int hold_slow_run(const struct run *run, struct berth_error *reterr)
{
    int r = fd_room(run->opt->count, reterr);

    return r < 0 ? r
                 : probe_hold_slow(&run->target, run->opt->count, run->opt->seconds, run->opt->interval_ms, stdout,
                                   reterr);
}

static int trickle_run(const struct run *run, struct berth_error *reterr)
{
    return probe_trickle_handshake(&run->target, run->opt->seconds, run->opt->interval_ms, stdout, reterr);
}

/* ------------------------------------------------------------------------ */

#define TLS_OPTS (OPT_CONNECT | OPT_CA | OPT_CERT | OPT_KEY | OPT_SOURCE)

static const struct command commands[] = {
    {"send", send_run, TLS_OPTS | OPT_WAIT, OPT_CONNECT | OPT_CA, "FILE", true},
    {"get", get_run, TLS_OPTS | OPT_DEADLINE, OPT_CONNECT | OPT_CA | OPT_CERT | OPT_KEY | OPT_DEADLINE, "PATH", true},
    {"hold-tcp", hold_tcp_run, OPT_CONNECT | OPT_SOURCE | OPT_COUNT | OPT_SECONDS | OPT_RECONNECT,
     OPT_CONNECT | OPT_SOURCE | OPT_COUNT | OPT_SECONDS, NULL, false},
    {"hold-slow", hold_slow_run, TLS_OPTS | OPT_COUNT | OPT_SECONDS | OPT_INTERVAL,
     OPT_CONNECT | OPT_CA | OPT_CERT | OPT_KEY | OPT_COUNT | OPT_SECONDS, NULL, false},
    {"trickle-handshake", trickle_run, TLS_OPTS | OPT_SECONDS | OPT_INTERVAL, OPT_CONNECT | OPT_CA | OPT_SECONDS, NULL,
     true},
};

BERTH_PRINTF(1, 2) static int usage(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "http-probe: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'http-probe --help'.\n");
    return EXIT_PROBE_FAILED;
}

/* A decimal number in @lo..@hi. */
static bool number(const char *text, long lo, long hi, long *ret)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return false;
    *ret = v;
    return true;
}

static const char *option_name(int bit)
{
    for (const struct option *o = long_options; o->name; o++)
        if (o->val == bit)
            return o->name;
    return "?";
}

/* Parse the options after the subcommand into @o; 0, 1 for --help, or an exit status. */
static int parse_options(int argc, char **argv, const struct command *cmd, struct options *o)
{
    static const struct {
        int bit;
        long lo, hi;
        size_t offset;
    } numbers[] = {
        {OPT_WAIT, 0, 3600000, offsetof(struct options, wait_ms)},
        {OPT_DEADLINE, 1, 3600000, offsetof(struct options, deadline_ms)},
        {OPT_COUNT, 1, 10000, offsetof(struct options, count)},
        {OPT_SECONDS, 1, 3600, offsetof(struct options, seconds)},
        {OPT_INTERVAL, 1, 3600000, offsetof(struct options, interval_ms)},
        {OPT_RECONNECT, 0, 3600000, offsetof(struct options, reconnect_ms)},
    };
    int c;

    while ((c = getopt_long(argc, argv, "+h", long_options, NULL)) != -1) {
        if (c == 'h')
            return 1;
        if (c == '?')
            return usage("bad option for %s", cmd->name);
        if (!(cmd->allowed & (unsigned)c))
            return usage("--%s is not an option of this subcommand", option_name(c));
        o->given |= (unsigned)c;
        switch (c) {
        case OPT_CONNECT: o->connect = optarg; break;
        case OPT_CA: o->ca = optarg; break;
        case OPT_CERT: o->cert = optarg; break;
        case OPT_KEY: o->key = optarg; break;
        case OPT_SOURCE: o->source = optarg; break;
        default:
            for (size_t i = 0; i < ELEMENTSOF(numbers); i++)
                if (numbers[i].bit == c &&
                    !number(optarg, numbers[i].lo, numbers[i].hi, (long *)((char *)o + numbers[i].offset)))
                    return usage("--%s: not a number in range", option_name(c));
        }
    }
    for (unsigned bit = 1; bit <= OPT_RECONNECT; bit <<= 1)
        if ((cmd->required & bit) && !(o->given & bit))
            return usage("--%s is required", option_name((int)bit));
    if ((o->given & OPT_CERT) != ((o->given & OPT_KEY) ? OPT_CERT : 0))
        return usage("--cert and --key go together");
    if (cmd->operand && optind + 1 != argc)
        return usage("one %s operand is needed", cmd->operand);
    if (!cmd->operand && optind != argc)
        return usage("unexpected operand \"%s\"", argv[optind]);
    o->operand = cmd->operand ? argv[optind] : NULL;
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt = {.wait_ms = 2000, .interval_ms = 1000, .reconnect_ms = 100};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ struct probe_addr *sources = NULL;
    _cleanup_(SSL_CTX_freep) SSL_CTX *tls = NULL;
    const struct command *cmd = NULL;
    struct run run = {.opt = &opt};
    int r;

    if (argc < 2)
        return usage("a subcommand is needed");
    if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
        fputs(manual, stdout);
        return 0;
    }
    for (size_t i = 0; i < ELEMENTSOF(commands); i++)
        if (streq(argv[1], commands[i].name))
            cmd = &commands[i];
    if (!cmd)
        return usage("unknown subcommand \"%s\"", argv[1]);
    r = parse_options(argc - 1, argv + 1, cmd, &opt);
    if (r == 1) {
        fputs(manual, stdout);
        return 0;
    }
    if (r)
        return r;
    /* A server closing the connection is a result, never a signal. */
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        return usage("cannot ignore SIGPIPE");
    r = probe_addr_parse(opt.connect, true, &run.target.to, &err);
    if (r == 0 && opt.source)
        r = probe_addr_list_parse(opt.source, &sources, &run.target.n_sources, &err);
    if (r == 0 && run.target.n_sources > 1 && cmd->one_source)
        r = berth_error_set(&err, -EINVAL, "%s binds one --source address", cmd->name);
    run.target.sources = sources;
    if (r == 0 && opt.ca) {
        r = probe_tls_context(opt.ca, opt.cert, opt.key, &tls, &err);
        run.target.tls = tls;
    }
    if (r == 0)
        r = cmd->run(&run, &err);
    if (r < 0) {
        fprintf(stderr, "http-probe %s: %s\n", cmd->name, err.message);
        return EXIT_PROBE_FAILED;
    }
    return r;
}
