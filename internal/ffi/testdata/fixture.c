/* Trivial functions for the ffi tests and the call-cost benchmarks. */
#include <errno.h>

long rdmapool_fixture_add3(long a, long b, long c) { return a + b + c; }

long rdmapool_fixture_sum6(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

long rdmapool_fixture_noop(void) { return 42; }

/* Fails like a libc call: returns -1 and sets errno to e. */
long rdmapool_fixture_fail(long e)
{
	errno = (int)e;
	return -1;
}

/* Uses n bytes of stack and returns the sum of the bytes it wrote there. */
long rdmapool_fixture_stack(long n)
{
	volatile unsigned char buf[n];
	long s = 0;

	for (long i = 0; i < n; i++)
		buf[i] = (unsigned char)i;
	for (long i = 0; i < n; i++)
		s += buf[i];
	return s;
}
