// Built several times with different CT_WHICH values and placed in different directories
// (LD_LIBRARY_PATH order, glibc-hwcaps subdirectories) under one soname.
const char* ct_which(void) { return CT_WHICH; }
