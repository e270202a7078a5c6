/* SPDX-License-Identifier: MIT */
/*
 * devinit.h -- what the parts of "berthctl dev-init" share (private to
 * src/berthctl/devinit/).
 *
 * dev-init runs in steps, one file each:
 *
 *   options.c   the command line and --help; the --backend configuration
 *               files (runtime.c pins each --runtime binary)
 *   target.c    DIR, opened with no symlink on its path
 *   plan.c      every file to write (place, mode), and the refusal of a
 *               DIR that already holds any of them
 *   generate.c  the contents: keys, certificates (certs.c), berthd.json
 *               (the library's writer), client.json, the policy, the pool;
 *               then the check of each with the parser that will read it
 *   write.c     creating the directories and publishing every file
 *               atomically, and removing it all again on failure
 *   devinit.c   the verb: the steps in order, and what it prints
 *
 * Functions that return "an exit code" print their own message; the others
 * return 0 or a negative errno with @reterr set.  Nothing is shared between
 * threads.
 */
#ifndef BERTHCTL_DEVINIT_H
#define BERTHCTL_DEVINIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include <berth/error.h>

#include "berthctl.h"
#include "certs.h"

#define VERB "dev-init"

#define DEFAULT_BACKEND "runsc"        /**< the pool's backend without --backend or --runtime */
#define POOL_NAME "default"            /**< the one pool, pools/default.json */
#define IMAGE_PLUGIN "image-oci-local" /**< the image source, when the plugin directory has it */
#define EVIDENCE_PLUGIN "evidence-sqlite" /**< the evidence store, when the plugin directory has it */
#define EVIDENCE_SUBDIR "evidence"        /**< its directory, below state/ */
#define RUNTIME_PLUGIN "runtime-oci"   /**< what serves every --runtime backend */

/**
 * struct backend_opt - one --backend NAME=PLUGIN[,CONFIG_FILE] or
 * --runtime NAME[,PATH].
 * @runtime_path: --runtime: the OCI runtime binary; NULL for --backend.
 * @config: the parsed CONFIG_FILE object (or for --runtime the generated
 *          settings), NULL until devinit_load_backend_configs() / without
 *          one.
 */
struct backend_opt {
    char *name;
    char *plugin;
    char *config_file;
    char *runtime_path;
    json_t *config;
};

/**
 * struct devinit_opts - the parsed command line.
 * @dir:        DIR made absolute, not yet normalised; NULL after --help.
 * @plugin_dir: --plugin-dir made absolute, or NULL.
 * @principals, @images: point into argv (or at the default principal).
 * @backends:   --backend and --runtime, in the order given.
 */
struct devinit_opts {
    char *dir;
    char *plugin_dir;
    const char *broker_name;
    unsigned port;
    const char **principals;
    size_t n_principals;
    const char **images;
    size_t n_images;
    struct backend_opt *backends;
    size_t n_backends;
    bool no_image_source;
    bool no_evidence_store;
};

/**
 * devinit_parse_args() - parse the command line into @o, defaults filled in
 * (--help prints the help and leaves o->dir NULL).
 * Returns an exit code; usage errors are printed.
 */
int devinit_parse_args(struct bctl_globals *g, int argc, char **argv, struct devinit_opts *o);

/** devinit_load_backend_configs() - read every CONFIG_FILE, pin every --runtime.  Returns an exit code. */
int devinit_load_backend_configs(struct devinit_opts *o);

/** devinit_opts_done() - release what the two functions above allocated. */
void devinit_opts_done(struct devinit_opts *o);

/** Subdirectories of DIR, all created 0700; SUB_TOP is DIR itself. */
enum { SUB_TOP = -1, SUB_TLS, SUB_KEYS, SUB_POOLS, SUB_STATE, SUB_IMAGES, SUB_RUNTIME, SUB_COUNT };
/** Their names, indexed by the enum. */
extern const char *const devinit_subdir_names[SUB_COUNT];

/**
 * struct target - DIR, opened without following symlinks.
 * @dir:       the normalised absolute path (written into the files).
 * @base:      its last component ("" for "/"), for the CA's name.
 * @raw:       the absolute path as given, trailing slashes removed (opened).
 * @parent_fd: DIR's parent, when DIR must be created; else -1.
 * @new_name:  the name to create in @parent_fd (points into @raw).
 * @dir_fd:    DIR (O_RDONLY | O_DIRECTORY), -1 until it exists.
 * @sub_fd:    the subdirectories, -1 until created.
 */
struct target {
    char *dir;
    const char *base;
    char *raw;
    int parent_fd;
    const char *new_name;
    int dir_fd;
    int sub_fd[SUB_COUNT];
};

/**
 * devinit_target_open() - open DIR (or, when it does not exist, its
 * parent), with no symlink on the way, and check an existing DIR: owned by
 * the caller, not writable by group or others.  Returns an exit code.
 */
int devinit_target_open(const char *abs_dir, struct target *t);

/** devinit_target_done() - close and release everything in @t. */
void devinit_target_done(struct target *t);

/** devinit_path_join() - @dir "/" @rel, malloc'd ("/" @rel for the root); NULL when out of memory. */
char *devinit_path_join(const char *dir, const char *rel);

enum file_kind {
    FILE_DATA,        /**< @data, published with berth_publish_at() */
    FILE_RECEIPT_KEY, /**< the receipt key, berth_signing_key_save() */
    FILE_AUDIT_KEY,   /**< a new audit key, berth_audit_key_create() */
};

/**
 * struct plan_file - one file of the installation.
 * @sub:     its directory (SUB_TOP for DIR itself).
 * @name:    its name in that directory.
 * @rel:     its path relative to DIR ("tls/ca.pem").
 * @path:    its absolute path.
 * @secret:  @data holds key material: wiped when released.
 * @written: published by this run (removed again on failure).
 */
struct plan_file {
    int sub;
    char *name;
    char *rel;
    char *path;
    enum file_kind kind;
    mode_t mode;
    bool secret;
    char *data;
    size_t len;
    bool written;
};

/** Fixed files, in the order they are checked (and written backwards). */
enum {
    F_BERTHD,
    F_CLIENT,
    F_POLICY,
    F_CA_PEM,
    F_CA_KEY,
    F_SERVER_PEM,
    F_SERVER_KEY,
    F_RECEIPT_KEY,
    F_RECEIPT_PUB,
    F_AUDIT_KEY,
    F_POOL,
    F_FIXED_COUNT, /**< then tls/client-NAME.pem and .key for each principal */
};
#define F_CLIENT_PEM(i) (F_FIXED_COUNT + 2 * (i))
#define F_CLIENT_KEY(i) (F_FIXED_COUNT + 2 * (i) + 1)

/**
 * struct plan - the installation to write.
 * @receipt: the receipt signing key (F_RECEIPT_KEY).
 */
struct plan {
    struct plan_file *files;
    size_t n;
    struct berth_signing_key *receipt;
};

/** devinit_plan_layout() - lay out every file (names and modes, no contents yet).  Return: 0 or -ENOMEM. */
int devinit_plan_layout(const struct devinit_opts *o, const char *dir, struct plan *p);

/** devinit_plan_done() - release the plan, wiping key material. */
void devinit_plan_done(struct plan *p);

/**
 * devinit_check_absent() - refuse an existing DIR that already holds any
 * file or directory of the plan, naming the first: DIR's own files, then
 * for each subdirectory that exists the first planned file in it, or else
 * the subdirectory itself.  Returns an exit code.
 */
int devinit_check_absent(const struct target *t, const struct plan *p);

/** struct fingerprint - a client certificate's fingerprint (bctl_devcert_fingerprint()). */
struct fingerprint {
    char hex[BCTL_FINGERPRINT_HEX_LEN + 1];
};

/**
 * devinit_generate() - every key, certificate and document in memory, each
 * document checked with the parser that will read it.
 * @fingerprints: receives the client certificates' fingerprints, one per
 *                principal.
 */
int devinit_generate(const struct devinit_opts *o, const struct target *t, struct plan *p,
                     struct fingerprint *fingerprints, struct berth_error *reterr);

/** devinit_evidence_plugin_present() - whether berthd.json gets the evidence store (see --no-evidence-store). */
bool devinit_evidence_plugin_present(const struct devinit_opts *o);

/** devinit_image_plugin_present() - whether berthd.json gets the image source (see --no-image-source). */
bool devinit_image_plugin_present(const struct devinit_opts *o);

/** struct written - what this run created, to be removed if it fails. */
struct written {
    bool dir;
    bool sub[SUB_COUNT];
};

/** devinit_write_plan() - create the directories and publish every file, config files last. */
int devinit_write_plan(struct target *t, struct plan *p, struct written *w, struct berth_error *reterr);

/** devinit_wrote_anything() - whether devinit_write_plan() created anything at all. */
bool devinit_wrote_anything(const struct plan *p, const struct written *w);

/**
 * devinit_roll_back() - remove what devinit_write_plan() created, newest
 * first, printing what cannot be removed.  Returns whether everything went.
 */
bool devinit_roll_back(struct target *t, struct plan *p, const struct written *w);

#endif /* BERTHCTL_DEVINIT_H */
