/* SPDX-License-Identifier: MIT */
/* uuid.c -- version 4 UUIDs; see uuid.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "uuid.h"

/* Where the four dashes are in the text form. */
static bool dash_at(size_t i)
{
    return i == 8 || i == 13 || i == 18 || i == 23;
}

int berthd_uuid_new(char out[BERTHD_UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t raw[16];
    size_t i, o = 0;

    if (!out)
        return -EINVAL;
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return -EIO;
    raw[6] = (uint8_t)((raw[6] & 0x0f) | 0x40); /* version 4 */
    raw[8] = (uint8_t)((raw[8] & 0x3f) | 0x80); /* variant 10xx */
    for (i = 0; i < sizeof(raw); i++) {
        if (dash_at(o))
            out[o++] = '-';
        out[o++] = hex[raw[i] >> 4];
        out[o++] = hex[raw[i] & 15];
    }
    out[o] = '\0';
    return 0;
}

bool berthd_uuid_valid(const char *text)
{
    size_t i;

    if (!text || strlen(text) != BERTHD_UUID_LEN)
        return false;
    for (i = 0; i < BERTHD_UUID_LEN; i++) {
        char c = text[i];

        if (dash_at(i) ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    /* text[14] is the version digit, text[19] holds the variant bits. */
    return text[14] == '4' && strchr("89ab", text[19]) != NULL;
}
