// Built against the v2 provider: needs PROV_2.0 (prov_new).
const char* prov_new(void);
const char* prov_old(void);
const char* ct_consumer(void) { return prov_new()[0] == 'n' ? prov_old() : "?"; }
