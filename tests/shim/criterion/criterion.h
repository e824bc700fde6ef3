/* SPDX-License-Identifier: BSD-3-Clause */
/* A stand-in for <criterion/criterion.h>, for builds in which Criterion's runner cannot start.
 *
 * Criterion's runner maps a shared "inheritable arena" at a random address between 0x2000'0000'0000
 * and 0x6000'0000'0000 before it runs any test (BoxFort, src/runtime/arena.c); ThreadSanitizer reserves that
 * whole range for its shadow memory, so under -fsanitize=thread every Criterion binary stops with
 * "Could not initialize inheritable arena" or a SEGV inside libcriterion (Criterion issue #274).
 * tests/shim/runner.c runs the same test files instead: each test in a forked child, as Criterion
 * does, with the same command-line options that scripts/test.sh uses and the same final
 * "Synthesis:" line.
 *
 * Only what the suite uses is provided: Test() with .init, .fini, .timeout, .disabled;
 * criterion_current_test and criterion_current_suite (their names); the
 * cr_assert / cr_expect families (plain, eq, neq, lt, leq, gt, geq, null, not_null, str_eq,
 * str_neq, str_empty, not, fail), cr_skip_test, cr_log_info/warn/error, and (criterion/redirect.h)
 * cr_redirect_stdout/stderr with cr_expect_std{out,err}_eq_str. A test file that uses anything
 * else does not compile here; add it below. As in Criterion, a message must be a string literal. */
#ifndef FA_SHIM_CRITERION_H
#define FA_SHIM_CRITERION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int shim_first_; /* lets Test(suite, name) with no options initialize this struct */
    void (*init)(void);
    void (*fini)(void);
    double timeout; /* seconds; 0 = none */
    bool disabled;
    const char *description;
} shim_test_opts;

/* The running test and its suite, as Criterion's criterion_current_test and
 * criterion_current_suite (only the names); NULL outside a test. */
struct criterion_test {
    const char *name;
    const char *category; /* the suite's name */
};
struct criterion_suite {
    const char *name;
};
extern const struct criterion_test *criterion_current_test;
extern const struct criterion_suite *criterion_current_suite;

void shim_register(const char *suite, const char *name, void (*fn)(void), shim_test_opts opts);
void shim_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...);
void shim_skip(const char *fmt, ...);
void shim_log(const char *tag, const char *fmt, ...);

#define Test(suite, name, ...)                                                    \
    static void shim_test_##suite##_##name(void);                                 \
    __attribute__((constructor)) static void shim_register_##suite##_##name(void) \
    {                                                                             \
        shim_register(#suite, #name, shim_test_##suite##_##name,                  \
                      (shim_test_opts){.shim_first_ = 0, __VA_ARGS__});           \
    }                                                                             \
    static void shim_test_##suite##_##name(void)

#define SHIM_CHECK_(fatal, cond, expr, ...)                                      \
    do {                                                                         \
        if (!(cond)) shim_fail(fatal, __FILE__, __LINE__, expr, "" __VA_ARGS__); \
    } while (0)

#define cr_assert(cond, ...)     SHIM_CHECK_(1, cond, #cond, __VA_ARGS__)
#define cr_expect(cond, ...)     SHIM_CHECK_(0, cond, #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...) SHIM_CHECK_(1, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_expect_not(cond, ...) SHIM_CHECK_(0, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_fail(...)      SHIM_CHECK_(1, 0, "cr_assert_fail", __VA_ARGS__)
#define cr_expect_fail(...)      SHIM_CHECK_(0, 0, "cr_expect_fail", __VA_ARGS__)

#define SHIM_OP_(fatal, a, op, b, ...) SHIM_CHECK_(fatal, (a)op(b), #a " " #op " " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...)        SHIM_OP_(1, a, ==, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)        SHIM_OP_(0, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)       SHIM_OP_(1, a, !=, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...)       SHIM_OP_(0, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)        SHIM_OP_(1, a, <, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...)        SHIM_OP_(0, a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)       SHIM_OP_(1, a, <=, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...)       SHIM_OP_(0, a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)        SHIM_OP_(1, a, >, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...)        SHIM_OP_(0, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)       SHIM_OP_(1, a, >=, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...)       SHIM_OP_(0, a, >=, b, __VA_ARGS__)
#define cr_assert_null(p, ...)         SHIM_CHECK_(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_null(p, ...)         SHIM_CHECK_(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...)     SHIM_CHECK_(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...)     SHIM_CHECK_(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)    SHIM_CHECK_(1, strcmp(a, b) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)    SHIM_CHECK_(0, strcmp(a, b) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...)   SHIM_CHECK_(1, strcmp(a, b) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...)   SHIM_CHECK_(0, strcmp(a, b) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_assert_str_empty(a, ...)    SHIM_CHECK_(1, (a)[0] == '\0', #a " is empty", __VA_ARGS__)
#define cr_expect_str_empty(a, ...)    SHIM_CHECK_(0, (a)[0] == '\0', #a " is empty", __VA_ARGS__)

#define cr_skip_test(...) shim_skip("" __VA_ARGS__)
#define cr_log_info(...)  shim_log("[----] ", __VA_ARGS__)
#define cr_log_warn(...)  shim_log("[WARN] ", __VA_ARGS__)
#define cr_log_error(...) shim_log("[ERR ] ", __VA_ARGS__)

/* criterion/redirect.h */
void cr_redirect_stdout(void);
void cr_redirect_stderr(void);
int shim_stream_equals(int fd, const char *want);
#define cr_expect_stdout_eq_str(s, ...) \
    SHIM_CHECK_(0, shim_stream_equals(1, s), "stdout equals " #s, __VA_ARGS__)
#define cr_assert_stdout_eq_str(s, ...) \
    SHIM_CHECK_(1, shim_stream_equals(1, s), "stdout equals " #s, __VA_ARGS__)
#define cr_expect_stderr_eq_str(s, ...) \
    SHIM_CHECK_(0, shim_stream_equals(2, s), "stderr equals " #s, __VA_ARGS__)
#define cr_assert_stderr_eq_str(s, ...) \
    SHIM_CHECK_(1, shim_stream_equals(2, s), "stderr equals " #s, __VA_ARGS__)

#endif
