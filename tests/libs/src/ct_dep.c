const char* ct_dep_name(void) { return "dep from origin/deps"; }
