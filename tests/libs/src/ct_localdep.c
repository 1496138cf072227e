const char* ct_localdep_name(void) { return "localdep"; }
