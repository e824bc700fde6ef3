/* SPDX-License-Identifier: BSD-3-Clause */
/* Names for include-templates: a file written once for several element types (or fill values) is
 * included once per type with FA_SFX (and its type macros) defined before the #include and
 * undefined after; FA_NAME(n) is then n followed by the suffix, e.g. FA_NAME(attend_) with FA_SFX
 * f32 is attend_f32. FA_SFX is read where FA_NAME is used, so one definition serves every
 * instantiation in a translation unit. */
#ifndef FA_TEMPLATE_H
#define FA_TEMPLATE_H

#define FA_CAT2(a, b) a##b
#define FA_CAT(a, b)  FA_CAT2(a, b)
#define FA_NAME(n)    FA_CAT(n, FA_SFX)
/* The same for a set of tile products (drivers/forward_attend.h, drivers/backward_grads.h): FA_SET
 * names the set (f32, f64, dot) where an element type alone does not. */
#define FA_SET_NAME(n) FA_CAT(n, FA_SET)

#endif
