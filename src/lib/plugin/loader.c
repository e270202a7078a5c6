/* SPDX-License-Identifier: MIT */
/* loader.c -- the plugin loader; see loader.h for the rules. */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <sys/sysmacros.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "fsutil.h"
#include "macro.h"
#include "names.h"
#include "loader.h"

struct berth_plugin_handle {
    void *dl;
    const struct berth_plugin *desc;
    struct berth_plugin_info info;
    void *state;
    bool initialized;
    union {
        struct berth_runtime_ops_v1 runtime;
        struct berth_image_source_ops_v1 image_source;
        struct berth_evidence_store_ops_v1 evidence_store;
        struct berth_containment_ops_v1 containment;
    } ops;
};

/* Per kind: name, v1.0 ops table size, and the required members (the ops
 * of 1.0; those appended later are optional, NULL for an older plugin). */
struct required_op {
    const char *name;
    size_t offset;
};

#define OP(type, member)                                                                                               \
    {                                                                                                                  \
#member, offsetof(struct type, member)                                                                         \
    }

static const struct required_op runtime_required[] = {
    OP(berth_runtime_ops_v1, capabilities), OP(berth_runtime_ops_v1, start), OP(berth_runtime_ops_v1, inspect),
    OP(berth_runtime_ops_v1, cancel),       OP(berth_runtime_ops_v1, reap),
};
static const struct required_op image_source_required[] = {
    OP(berth_image_source_ops_v1, resolve),
    OP(berth_image_source_ops_v1, stage),
};
static const struct required_op evidence_store_required[] = {
    OP(berth_evidence_store_ops_v1, put),       OP(berth_evidence_store_ops_v1, get),
    OP(berth_evidence_store_ops_v1, stat),      OP(berth_evidence_store_ops_v1, remove),
    OP(berth_evidence_store_ops_v1, tombstone),
};
static const struct required_op containment_required[] = {
    OP(berth_containment_ops_v1, capabilities), OP(berth_containment_ops_v1, create),
    OP(berth_containment_ops_v1, attach),       OP(berth_containment_ops_v1, kill),
    OP(berth_containment_ops_v1, status),       OP(berth_containment_ops_v1, destroy),
};

struct kind_desc {
    uint32_t kind;
    const char *name;
    size_t v1_size;   /* smallest ops table accepted: the one of ABI 1.0 */
    size_t core_size; /* the table this core knows */
    const struct required_op *required;
    size_t n_required;
};

static const struct kind_desc kinds[] = {
    /* open_output and forget (ABI 1.1) are optional: a 1.0 table is enough. */
    {BERTH_PLUGIN_RUNTIME, "runtime", BERTH_RUNTIME_OPS_V1_0_SIZE, sizeof(struct berth_runtime_ops_v1),
     runtime_required, ELEMENTSOF(runtime_required)},
    {BERTH_PLUGIN_IMAGE_SOURCE, "image-source", BERTH_IMAGE_SOURCE_OPS_V1_0_SIZE,
     sizeof(struct berth_image_source_ops_v1), image_source_required, ELEMENTSOF(image_source_required)},
    {BERTH_PLUGIN_EVIDENCE_STORE, "evidence-store", BERTH_EVIDENCE_STORE_OPS_V1_0_SIZE,
     sizeof(struct berth_evidence_store_ops_v1), evidence_store_required, ELEMENTSOF(evidence_store_required)},
    /* units (ABI 1.3) is optional. */
    {BERTH_PLUGIN_CONTAINMENT, "containment", BERTH_CONTAINMENT_OPS_V1_0_SIZE,
     sizeof(struct berth_containment_ops_v1), containment_required, ELEMENTSOF(containment_required)},
};

static const struct kind_desc *kind_lookup(uint32_t kind)
{
    size_t i;

    for (i = 0; i < ELEMENTSOF(kinds); i++)
        if (kinds[i].kind == kind)
            return &kinds[i];
    return NULL;
}

const char *berth_plugin_kind_name(uint32_t kind)
{
    const struct kind_desc *k = kind_lookup(kind);
    return k ? k->name : NULL;
}

/* Versions: 1..63 printable ASCII bytes without spaces. */
static bool version_ok(const char *s)
{
    size_t i;

    if (!s || !s[0])
        return false;
    for (i = 0; s[i]; i++)
        if (i >= 63 || s[i] <= ' ' || s[i] > '~')
            return false;
    return true;
}

/* Whether the mapping that holds @addr is backed by the file (@dev, @ino):
 * 1 yes, 0 no, or a negative errno when /proc/self/maps cannot be read. */
static int address_in_file(const void *addr, dev_t dev, ino_t ino)
{
    _cleanup_fclose_ FILE *f = NULL;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;

    f = fopen("/proc/self/maps", "re");
    if (!f)
        return -errno;
    while (getline(&line, &cap, f) > 0) {
        unsigned long lo, hi, inode;
        unsigned maj, min;

        if (sscanf(line, "%lx-%lx %*s %*s %x:%x %lu", &lo, &hi, &maj, &min, &inode) != 5)
            continue;
        if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi)
            return makedev(maj, min) == dev && (ino_t)inode == ino;
    }
    return 0;
}

/* Rule 5.  dlopen() the descriptor @fd through /proc/self/fd/N, so that the
 * inode that passed the checks is the one mapped, and prove it afterwards:
 * glibc reuses an already-loaded object whose *name* matches, and an object
 * that cannot be unloaded (-z nodelete, C++ unique symbols) keeps the name
 * /proc/self/fd/N after its descriptor number was reused.  When the object
 * returned is not backed by @st's inode, try again under a fresh number. */
static int dlopen_checked(int fd, const struct stat *st, void **ret, struct berth_error *reterr)
{
    int dups[8], ndups = 0, cur = fd, i, r = 0;
    char procpath[64];
    void *dl = NULL;

    for (;;) {
        struct link_map *lm = NULL;
        const char *e;
        size_t plen;

        snprintf(procpath, sizeof(procpath), "/proc/self/fd/%d", cur);
        (void)dlerror();
        dl = dlopen(procpath, RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
            e = dlerror();
            plen = strlen(procpath);
            if (!e)
                e = "unknown error";
            else if (strncmp(e, procpath, plen) == 0 && e[plen] == ':')
                e += plen + 1 + (e[plen + 1] == ' '); /* the caller knows the real path */
            r = berth_error_set(reterr, -ELIBBAD, "dlopen failed: %s", e);
            break;
        }
        if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
            r = berth_error_set(reterr, -ELIBBAD, "dlinfo failed");
            break;
        }
        r = address_in_file(lm->l_ld, st->st_dev, st->st_ino);
        if (r > 0) {
            r = 0;
            break;
        }
        if (r < 0) {
            r = berth_error_set(reterr, r, "cannot read /proc/self/maps: %s", strerror(-r));
            break;
        }
        /* Another object holds the name: drop our reference, use a new number. */
        dlclose(dl);
        dl = NULL;
        if (ndups == (int)ELEMENTSOF(dups)) {
            r = berth_error_set(reterr, -ELIBBAD, "other loaded objects keep taking its /proc/self/fd name");
            break;
        }
        cur = fcntl(fd, F_DUPFD_CLOEXEC, cur + 1);
        if (cur < 0) {
            r = berth_error_set(reterr, -errno, "dup: %s", strerror(errno));
            break;
        }
        dups[ndups++] = cur;
    }
    for (i = 0; i < ndups; i++)
        close(dups[i]);
    if (r < 0) {
        if (dl)
            dlclose(dl);
        return r;
    }
    *ret = dl;
    return 0;
}

/* Whether @sym is a function (or an ifunc), not data someone named like one. */
static bool symbol_is_function(void *sym)
{
    const ElfW(Sym) *esym = NULL; /* ELF32_ST_TYPE and ELF64_ST_TYPE are the same macro */
    Dl_info info;

    if (dladdr1(sym, &info, (void **)&esym, RTLD_DL_SYMENT) == 0 || !esym)
        return false;
    return ELF64_ST_TYPE(esym->st_info) == STT_FUNC || ELF64_ST_TYPE(esym->st_info) == STT_GNU_IFUNC;
}

static void handle_free(struct berth_plugin_handle *h)
{
    if (!h)
        return;
    if (h->dl)
        dlclose(h->dl);
    free(h);
}

static void copy_str(char *dst, size_t dstsz, const char *src)
{
    snprintf(dst, dstsz, "%s", src ? src : "");
}

static int load_object(const struct berth_plugin_load_options *o, struct berth_plugin_handle *h,
                       struct berth_error *reterr)
{
    _cleanup_close_ int dfd = -1, fd = -1;
    const struct berth_plugin *(*entry)(void);
    struct stat st;
    void *sym;
    int r;

    /* Rule 2: the directory, and every directory above it. */
    dfd = berth_open_trusted(o->dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dfd < 0)
        return dfd;
    r = berth_trusted_dir_check(dfd, o->dir, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "plugin directory");
        return r;
    }

    /* Rule 3: the file, opened beneath the checked directory (never through
     * a symlink; O_NONBLOCK: a FIFO must not block the open), then checked
     * through its descriptor. */
    fd = berth_open_beneath(dfd, o->file, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    if (fd < 0)
        return fd;
    r = berth_trusted_file_check(fd, h->info.path, o->max_file_size ? o->max_file_size : BERTH_PLUGIN_MAX_FILE_SIZE,
                                 &st, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "plugin file");
        return r;
    }

    /* Rule 4: digest and optional pin. */
    r = berth_digest_fd(fd, h->info.sha256);
    if (r < 0)
        return berth_error_set(reterr, r, "hashing failed: %s", strerror(-r));
    if (o->sha256 && !streq(o->sha256, h->info.sha256))
        return berth_error_set(reterr, -EBADMSG, "digest is %s but the configuration pins %s", h->info.sha256,
                               o->sha256);

    /* Rule 5: load the inode that was checked, not whatever the name now is. */
    r = dlopen_checked(fd, &st, &h->dl, reterr);
    if (r < 0)
        return r;

    /* Rule 6: the entry point. */
    sym = dlsym(h->dl, BERTH_PLUGIN_ENTRY_SYMBOL);
    if (!sym)
        return berth_error_set(reterr, -ENOEXEC, "does not export %s()", BERTH_PLUGIN_ENTRY_SYMBOL);
    if (!symbol_is_function(sym))
        return berth_error_set(reterr, -ENOEXEC, "%s is not a function", BERTH_PLUGIN_ENTRY_SYMBOL);
    entry = (const struct berth_plugin *(*)(void))sym;
    h->desc = entry();
    if (!h->desc)
        return berth_error_set(reterr, -ENOEXEC, "%s() returned no descriptor", BERTH_PLUGIN_ENTRY_SYMBOL);
    return 0;
}

static int check_descriptor(const struct berth_plugin_load_options *o, struct berth_plugin_handle *h,
                            struct berth_error *reterr)
{
    const struct berth_plugin *d = h->desc;
    uint32_t core = o->host_abi ? o->host_abi : BERTH_PLUGIN_ABI_VERSION;
    const struct kind_desc *k;
    size_t i;

    /* Rule 7: only the first two fields are read before the major matches.
     * A newer minor only appends, so its identity can still be shown. */
    h->info.abi_version = d->abi_version;
    if (BERTH_PLUGIN_ABI_MAJOR_OF(d->abi_version) == BERTH_PLUGIN_ABI_MAJOR_OF(core) &&
        d->struct_size >= BERTH_PLUGIN_V1_STRUCT_SIZE && berth_plugin_name_valid(d->name) && version_ok(d->version) &&
        kind_lookup(d->kind)) {
        copy_str(h->info.name, sizeof(h->info.name), d->name);
        copy_str(h->info.version, sizeof(h->info.version), d->version);
        h->info.kind = d->kind;
    }
    if (BERTH_PLUGIN_ABI_MAJOR_OF(d->abi_version) != BERTH_PLUGIN_ABI_MAJOR_OF(core) ||
        BERTH_PLUGIN_ABI_MINOR_OF(d->abi_version) > BERTH_PLUGIN_ABI_MINOR_OF(core))
        return berth_error_set(reterr, -EPROTO, "built for plugin ABI %u.%u; this berth provides ABI %u.%u",
                               BERTH_PLUGIN_ABI_MAJOR_OF(d->abi_version), BERTH_PLUGIN_ABI_MINOR_OF(d->abi_version),
                               BERTH_PLUGIN_ABI_MAJOR_OF(core), BERTH_PLUGIN_ABI_MINOR_OF(core));

    /* Rule 8: sizes and identity. */
    if (d->struct_size < BERTH_PLUGIN_V1_STRUCT_SIZE)
        return berth_error_set(reterr, -EPROTO, "descriptor is %u bytes, less than the %zu of ABI 1.0", d->struct_size,
                               (size_t)BERTH_PLUGIN_V1_STRUCT_SIZE);
    if (!berth_plugin_name_valid(d->name))
        return berth_error_set(reterr, -EPROTO,
                               "plugin name is missing or invalid (1 to 63 of [a-z0-9-], starting with a letter or "
                               "digit)");
    copy_str(h->info.name, sizeof(h->info.name), d->name);
    if (!version_ok(d->version))
        return berth_error_set(reterr, -EPROTO, "plugin version is missing or not 1-63 printable characters");
    copy_str(h->info.version, sizeof(h->info.version), d->version);
    k = kind_lookup(d->kind);
    if (!k)
        return berth_error_set(reterr, -EPROTO, "unknown plugin kind %u", d->kind);
    h->info.kind = d->kind;
    if (!d->ops || d->ops_size < k->v1_size)
        return berth_error_set(reterr, -EPROTO, "%s ops table is %zu bytes, less than the %zu of ABI 1.0", k->name,
                               d->ops ? d->ops_size : (size_t)0, k->v1_size);

    /* One name, one file: "<name>.so", so that a configuration naming a
     * plugin can only mean one object. */
    if (strlen(o->file) != strlen(d->name) + 3 || strncmp(o->file, d->name, strlen(d->name)) != 0)
        return berth_error_set(reterr, -EPROTO, "plugin \"%s\" must be installed as %s.so", d->name, d->name);

    /* Rule 9. */
    if (o->kind && o->kind != d->kind)
        return berth_error_set(reterr, -EPROTOTYPE, "this is a %s plugin, expected %s", k->name,
                               berth_plugin_kind_name(o->kind) ? berth_plugin_kind_name(o->kind) : "?");

    /* Copy into our table, zeroed by calloc(): an older plugin's missing
     * trailing ops read NULL, a newer plugin's extra ones are not seen. */
    memcpy(&h->ops, d->ops, d->ops_size < k->core_size ? d->ops_size : k->core_size);

    /* Rule 10. */
    for (i = 0; i < k->n_required; i++) {
        void *fn;
        memcpy(&fn, (const char *)&h->ops + k->required[i].offset, sizeof(fn));
        if (!fn)
            return berth_error_set(reterr, -ENOSYS, "required %s operation %s() is NULL", k->name, k->required[i].name);
    }

    /* Rule 11. */
    if (o->min_abi && BERTH_PLUGIN_ABI_MINOR_OF(d->abi_version) < BERTH_PLUGIN_ABI_MINOR_OF(o->min_abi))
        return berth_error_set(reterr, -EPROTO, "built for plugin ABI %u.%u; this use of it needs ABI %u.%u or later",
                               BERTH_PLUGIN_ABI_MAJOR_OF(d->abi_version), BERTH_PLUGIN_ABI_MINOR_OF(d->abi_version),
                               BERTH_PLUGIN_ABI_MAJOR_OF(o->min_abi), BERTH_PLUGIN_ABI_MINOR_OF(o->min_abi));
    return 0;
}

int berth_plugin_load(const struct berth_plugin_load_options *o, struct berth_plugin_handle **ret,
                      struct berth_plugin_info *info, struct berth_error *reterr)
{
    struct berth_plugin_handle *h;
    int r;

    if (info)
        memset(info, 0, sizeof(*info));
    if (!o || !ret || !o->dir || !o->file)
        return berth_error_set(reterr, -EINVAL, "invalid argument");

    h = calloc(1, sizeof(*h));
    if (!h)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    /* Rule 1. */
    if (snprintf(h->info.path, sizeof(h->info.path), "%s%s%s", o->dir,
                 o->dir[0] && o->dir[strlen(o->dir) - 1] == '/' ? "" : "/", o->file) >= (int)sizeof(h->info.path))
        r = berth_error_set(reterr, -ENAMETOOLONG, "%s/%s: path too long", o->dir, o->file);
    else if (o->dir[0] != '/')
        r = berth_error_set(reterr, -EINVAL, "plugin directory %s is not an absolute path", o->dir);
    else if (!berth_name_valid(o->file))
        r = berth_error_set(reterr, -EINVAL, "plugin file name \"%s\" is not a single path component", o->file);
    else if (!(o->flags & BERTH_PLUGIN_LOAD_PEEK) && !o->host)
        r = berth_error_set(reterr, -EINVAL, "a host table is required to initialise a plugin");
    else if (o->flags & ~BERTH_PLUGIN_LOAD_PEEK)
        r = berth_error_set(reterr, -EINVAL, "unknown loader flags");
    else
        r = load_object(o, h, reterr);
    if (r >= 0)
        r = check_descriptor(o, h, reterr);

    if (r >= 0 && !(o->flags & BERTH_PLUGIN_LOAD_PEEK) && h->desc->init) {
        struct berth_error perr = BERTH_ERROR_INIT;
        const char *cfg = o->config ? o->config : "{}";
        size_t cfglen = o->config ? o->config_len : 2;

        r = h->desc->init(o->host, cfg, cfglen, &h->state, &perr);
        if (r < 0)
            r = berth_error_set(reterr, r, "init failed: %s", perr.message[0] ? perr.message : strerror(-r));
        else
            h->initialized = true;
    } else if (r >= 0 && !(o->flags & BERTH_PLUGIN_LOAD_PEEK)) {
        h->initialized = true; /* no init: the state is NULL */
    }

    if (info)
        *info = h->info;
    if (r < 0) {
        handle_free(h);
        return r;
    }
    *ret = h;
    return 0;
}

void berth_plugin_unload(struct berth_plugin_handle *h)
{
    if (!h)
        return;
    if (h->initialized && h->desc->fini)
        h->desc->fini(h->state);
    handle_free(h);
}

const struct berth_plugin_info *berth_plugin_get_info(const struct berth_plugin_handle *h)
{
    return h ? &h->info : NULL;
}

void *berth_plugin_state(const struct berth_plugin_handle *h)
{
    return h ? h->state : NULL;
}

const struct berth_runtime_ops_v1 *berth_plugin_runtime_ops(const struct berth_plugin_handle *h)
{
    return h && h->info.kind == BERTH_PLUGIN_RUNTIME ? &h->ops.runtime : NULL;
}

const struct berth_image_source_ops_v1 *berth_plugin_image_source_ops(const struct berth_plugin_handle *h)
{
    return h && h->info.kind == BERTH_PLUGIN_IMAGE_SOURCE ? &h->ops.image_source : NULL;
}

const struct berth_evidence_store_ops_v1 *berth_plugin_evidence_store_ops(const struct berth_plugin_handle *h)
{
    return h && h->info.kind == BERTH_PLUGIN_EVIDENCE_STORE ? &h->ops.evidence_store : NULL;
}

const struct berth_containment_ops_v1 *berth_plugin_containment_ops(const struct berth_plugin_handle *h)
{
    return h && h->info.kind == BERTH_PLUGIN_CONTAINMENT ? &h->ops.containment : NULL;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int berth_plugin_list_dir(const char *dir, char ***ret_names, size_t *ret_count, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = -1;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    struct dirent *de;
    DIR *d;
    int r = 0;

    if (!dir || !ret_names || !ret_count)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    dfd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dfd < 0)
        return dfd;
    d = fdopendir(dfd);
    if (!d)
        return berth_error_set(reterr, -errno, "%s: %s", dir, strerror(errno));
    TAKE_FD(dfd); /* owned by d now */

    errno = 0;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);

        if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0 || de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap ? cap * 2 : 16) * sizeof(*names));
            if (!nn) {
                r = -ENOMEM;
                break;
            }
            names = nn;
            cap = cap ? cap * 2 : 16;
        }
        names[n] = strdup(de->d_name);
        if (!names[n]) {
            r = -ENOMEM;
            break;
        }
        n++;
        errno = 0;
    }
    if (r == 0 && errno != 0)
        r = -errno;
    closedir(d);
    if (r < 0) {
        for (i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return berth_error_set(reterr, r, "%s: listing failed: %s", dir, strerror(-r));
    }
    if (n > 0)
        qsort(names, n, sizeof(*names), name_cmp);
    *ret_names = names;
    *ret_count = n;
    return 0;
}
