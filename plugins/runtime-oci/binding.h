/* SPDX-License-Identifier: MIT */
/*
 * binding.h -- what binds a container to its receipt, shared by the
 * runtime-oci plugin (start()) and berth-oci-shim (before `create`).  Not
 * installed.
 *
 * The reference's rule (sandbox-broker, "Worker supervision"): before
 * creating the sandbox, the driver checks the job binding and compares
 * config.json against the deny-all OCI specification rebuilt from the
 * sealed job and the staged paths.  Here:
 *   1. the dispatch document's receipt envelope verifies with the broker
 *      public key of the backend's configuration ("broker_public_key",
 *      ocicfg.h), its key_id is that key's, and it covers exactly the
 *      dispatch's job (id and digest) and names the run id;
 *   2. config.json is byte for byte the canonical JSON that
 *      berth_bundle_config() builds from that job, the dispatch's effective
 *      manifest, rootfs and inputs_dir (input i is the file inputs_dir/i,
 *      bound at job.inputs[i].path), and the bundle parameters the plugin
 *      chose (shim.json "bundle_params": {"uid", "gid", "nproc",
 *      "pids_ceiling", "cgroups_path" (absent for a contained job, which
 *      runs in its unit's payload group, contained.c), "outputs_dir" (the job's outputs
 *      tmpfs, outmount.h; absent when it has no room for outputs),
 *      "slot_init" (a warm slot's: berth_bundle_config()'s
 *      slot form; absent for a job's own bundle)}).
 *   For a warm slot (docs/warm-slots.md) config.json is built twice: when
 *   the slot is provisioned, from the slot document (oci_binding_slot()),
 *   and when a job claims it, from the job's dispatch; both in slot form,
 *   which ignores the job's argv, so they are equal exactly when the job is
 *   one the slot was built for (oci_binding_slot_match()).
 * Thread-safe (no state).
 */
#ifndef BERTH_OCI_BINDING_H
#define BERTH_OCI_BINDING_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "job.h"
#include "sign.h"

/**
 * oci_binding_verify() - check the receipt of the parsed dispatch document
 * @dispatch against @job (parsed from its "job") and, when @pub is not
 * NULL, against the broker public key @pub (32 raw bytes).  With @pub NULL
 * only the shape, run id and job binding are checked, not the signature.
 * Return: 0; -EKEYREJECTED when the signature, key id or job binding does
 * not verify (reterr says which); -EBADMSG when the receipt is malformed.
 */
int oci_binding_verify(const json_t *dispatch, const struct berth_job *job, const uint8_t *pub,
                       struct berth_error *reterr);

/**
 * oci_binding_config() - build the deny-all config.json for @dispatch's
 * job @job with the bundle parameters @params (the object described
 * above; the shim reads it from shim.json, the plugin writes it there).
 * @ret: receives a new JSON object (json_decref()).
 * Return: 0; -EBADMSG (a member of @params or @dispatch is missing or has
 * the wrong type, a job with inputs but no absolute inputs_dir; a job this
 * configuration cannot run); -ENOMEM.
 */
int oci_binding_config(const json_t *dispatch, const struct berth_job *job, const json_t *params, json_t **ret,
                       struct berth_error *reterr);

/**
 * oci_binding_check_inputs() - check the staged inputs the configuration
 * binds (above): inputs_dir is a directory of the caller's (euid), reached
 * without symlinks, not accessible to group or others, and file i is a
 * regular file of the caller's with one link, no write permission for
 * anyone, and exactly job.inputs[i].ref.size bytes.  The content is not
 * hashed again (berthd verified it when it staged it).
 * Return: 0 (also for a job without inputs); -EBADMSG when the dispatch
 * names no inputs_dir for a job with inputs, or a file is absent or not as
 * described (reterr says which); -errno when the directory cannot be read.
 */
int oci_binding_check_inputs(const json_t *dispatch, const struct berth_job *job, struct berth_error *reterr);

/**
 * oci_binding_check_config() - compare @config_text (@len bytes, the
 * bundle's config.json) with oci_binding_config() of the same inputs.
 * Return: 0 when they are byte-identical canonical JSON; -EPERM when they
 * differ (reterr names the first differing top-level member); the errors
 * of oci_binding_config().
 */
int oci_binding_check_config(const json_t *dispatch, const struct berth_job *job, const json_t *params,
                             const char *config_text, size_t len, struct berth_error *reterr);

/**
 * oci_binding_slot() - check a warm slot's document @slot (the JSON object
 * provision() receives, jobdir.h slot.json: schema_version 1, slot_id,
 * pool, image, effective, limits, rootfs, not_after; no other member) and
 * derive what its bundle is built from: the job it stands for (@ret_job: id
 * slot_id, argv [BERTH_BUNDLE_SLOT_INIT], no inputs or outputs, the slot's
 * limits; berth_job_free()) and a dispatch-shaped object (@ret_dispatch:
 * {effective, rootfs}; json_decref()) for oci_binding_config().
 * @ret_not_after: when not NULL, the slot's retirement time (CLOCK_REALTIME
 * ns).  Nothing is written on failure.
 * Return: 0; -EBADMSG (a member missing, malformed or unknown); -ENOMEM.
 */
int oci_binding_slot(const json_t *slot, struct berth_job **ret_job, json_t **ret_dispatch, int64_t *ret_not_after,
                     struct berth_error *reterr);

/**
 * oci_binding_slot_match() - whether the job @job of the parsed dispatch
 * @dispatch may claim the slot @slot: the same effective manifest (JSON
 * equality), image, limits, pool and staged root, and no inputs (they are
 * bound when a container is created, which a slot has done already).
 * Return: 0; -ESTALE when they differ (reterr says in what).
 */
int oci_binding_slot_match(const json_t *slot, const json_t *dispatch, const struct berth_job *job,
                           struct berth_error *reterr);

#endif /* BERTH_OCI_BINDING_H */
