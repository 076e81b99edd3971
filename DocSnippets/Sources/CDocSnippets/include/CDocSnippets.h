// What the documentation's examples take from "a C library".
#ifndef CDOCSNIPPETS_H
#define CDOCSNIPPETS_H
#include <stdint.h>

/// The README's C struct: `struct Pair { float x; int32_t tag; };`.
struct Pair { float x; int32_t tag; };

/// `int32_t add(int32_t, int32_t)`.
int32_t add(int32_t a, int32_t b);

/// A function taking a Pair by value.
double scale(int32_t factor, struct Pair pair);

#endif
