#include "CHookDemoSupport.h"

__attribute__((noinline)) int64_t demo_add(int64_t a, int64_t b) { return a + b; }

demo_binary_op demo_operations[1] = { demo_add };

int64_t demo_apply(int index, int64_t a, int64_t b) { return demo_operations[index](a, b); }

demo_binary_op demo_set_operation(int index, demo_binary_op op) {
  demo_binary_op old = demo_operations[index];
  demo_operations[index] = op;
  return old;
}
