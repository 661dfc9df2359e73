/*
 * A fuzz target over the Matrix Market reader: the
 * input is the file.  Whatever it holds, the reader returns a matrix in
 * compressed row form that is consistent (row lengths adding up, columns
 * in range and ascending within a row, finite values) or an error with a
 * message naming the file, within a memory budget, without crashing.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "smvm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the reader takes a path: an anonymous file of this process */
    int fd = memfd_create("axle-fuzz.mtx", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], msg[512] = "";
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ex_csr m;
    int rc = ex_mm_read_limit(path, &m, (int64_t)64 << 20, msg, sizeof msg);
    if (rc != 0) {
        if (!strstr(msg, path)) abort();   /* an error names the file */
    } else {
        int64_t sum = 0;
        if (m.rows < 0 || m.cols < 0 || m.nnz < 0 || m.rowptr[0] != 0) abort();
        for (int64_t r = 0; r < m.rows; r++) {
            if (m.segd[r] < 0 || m.rowptr[r + 1] != m.rowptr[r] + m.segd[r]) abort();
            sum += m.segd[r];
            for (int64_t k = m.rowptr[r]; k < m.rowptr[r + 1]; k++) {
                if (m.col[k] < 0 || m.col[k] >= m.cols || !isfinite(m.val[k])) abort();
                if (k > m.rowptr[r] && m.col[k] < m.col[k - 1]) abort();
            }
        }
        if (sum != m.nnz) abort();
        ex_csr_free(&m);
    }
    close(fd);
    return 0;
}
