#include "CHookDemoSupport.h"

__attribute__((noinline)) int64_t demo_add(int64_t a, int64_t b) { return a + b; }

demo_binary_op demo_operations[1] = { demo_add };

int64_t demo_apply(int index, int64_t a, int64_t b) { return demo_operations[index](a, b); }

demo_binary_op demo_set_operation(int index, demo_binary_op op) {
  demo_binary_op old = demo_operations[index];
  demo_operations[index] = op;
  return old;
}

// A `static` function, called directly by an exported one: no PLT, no GOT,
// no export. The entry-hook tour hooks it by name (the program's .symtab).
static __attribute__((noinline, used)) int64_t demo_digit_value(int64_t c) {
  int64_t value = c - '0';
  return value;
}

int64_t demo_sum_digits(const char *text) {
  int64_t sum = 0;
  for (; *text; text++) {
    if (*text >= '0' && *text <= '9') sum += demo_digit_value(*text);
  }
  return sum;
}
