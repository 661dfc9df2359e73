/*
 * Comparing two runs' results (randprog_compare: bit for bit, or within a
 * tolerance) and the environment helpers (randprog_env_long).
 *
 * A part of the random program generator: tests/randprog.c #includes its
 * parts in order (one translation unit, so that every test that includes
 * randprog.c gets them all); not compiled alone.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef RANDPROG_C
#error "a part of randprog.c, which #includes it: not compiled alone"
#endif

/* ================================================================ comparing */

static double load_f(const void *p, ax_scalar s, int64_t i)
{
    return s == AX_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void ix_str(char *buf, size_t size, const ax_array *a, int64_t lin)
{
    int r = ax_array_rank(a);
    int64_t ix[AX_MAX_RANK];
    for (int k = r - 1; k >= 0; k--) {
        int64_t e = ax_array_extent(a, k);
        ix[k] = e ? lin % e : 0;
        lin = e ? lin / e : 0;
    }
    size_t n = 0;
    n += (size_t)snprintf(buf + n, size - n, "[");
    for (int k = 0; k < r && n < size; k++) n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, k ? "," : "", ix[k]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

int randprog_compare(ax_array *const *a, int na, ax_array *const *b, int nb, double rtol, double atol, char *msg,
                     size_t size)
{
    if (na != nb) {
        snprintf(msg, size, "%d results vs %d", na, nb);
        return 0;
    }
    for (int r = 0; r < na; r++) {
        const ax_array *x = a[r], *y = b[r];
        if (!x || !y) {
            snprintf(msg, size, "result %d: missing (%p vs %p)", r, (const void *)x, (const void *)y);
            return 0;
        }
        char tx[128], ty[128];
        ax_type_str(ax_array_type(x), tx, sizeof tx);
        ax_type_str(ax_array_type(y), ty, sizeof ty);
        if (!ax_type_equal(ax_array_type(x), ax_array_type(y)) || ax_array_rank(x) != ax_array_rank(y)) {
            snprintf(msg, size, "result %d: type %s^%d vs %s^%d", r, tx, ax_array_rank(x), ty, ax_array_rank(y));
            return 0;
        }
        for (int k = 0; k < ax_array_rank(x); k++)
            if (ax_array_extent(x, k) != ax_array_extent(y, k)) {
                char sx[256] = "", sy[256] = "";
                size_t nx = 0, ny = 0;
                for (int j = 0; j < ax_array_rank(x); j++) {
                    nx += (size_t)snprintf(sx + nx, sizeof sx - nx, "%s%" PRId64, j ? "," : "", ax_array_extent(x, j));
                    ny += (size_t)snprintf(sy + ny, sizeof sy - ny, "%s%" PRId64, j ? "," : "", ax_array_extent(y, j));
                }
                snprintf(msg, size, "result %d: shape [%s] vs [%s]", r, sx, sy);
                return 0;
            }
        int64_t n = ax_array_size(x);
        for (int c = 0; c < ax_array_components(x); c++) {
            ax_scalar s = ax_array_component_type(x, c);
            if (s != ax_array_component_type(y, c)) {
                snprintf(msg, size, "result %d: component %d types differ", r, c);
                return 0;
            }
            const void *px = ax_array_data(x, c), *py = ax_array_data(y, c);
            size_t es = ax_scalar_size(s);
            for (int64_t i = 0; i < n; i++) {
                bool same;
                char vx[64], vy[64];
                if (s == AX_F32 || s == AX_F64) {
                    double u = load_f(px, s, i), v = load_f(py, s, i);
                    same = (isnan(u) && isnan(v)) || u == v ||
                           (isfinite(u) && isfinite(v) && fabs(u - v) <= atol + rtol * fmax(fabs(u), fabs(v)));
                    snprintf(vx, sizeof vx, "%.17g", u);
                    snprintf(vy, sizeof vy, "%.17g", v);
                } else {
                    same = !memcmp((const char *)px + (size_t)i * es, (const char *)py + (size_t)i * es, es);
                    Buf bx = {0}, by = {0};
                    val_str(&bx, s, px, i);
                    val_str(&by, s, py, i);
                    snprintf(vx, sizeof vx, "%s", bx.s ? bx.s : "");
                    snprintf(vy, sizeof vy, "%s", by.s ? by.s : "");
                    free(bx.s);
                    free(by.s);
                }
                if (!same) {
                    char ix[128];
                    ix_str(ix, sizeof ix, x, i);
                    snprintf(msg, size, "result %d (%s): component %d element %s: %s vs %s", r, tx, c, ix, vx, vy);
                    return 0;
                }
            }
        }
    }
    if (size) msg[0] = 0;
    return 1;
}

long randprog_env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 0);
    return *end ? dflt : v;
}
