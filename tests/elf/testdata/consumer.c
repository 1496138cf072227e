// Uses one symbol from each version of libelftest_provider, so its verneed lists both.
int elftest_one(void);
int elftest_two(void);
int elftest_consume(void) { return elftest_one() + elftest_two(); }
