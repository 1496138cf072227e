// The smallest dynamically linked C program: what starting any process costs.
int main(void) { return 0; }
