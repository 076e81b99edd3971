// C functions the demo hooks.
#ifndef CHOOKDEMOSUPPORT_H
#define CHOOKDEMOSUPPORT_H
#include <stdint.h>
// The import-hook tour watches SQLite from outside.
#include <sqlite3.h>

// int64_t add(int64_t, int64_t): the function the demo hooks.
int64_t demo_add(int64_t a, int64_t b);

// A table of function pointers, as a C library would keep them.
typedef int64_t (*demo_binary_op)(int64_t, int64_t);
extern demo_binary_op demo_operations[1];
int64_t demo_apply(int index, int64_t a, int64_t b);
// Installs `op` in the table, returning what was there.
demo_binary_op demo_set_operation(int index, demo_binary_op op);

// The sum of the digits of `text`, through a `static` function of the same file.
int64_t demo_sum_digits(const char *text);

#endif
