/*
 * The hand-written baseline of Black-Scholes option pricing.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_BLACKSCHOLES_H
#define AX_BASELINE_BLACKSCHOLES_H
#include "baseline.h"

/* Prices n European options (f32): call[i] and put[i] for price[i],
 * strike[i], years[i] at the given riskless rate and volatility. */
BL_DECLARE(void, bl_blackscholes, (const float *price, const float *strike, const float *years,
                                   float *call, float *put, int64_t n, float riskfree, float volatility))
#endif
