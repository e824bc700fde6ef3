/* SPDX-License-Identifier: BSD-3-Clause */
/* The runner of tests/shim (see criterion/criterion.h for why it exists).
 *
 * Every test runs in a forked child, like Criterion: a crash, an abort or a sanitizer report ends
 * that test only. The parent never calls the library, so it stays single-threaded and forking is
 * safe under ThreadSanitizer. A child's output is kept in a temporary file and shown when the test
 * does not pass (or with --verbose).
 *
 * Options (a subset of Criterion's, same spelling):
 *   --filter=PATTERN, --filter PATTERN   run tests whose "suite/name" matches the shell pattern
 *                                        (an extended glob: "@(a|b)/?*" selects the suites a and b)
 *   -jN, --jobs=N, --jobs N              N tests at a time (default 1)
 *   --timeout=S                          a timeout for tests that set none (default: none)
 *   -l, --list                           list the tests
 *   --verbose                            show every test's output
 *   -h, --help
 * FA_SHIM_TIMEOUT_SCALE (default 1) multiplies every timeout: sanitizers and valgrind are slower.
 * The last line is Criterion's: "[====] Synthesis: Tested: N | Passing: N | Failing: F | Crashing: C". */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHIM_SKIPPED 77 /* exit status of a skipped test */

typedef struct {
    const char *suite, *name;
    void (*fn)(void);
    shim_test_opts opts;
} shim_test;

static shim_test *g_tests;
static size_t g_count, g_cap;

void shim_register(const char *suite, const char *name, void (*fn)(void), shim_test_opts opts)
{
    if (g_count == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 256;
        g_tests = realloc(g_tests, g_cap * sizeof *g_tests);
        if (!g_tests) abort();
    }
    g_tests[g_count++] = (shim_test){suite, name, fn, opts};
}

/* ---- inside a test (the child) ---- */

static int g_report_fd = 2; /* the test's original stderr, kept when a test redirects stderr */
static int g_failed;
static FILE *g_redirect[3];

static void report(const char *fmt, va_list ap)
{
    char buf[4096];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(g_report_fd, buf + off, len - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
}

static void reportf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(fmt, ap);
    va_end(ap);
}

void shim_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
{
    fflush(stdout);
    fflush(stderr);
    reportf("%s:%d: Assertion failed: %s", file, line, expr);
    if (fmt && fmt[0]) {
        reportf("\n    ");
        va_list ap;
        va_start(ap, fmt);
        report(fmt, ap);
        va_end(ap);
    }
    reportf("\n");
    g_failed = 1;
    if (fatal) exit(1);
}

void shim_skip(const char *fmt, ...)
{
    reportf("skipped: ");
    va_list ap;
    va_start(ap, fmt);
    report(fmt, ap);
    va_end(ap);
    reportf("\n");
    exit(g_failed ? 1 : SHIM_SKIPPED);
}

void shim_log(const char *tag, const char *fmt, ...)
{
    fflush(stderr);
    reportf("%s", tag);
    va_list ap;
    va_start(ap, fmt);
    report(fmt, ap);
    va_end(ap);
    reportf("\n");
}

static void redirect(int fd)
{
    FILE *f = tmpfile();
    if (!f) abort();
    fflush(fd == 1 ? stdout : stderr);
    if (fd == 2) g_report_fd = dup(2);
    if (dup2(fileno(f), fd) < 0) abort();
    g_redirect[fd] = f;
}

void cr_redirect_stdout(void)
{
    redirect(1);
}

void cr_redirect_stderr(void)
{
    redirect(2);
}

/* Whether everything written to a redirected stream so far is exactly `want`. */
int shim_stream_equals(int fd, const char *want)
{
    if (!g_redirect[fd]) return 0;
    fflush(fd == 1 ? stdout : stderr);
    size_t n = strlen(want);
    char *got = malloc(n + 2);
    if (!got) abort();
    ssize_t r = pread(fileno(g_redirect[fd]), got, n + 1, 0);
    int same = r == (ssize_t)n && memcmp(got, want, n) == 0;
    free(got);
    return same;
}

const struct criterion_test *criterion_current_test;
const struct criterion_suite *criterion_current_suite;

static void run_in_child(const shim_test *t)
{
    static struct criterion_test test;
    static struct criterion_suite suite;
    test = (struct criterion_test){t->name, t->suite};
    suite = (struct criterion_suite){t->suite};
    criterion_current_test = &test;
    criterion_current_suite = &suite;
    if (t->opts.timeout > 0) {
        const char *scale_env = getenv("FA_SHIM_TIMEOUT_SCALE");
        double scale = scale_env ? atof(scale_env) : 1.0;
        alarm((unsigned)(t->opts.timeout * (scale > 0 ? scale : 1.0)) + 1u);
    }
    if (t->opts.init) t->opts.init();
    t->fn();
    if (t->opts.fini) t->opts.fini();
    fflush(stdout);
    fflush(stderr);
    exit(g_failed ? 1 : 0);
}

/* ---- the parent ---- */

typedef struct {
    pid_t pid;
    size_t test;
    int out_fd;
    struct timespec t0;
} shim_job;

static double seconds_since(struct timespec t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

static int by_name(const void *a, const void *b)
{
    const shim_test *x = a, *y = b;
    int c = strcmp(x->suite, y->suite);
    return c ? c : strcmp(x->name, y->name);
}

static void dump(int fd)
{
    char buf[8192];
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, buf, sizeof buf)) > 0) fwrite(buf, 1, (size_t)n, stderr);
}

static int temp_fd(void)
{
    char path[] = "/tmp/fa-shim-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    unlink(path);
    return fd;
}

static void usage(const char *argv0)
{
    printf("usage: %s [--filter=PATTERN] [-jN|--jobs=N] [--timeout=S] [--list] [--verbose]\n", argv0);
}

int main(int argc, char **argv)
{
    const char *filter = NULL;
    long jobs = 1;
    double default_timeout = 0;
    int list = 0, verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--filter=", 9) == 0)
            filter = a + 9;
        else if (strcmp(a, "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else if (strncmp(a, "--jobs=", 7) == 0)
            jobs = strtol(a + 7, NULL, 10);
        else if (strcmp(a, "--jobs") == 0 && i + 1 < argc)
            jobs = strtol(argv[++i], NULL, 10);
        else if (strncmp(a, "-j", 2) == 0 && a[2])
            jobs = strtol(a + 2, NULL, 10);
        else if (strncmp(a, "--timeout=", 10) == 0)
            default_timeout = atof(a + 10);
        else if (strcmp(a, "-l") == 0 || strcmp(a, "--list") == 0)
            list = 1;
        else if (strcmp(a, "--verbose") == 0 || strncmp(a, "--verbose=", 10) == 0)
            verbose = 1;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(argv[0]);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown option %s\n", argv[0], a);
            usage(argv[0]);
            return 2;
        }
    }
    if (jobs < 1) jobs = 1;
    qsort(g_tests, g_count, sizeof *g_tests, by_name);

    size_t *todo = malloc((g_count + 1) * sizeof *todo), n_todo = 0;
    shim_job *running = calloc((size_t)jobs, sizeof *running);
    if (!todo || !running) abort();
    int skipped = 0;
    for (size_t i = 0; i < g_count; i++) {
        char full[512];
        snprintf(full, sizeof full, "%s/%s", g_tests[i].suite, g_tests[i].name);
        if (filter && fnmatch(filter, full, FNM_EXTMATCH) != 0) continue;
        if (list) {
            printf("%s\n", full);
            continue;
        }
        if (g_tests[i].opts.disabled) {
            printf("[SKIP] %s::%s: disabled\n", g_tests[i].suite, g_tests[i].name);
            skipped++;
            continue;
        }
        if (g_tests[i].opts.timeout <= 0) g_tests[i].opts.timeout = default_timeout;
        todo[n_todo++] = i;
    }
    if (list) return 0;
    fflush(stdout);

    int passed = 0, failed = 0, crashed = 0;
    size_t next = 0, active = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (next < n_todo || active > 0) {
        while (next < n_todo && active < (size_t)jobs) {
            shim_job *j = NULL;
            for (long s = 0; s < jobs; s++)
                if (!running[s].pid) j = &running[s];
            j->test = todo[next++];
            j->out_fd = temp_fd();
            clock_gettime(CLOCK_MONOTONIC, &j->t0);
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid < 0) {
                perror("fork");
                return 2;
            }
            if (pid == 0) {
                dup2(j->out_fd, 1);
                dup2(j->out_fd, 2);
                run_in_child(&g_tests[j->test]);
            }
            j->pid = pid;
            active++;
        }
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            perror("waitpid");
            return 2;
        }
        shim_job *j = NULL;
        for (long s = 0; s < jobs; s++)
            if (running[s].pid == pid) j = &running[s];
        if (!j) continue;
        const shim_test *t = &g_tests[j->test];
        double dt = seconds_since(j->t0);
        int show = verbose;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            printf("[PASS] %s::%s: (%.2fs)\n", t->suite, t->name, dt);
            passed++;
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == SHIM_SKIPPED) {
            printf("[SKIP] %s::%s: (%.2fs)\n", t->suite, t->name, dt);
            skipped++;
            show = 1;
        } else if (WIFEXITED(status)) {
            printf("[FAIL] %s::%s: exit status %d (%.2fs)\n", t->suite, t->name, WEXITSTATUS(status), dt);
            failed++;
            show = 1;
        } else {
            int sig = WTERMSIG(status);
            printf("[FAIL] %s::%s: CRASH, signal %d (%s)%s (%.2fs)\n", t->suite, t->name, sig, strsignal(sig),
                   sig == SIGALRM ? ", timed out" : "", dt);
            crashed++;
            show = 1;
        }
        fflush(stdout);
        if (show) dump(j->out_fd);
        fflush(stderr);
        close(j->out_fd);
        j->pid = 0;
        active--;
    }
    printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d | Skipped: %d (%.1fs)\n",
           passed + failed + crashed, passed, failed, crashed, skipped, seconds_since(start));
    free(todo);
    free(running);
    return failed || crashed ? 1 : 0;
}
