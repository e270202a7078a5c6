/* SPDX-License-Identifier: MIT */
/* encoding.c -- hex and base64url; see encoding.h.  base64url is libsodium's. */
#include <errno.h>

#include <sodium.h>

#include "encoding.h"

void berth_hex_encode(const uint8_t *data, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < len; i++) {
        out[2 * i] = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 0xf];
    }
    out[2 * len] = '\0';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int berth_hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t outlen)
{
    size_t i;

    if (!hex || !out || hexlen != 2 * outlen)
        return -EINVAL;
    for (i = 0; i < outlen; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int berth_base64url_encode(const uint8_t *data, size_t len, char *out, size_t outsz)
{
    if (!data || !out || outsz < BERTH_BASE64URL_LEN(len) + 1)
        return -EINVAL;
    sodium_bin2base64(out, outsz, data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return 0;
}

int berth_base64url_decode(const char *text, size_t textlen, uint8_t *out, size_t outsz, size_t *ret_len)
{
    const char *end = NULL;
    size_t n = 0;

    if (!text || !out || !ret_len)
        return -EINVAL;
    if (textlen % 4 == 1)
        return -EINVAL;
    if ((textlen / 4) * 3 + (textlen % 4 ? textlen % 4 - 1 : 0) > outsz)
        return -ENOBUFS;
    /* libsodium refuses characters outside the alphabet and non-zero
     * trailing bits; ignore=NULL refuses whitespace. */
    if (sodium_base642bin(out, outsz, text, textlen, NULL, &n, &end, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
        return -EINVAL;
    if (end != text + textlen)
        return -EINVAL;
    *ret_len = n;
    return 0;
}
