/* tofino1arch.p4 for softswitch: the name older TNA programs include for the pipeline blocks. */
#include "tofino1_arch.p4"
