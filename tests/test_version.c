/*
 * ax_version: the library's version string is the header's, of the form
 * MAJOR.MINOR.PATCH with the header's numbers.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <stdio.h>
#include <string.h>

TEST(version_string)
{
    const char *v = ax_version();
    REQUIRE(v != NULL);
    CHECKF(strcmp(v, AX_VERSION_STRING) == 0, "ax_version() \"%s\", header \"%s\"", v, AX_VERSION_STRING);
    /* the same pointer every time: a static string */
    CHECK(ax_version() == v);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", AX_VERSION_MAJOR, AX_VERSION_MINOR, AX_VERSION_PATCH);
    CHECKF(strcmp(v, want) == 0, "\"%s\" is not \"%s\"", v, want);
    CHECK_EQ_I(AX_VERSION_NUMBER, AX_VERSION_MAJOR * 10000 + AX_VERSION_MINOR * 100 + AX_VERSION_PATCH);
}

/* The preprocessor can compare versions. */
#if AX_VERSION_NUMBER < 100
#error "AX_VERSION_NUMBER is not usable in #if"
#endif
