/* tofino.p4 for softswitch: the name older TNA programs include for the base declarations. */
#include "tofino1_base.p4"
