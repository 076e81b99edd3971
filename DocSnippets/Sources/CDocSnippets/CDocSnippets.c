#include "CDocSnippets.h"

int32_t add(int32_t a, int32_t b) { return a + b; }

double scale(int32_t factor, struct Pair pair) { return factor * pair.x + pair.tag; }
