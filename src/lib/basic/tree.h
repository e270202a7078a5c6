/* SPDX-License-Identifier: MIT */
/*
 * tree.h -- remove a directory tree through descriptors only (image stages
 * clear a refused rootfs with it; the broker removes a finished job's staged
 * rootfs).
 */
#ifndef BERTH_TREE_H
#define BERTH_TREE_H

#include <berth/error.h>

/**
 * berth_tree_clear() - remove everything below the directory @dirfd (not
 * the directory itself) with a descriptor walk that never follows a
 * symlink and never leaves @dirfd.  Directories without write or search
 * permission are chmod'ed first.
 * Return: 0; the first unlinkat/openat error (the walk continues past it and
 * removes what it can).
 */
int berth_tree_clear(int dirfd, struct berth_error *reterr);

#endif /* BERTH_TREE_H */
