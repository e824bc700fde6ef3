/* SPDX-License-Identifier: BSD-3-Clause */
/* A main() for the fuzz target where libFuzzer is not linked (gcc builds, valgrind, TSan):
 * runs LLVMFuzzerTestOneInput once on each file named, and on each file of each folder named.
 * A failed check aborts, as it would under libFuzzer.
 *
 *   fa-fuzz-replay tests/fuzz/corpus [more files or folders]
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replayed;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const int verbose = getenv("FA_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    LLVMFuzzerTestOneInput(buf, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (verbose)
        fprintf(stderr, "  %.3f ms\n",
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    replayed++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The files of a folder, in name order (so a run is repeatable). */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names) abort();
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) abort();
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= replay_file(names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            rc = 1;
        } else {
            rc |= S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
        }
    }
    if (rc == 0) printf("fa-fuzz-replay: %ld inputs, every check passed\n", replayed);
    return rc;
}
