#include "CallgrindClient.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>

int callgrind_client_available(void) { return 1; }
int callgrind_client_running_on_valgrind(void) { return RUNNING_ON_VALGRIND ? 1 : 0; }
void callgrind_client_zero(void) { CALLGRIND_ZERO_STATS; }
void callgrind_client_dump(const char *description) { CALLGRIND_DUMP_STATS_AT(description); }
#else
int callgrind_client_available(void) { return 0; }
int callgrind_client_running_on_valgrind(void) { return 0; }
void callgrind_client_zero(void) {}
void callgrind_client_dump(const char *description) { (void)description; }
#endif
