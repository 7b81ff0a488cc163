/* tna.p4 for softswitch: the Tofino Native Architecture (TNA) as a P4 program sees it.
 * Written for softswitch from the TNA documentation; a program that includes <tna.p4> for Intel's or
 * p4c's open-source Tofino compiler finds the same names and signatures here. Only declarations: the
 * behaviour belongs to softswitch's TNA pipeline. Tofino 2 (t2na.p4) is not provided.
 *
 * Layout, as with the compiler's headers: tofino1_specs.p4 (device types and sizes), tofino1_base.p4
 * (intrinsic metadata, externs), tofino1_arch.p4 (block types and the Pipeline / Switch packages). */
#ifndef _SOFTSWITCH_TNA_P4_
#define _SOFTSWITCH_TNA_P4_
/* the guard name of the compiler's tna.p4 (tested by some programs) */
#define _TOFINO1_NATIVE_ARCHITECTURE_

/* The Tofino compilers define the target generation; softswitch models Tofino 1. */
#ifndef __TARGET_TOFINO__
#define __TARGET_TOFINO__ 1
#endif

#include "tofino1_specs.p4"
#include "tofino1_arch.p4"

#endif
