/* SPDX-License-Identifier: MIT */
/* runstate.c -- an OCI runtime's state record of a container (runstate.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "macro.h"
#include "runstate.h"

int oci_runstate_present(const char *root, const char *id, bool *ret_present)
{
    size_t id_len = id ? strlen(id) : 0;
    struct dirent *de;
    DIR *d;
    int fd, r = 0;

    if (!root || root[0] != '/' || !id_len || strchr(id, '/') || strchr(id, '_') || !ret_present)
        return -EINVAL;
    fd = berth_open_trusted(root, O_RDONLY | O_DIRECTORY, 0, NULL);
    if (fd == -ENOENT) {
        *ret_present = false;
        return 0;
    }
    if (fd < 0)
        return fd;
    d = fdopendir(fd);
    if (!d) {
        r = -errno;
        close(fd);
        return r;
    }
    *ret_present = false;
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (!de) {
            r = errno ? -errno : 0;
            break;
        }
        if (strncmp(de->d_name, id, id_len) == 0 && (de->d_name[id_len] == '\0' || de->d_name[id_len] == '_')) {
            *ret_present = true;
            break;
        }
    }
    closedir(d);
    return r;
}
