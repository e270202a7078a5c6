/* SPDX-License-Identifier: MIT */
/* imagetest.h -- helpers shared by the image library's Check suites. */
#ifndef BERTH_IMAGETEST_H
#define BERTH_IMAGETEST_H

#include "testutil.h"

#include <berth/error.h>

/** The message of @err must start with the reason code @code and ": ". */
static inline void image_assert_reason(const struct berth_error *err, const char *code)
{
    size_t n = strlen(code);

    ck_assert_msg(strncmp(err->message, code, n) == 0 && err->message[n] == ':', "expected %s, got \"%s\"", code,
                  err->message);
}

#endif /* BERTH_IMAGETEST_H */
