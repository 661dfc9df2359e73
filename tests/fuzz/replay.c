/*
 * Runs a fuzz target over files (its checked-in corpus) without libFuzzer:
 * every build and the sanitizer builds replay the corpus as a test.
 * Usage: replay FILE-OR-DIR...
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = b;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        if (!r) break;
        len += r;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    int n = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            perror(argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]) != 0;
            n++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        char **names = NULL;
        size_t nn = 0;
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char **v = realloc(names, sizeof *names * (nn + 1));
            if (!v) break;
            names = v;
            size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
            if (!(names[nn] = malloc(l))) break;
            snprintf(names[nn++], l, "%s/%s", argv[i], e->d_name);
        }
        if (d) closedir(d);
        qsort(names, nn, sizeof *names, cmp);   /* the same order every time */
        for (size_t k = 0; k < nn; k++) {
            bad += run_file(names[k]) != 0;
            n++;
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs, %d unreadable\n", n, bad);
    return bad || n == 0;
}
