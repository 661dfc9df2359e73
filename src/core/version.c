/*
 * ax_version: the version of the library itself (the header's
 * AX_VERSION_STRING when the library was compiled).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle.h"

const char *ax_version(void)
{
    return AX_VERSION_STRING;
}
