/* SPDX-License-Identifier: BSD-3-Clause */
/* See criterion.h: the stand-in declares everything in one header. */
#include <criterion/criterion.h>
