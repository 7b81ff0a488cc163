/* included with a relative path from preproc.p4 */
#ifndef DEFS_P4
#define DEFS_P4
#define OUT_PORT 5
#define FIELD(n) bit<8> f_##n;
#define SET(n, v) hdr.t.f_##n = v;
#endif
