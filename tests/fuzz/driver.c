/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regression driver: runs a fuzz target over files, without libFuzzer. Each
 * argument is a file or a directory (its regular files, in name order,
 * dot-files skipped). A crash or failed check aborts; at least one input must
 * have run. Built in every build, so the corpus and the reproducers of fixed
 * bugs run under ctest with gcc, with and without sanitizers.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t size = 0, cap = 0;

    if (!f) {
        fprintf(stderr, "fuzz-regress: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (size == cap) {
            uint8_t *m = realloc(buf, cap = cap ? cap * 2 : 4096);
            FUZZ_CHECK(m);
            buf = m;
        }
        size_t k = fread(buf + size, 1, cap - size, f);
        size += k;
        if (k == 0)
            break;
    }
    if (ferror(f)) {
        fprintf(stderr, "fuzz-regress: %s: read error\n", path);
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    /* exactly size bytes, so that sanitizers catch a read past the end */
    uint8_t *input = fuzz_copy(buf, size);
    free(buf);
    fprintf(stderr, "fuzz-regress: %s (%zu bytes)\n", path, size);
    LLVMFuzzerTestOneInput(input, size);
    free(input);
    return 1;
}

static int only_files(const struct dirent *de) {
    return de->d_name[0] != '.';
}

static int run_dir(const char *dir) {
    struct dirent **list = NULL;
    int n = scandir(dir, &list, only_files, alphasort), count = 0;

    if (n < 0) {
        fprintf(stderr, "fuzz-regress: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
        if (count >= 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            int r = run_file(path);
            count = r < 0 ? -1 : count + r;
        }
        free(list[i]);
    }
    free(list);
    return count;
}

int main(int argc, char **argv) {
    int total = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int r;

        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "fuzz-regress: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        r = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (r < 0)
            return 1;
        total += r;
    }
    if (total == 0) {
        fprintf(stderr, "fuzz-regress: no inputs\n");
        return 1;
    }
    fprintf(stderr, "fuzz-regress: %d inputs, no crash\n", total);
    return 0;
}
