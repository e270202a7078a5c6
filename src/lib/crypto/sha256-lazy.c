/* SPDX-License-Identifier: MIT */
/*
 * sha256-lazy.c -- SHA-256 (FIPS 180-4) for berth-oci-shim, a process started
 * for every job (digest.h, sha256-impl.h).  Linking OpenSSL costs every
 * process about 1 ms of relocations and its first digest another 1.75 ms
 * of initialisation, while most shims hash only a few small documents:
 *
 *   - berth_sha256(), one buffer in memory (receipts, canonical JSON), is
 *     libsodium's crypto_hash_sha256(): no OpenSSL at all;
 *   - a stream (berth_sha256_new(): files, such as a job's declared
 *     outputs, up to gigabytes, or a runtime binary to check against its
 *     pin) is OpenSSL's EVP SHA-256, which uses the CPU's SHA extensions
 *     (7 times libsodium's speed here): libcrypto is loaded with dlopen(3)
 *     by the first stream and never unloaded (RTLD_NODELETE: OpenSSL keeps
 *     exit handlers), so a later stream finds it loaded.
 *
 * Each context holds the functions it uses: no process-wide state.  The
 * digests are those of sha256-openssl.c (test-digest-lazy checks the FIPS
 * 180-4 examples and when libcrypto is loaded).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <sodium.h>

#include "sha256-impl.h"

#define STR_(x) #x
#define STR(x) STR_(x)
/* The soname of the libcrypto whose headers this is built with (OpenSSL 3:
 * libcrypto.so.3). */
#define LIBCRYPTO_SONAME "libcrypto.so." STR(OPENSSL_VERSION_MAJOR)

struct berth_sha256 {
    EVP_MD_CTX *md;
    EVP_MD_CTX *(*ctx_new)(void);
    void (*ctx_free)(EVP_MD_CTX *ctx);
    const EVP_MD *(*sha256)(void);
    int (*init)(EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *impl);
    int (*update)(EVP_MD_CTX *ctx, const void *d, size_t cnt);
    int (*final)(EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s);
};

int sha256_impl_oneshot(const void *data, size_t len, uint8_t out[32])
{
    if (sodium_init() < 0)
        return -EIO;
    return crypto_hash_sha256(out, data, len) == 0 ? 0 : -EIO;
}

/* Look up @name in @dl into *@fn: true when found. */
static bool lookup(void *dl, const char *name, void *fn)
{
    void *sym = dlsym(dl, name);

    if (!sym)
        return false;
    *(void **)fn = sym;
    return true;
}

int sha256_impl_new(struct berth_sha256 **ret)
{
    struct berth_sha256 *c;
    void *dl = dlopen(LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

    if (!dl)
        return -EIO;
    c = calloc(1, sizeof(*c));
    if (!c) {
        dlclose(dl);
        return -ENOMEM;
    }
    if (!lookup(dl, "EVP_MD_CTX_new", &c->ctx_new) || !lookup(dl, "EVP_MD_CTX_free", &c->ctx_free) ||
        !lookup(dl, "EVP_sha256", &c->sha256) || !lookup(dl, "EVP_DigestInit_ex", &c->init) ||
        !lookup(dl, "EVP_DigestUpdate", &c->update) || !lookup(dl, "EVP_DigestFinal_ex", &c->final)) {
        free(c);
        dlclose(dl);
        return -EIO;
    }
    dlclose(dl); /* RTLD_NODELETE: the functions stay */
    if (!(c->md = c->ctx_new())) {
        free(c);
        return -ENOMEM;
    }
    if (c->init(c->md, c->sha256(), NULL) != 1) {
        sha256_impl_free(c);
        return -EIO;
    }
    *ret = c;
    return 0;
}

int sha256_impl_update(struct berth_sha256 *ctx, const void *data, size_t len)
{
    return ctx->update(ctx->md, data, len) == 1 ? 0 : -EIO;
}

int sha256_impl_final(struct berth_sha256 *ctx, uint8_t out[32])
{
    unsigned int n = 0;

    return ctx->final(ctx->md, out, &n) == 1 && n == 32 ? 0 : -EIO;
}

void sha256_impl_free(struct berth_sha256 *ctx)
{
    ctx->ctx_free(ctx->md);
    free(ctx);
}
