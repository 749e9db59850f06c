#ifndef CALLGRIND_CLIENT_H
#define CALLGRIND_CLIENT_H

/// 1 when valgrind's headers were found at build time (the requests below work),
/// 0 when they are no-ops.
int callgrind_client_available(void);

/// 1 when the process runs under valgrind.
int callgrind_client_running_on_valgrind(void);

/// Zeroes callgrind's counters, on every thread.
void callgrind_client_zero(void);

/// Writes callgrind's counters since the last zero to a new dump file whose
/// `desc:` line ends with `description`.
void callgrind_client_dump(const char *description);

#endif
