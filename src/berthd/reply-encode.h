/* SPDX-License-Identifier: MIT */
/*
 * reply-encode.h -- a reply's JSON body as a client receives it, shared
 * by the main loop (api.c) and the front threads (front.c, which answer
 * framing refusals themselves).  Thread-safe: it touches only @reply.
 */
#ifndef BERTHD_REPLY_ENCODE_H
#define BERTHD_REPLY_ENCODE_H

#include <stddef.h>

#include "broker.h"

/**
 * berthd_reply_encode() - @reply as its JSON document and a newline, in
 * one NUL-terminated piece the caller frees; *@ret_len its length.  A
 * reply that cannot be encoded becomes status 500 with a fixed
 * {"error":"internal"} body.  Return: the text; NULL (and *@ret_len 0)
 * when memory ran out.
 */
char *berthd_reply_encode(struct berth_reply *reply, size_t *ret_len);

#endif
