// A versioned provider: v1 defines PROV_1.0; v2 adds PROV_2.0 (prov_new).
const char* prov_old(void) { return "old"; }
#ifdef CT_PROV_V2
const char* prov_new(void) { return "new"; }
#endif
