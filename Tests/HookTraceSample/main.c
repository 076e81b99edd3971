// hook-trace-sample: a program for hook-trace's tests and its comparison with
// ltrace and uftrace. It prints what it did and ends with a known status.
//   loop N       N times strdup, strlen and free; prints the total length; status 3
//   sqlite N     an in-memory SQLite database: N inserts by sqlite3_exec, a count by
//                sqlite3_prepare_v2/sqlite3_step/sqlite3_finalize; status 0
//   threads T N  T threads, each running the loop N times; status 0
//   fork N       the loop N times in a child (which ends with _exit) and in the parent; status 0
//   exec N       runs itself again as `loop N` (execv); status 3 (the new image's)
//   log FILE     points its stderr at FILE (dup2), then the loop 10 times and a line
//                to stderr; status 0
//   fd           prints what it inherited as HOOK_TRACE_FD: "close-on-exec", "inherited"
//                or "none"; status 0
//   signals N    N calls of strlen while a timer's signal every 20 µs calls it
//                too, from its handler; prints the main loop's total; status 0
//   vfork N      the loop N times, then a vfork child that execs /bin/true (one
//                that fails, `_exit`s), then the loop N times again; status 0
//   fail         four calls that fail: open and close of nothing, strtol, fopen; status 1
//   deep N       qsort nested N deep (its comparator sorts again, one level down);
//                prints the depth reached; status 0
//   late MS      4 threads call ferror (through a pointer from dlsym: this program does
//                not import it) in a loop; after MS ms it loads libbz2, which does import
//                it, so that hook-trace patches ferror's entry while the threads are in
//                it; MS ms later, once they made 4,000 calls since the load (a loaded
//                machine may not run them in MS ms; at most 5 s), they stop. Prints
//                the calls made; status 0
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *volatile text = "hello, world";

// `signals`: the timer's handler calls strlen too.
static volatile size_t alarm_length;
static void on_alarm(int signal) {
  (void)signal;
  alarm_length += strlen(text);
}

static size_t loop(long n) {
  size_t total = 0;
  for (long i = 0; i < n; i++) {
    char *copy = strdup(text);
    total += strlen(copy);
    free(copy);
  }
  return total;
}

static void *thread_loop(void *n) { return (void *)loop((long)n); }

static volatile int stop_calling;
static int (*ferror_pointer)(FILE *);

static long made[4];   // each thread's calls so far (`late`)

static long calls_made(void) {
  long total = 0;
  for (int t = 0; t < 4; t++) total += __atomic_load_n(&made[t], __ATOMIC_RELAXED);
  return total;
}

static void *call_ferror(void *slot) {
  long *mine = slot;
  FILE *file = fopen("/dev/null", "r");
  long calls = 0, errors = 0;
  while (!stop_calling) {
    errors += ferror_pointer(file) != 0;
    calls++;
    __atomic_store_n(mine, calls, __ATOMIC_RELAXED);
  }
  fclose(file);
  return (void *)(errors ? -1 : calls);
}

static int count_rows(void *counter, int columns, char **values, char **names) {
  (void)columns; (void)names;
  *(int *)counter = atoi(values[0]);
  return 0;
}

static long levels_left, deepest;

// qsort's comparator for `deep`: sorts a pair again, one level down, until none is left.
static int nest(const void *a, const void *b) {
  static long level;
  if (levels_left > 1) {
    levels_left--;
    level++;
    if (level + 1 > deepest) deepest = level + 1;
    long two[2] = {2, 1};
    qsort(two, 2, sizeof two[0], nest);
    level--;
  }
  return (int)(*(const long *)a - *(const long *)b);
}

static jmp_buf escape;
static int escaping(const void *a, const void *b) {
  (void)a;
  (void)b;
  longjmp(escape, 1);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "loop";
  long n = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
  if (strcmp(mode, "loop") == 0) {
    printf("total %zu\n", loop(n));
    return 3;
  }
  if (strcmp(mode, "system") == 0 && argc > 2) {
    // A command whose output and errors go to a file, run by a shell that
    // system() starts with glibc's own exec.
    char command[512];
    snprintf(command, sizeof command, "/bin/echo child > '%s' 2>&1", argv[2]);
    return system(command) == 0 ? 0 : 1;
  }
  if (strcmp(mode, "longjmp") == 0) {
    // n comparisons that longjmp out of qsort to a setjmp outside any
    // traced call, then three strlen calls.
    for (long i = 0; i < n; i++) {
      int v[4] = {4, 3, 2, 1};
      if (!setjmp(escape)) qsort(v, 4, sizeof v[0], escaping);
    }
    const char *volatile words[3] = {"a", "bb", "ccc"};   // (not folded into constants)
    size_t total = strlen(words[0]) + strlen(words[1]) + strlen(words[2]);
    printf("%zu\n", total);
    return 0;
  }
  if (strcmp(mode, "ends") == 0 && argc > 2) {
    // A traced call, then the image ends by one of these.
    char *copy = strdup("ends");
    printf("%zu\n", strlen(copy));
    fflush(stdout);
    free(copy);
    if (strcmp(argv[2], "_Exit") == 0) _Exit(0);
    if (strcmp(argv[2], "quick_exit") == 0) quick_exit(0);
    if (strcmp(argv[2], "execl") == 0) execl("/bin/true", "true", (char *)NULL);
    if (strcmp(argv[2], "execlp") == 0) execlp("true", "true", (char *)NULL);
    if (strcmp(argv[2], "execle") == 0) execle("/bin/true", "true", (char *)NULL, __environ);
    return 1;
  }
  if (strcmp(mode, "pageend") == 0) {
    // A 36-character string that begins 15 bytes before a page's end: the
    // tracer takes its first bytes one by one, then eight at a time.
    char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) return 2;
    char *text = pages + 4096 - 15;
    memcpy(text, "abcdefghijklmnopqrstuvwxyz0123456789", 37);
    printf("%zu\n", strlen(text));
    return 0;
  }
  if (strcmp(mode, "sqlite") == 0) {
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 2;
    sqlite3_exec(db, "CREATE TABLE t(x INTEGER)", NULL, NULL, NULL);
    for (long i = 0; i < n; i++) sqlite3_exec(db, "INSERT INTO t VALUES (1)", NULL, NULL, NULL);
    sqlite3_stmt *statement;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &statement, NULL);
    int rows = 0;
    while (sqlite3_step(statement) == SQLITE_ROW) rows = sqlite3_column_int(statement, 0);
    sqlite3_finalize(statement);
    int again = 0;
    sqlite3_exec(db, "SELECT count(*) FROM t", count_rows, &again, NULL);
    // One that fails: no such table.
    int status = sqlite3_exec(db, "SELECT * FROM missing", NULL, NULL, NULL);
    sqlite3_close(db);
    printf("rows %d %d, missing table: %d\n", rows, again, status);
    return 0;
  }
  if (strcmp(mode, "threads") == 0) {
    long threads = n, each = argc > 3 ? strtol(argv[3], NULL, 10) : 1000;
    pthread_t ids[64];
    if (threads > 64) threads = 64;
    for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, thread_loop, (void *)each);
    size_t total = 0;
    for (long t = 0; t < threads; t++) {
      void *result;
      pthread_join(ids[t], &result);
      total += (size_t)result;
    }
    printf("total %zu\n", total);
    return 0;
  }
  if (strcmp(mode, "fork") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      printf("child total %zu\n", loop(n));
      fflush(stdout);
      _exit(0);
    }
    size_t total = loop(n);
    int status = 0;
    waitpid(child, &status, 0);
    printf("parent total %zu, child status %d\n", total, WEXITSTATUS(status));
    return 0;
  }
  if (strcmp(mode, "fd") == 0) {
    const char *number = getenv("HOOK_TRACE_FD");
    int flags = number ? fcntl(atoi(number), F_GETFD) : -1;
    printf("%s\n", flags < 0 ? "none" : (flags & FD_CLOEXEC) ? "close-on-exec" : "inherited");
    return 0;
  }
  if (strcmp(mode, "log") == 0 && argc > 2) {
    int log = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log < 0) return 5;
    dup2(log, 2);
    close(log);
    size_t total = loop(10);
    fprintf(stderr, "the program's own line\n");
    printf("total %zu\n", total);
    return 0;
  }
  if (strcmp(mode, "signals") == 0) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_alarm;
    sigaction(SIGALRM, &action, NULL);
    sigset_t alarm_only;   // (a mask inherited from the parent may block it)
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);
    struct itimerval every = {{0, 20}, {0, 20}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, NULL);
    size_t total = 0;
    for (long i = 0; i < n; i++) total += strlen(text);
    setitimer(ITIMER_REAL, &off, NULL);
    printf("total %zu, signals %s\n", total, alarm_length > 0 ? "handled" : "none");
    return 0;
  }
  if (strcmp(mode, "vfork") == 0) {
    size_t total = loop(n);
    fflush(stdout);
    int statuses = 0;
    for (int round = 0; round < 2; round++) {
      pid_t child = vfork();
      if (child == 0) {
        char *args[] = {"true", NULL};
        execv(round == 0 ? "/bin/true" : "/nonexistent/true", args);
        _exit(7);
      }
      int status = 0;
      waitpid(child, &status, 0);
      statuses = statuses * 10 + WEXITSTATUS(status);
    }
    total += loop(n);
    printf("total %zu, children %d\n", total, statuses);
    return 0;
  }
  if (strcmp(mode, "exec") == 0) {
    printf("exec\n");
    fflush(stdout);
    char count[32];
    snprintf(count, sizeof count, "%ld", n);
    char *args[] = {argv[0], "loop", count, NULL};
    execv("/proc/self/exe", args);
    return 4;
  }
  if (strcmp(mode, "late") == 0) {
    ferror_pointer = (int (*)(FILE *))dlsym(RTLD_DEFAULT, "ferror");
    pthread_t ids[4];
    for (int t = 0; t < 4; t++) pthread_create(&ids[t], NULL, call_ferror, &made[t]);
    struct timespec pause = {0, n * 1000000};
    nanosleep(&pause, NULL);
    void *bz2 = dlopen("libbz2.so.1.0", RTLD_NOW);
    long at_load = calls_made();
    nanosleep(&pause, NULL);
    struct timespec tick = {0, 1000000};
    for (int waited = 0; calls_made() - at_load < 4000 && waited < 5000; waited++) nanosleep(&tick, NULL);
    stop_calling = 1;
    long total = 0, failed = 0;
    for (int t = 0; t < 4; t++) {
      void *result;
      pthread_join(ids[t], &result);
      if ((long)result < 0) failed = 1; else total += (long)result;
    }
    printf("late: libbz2 %s, %s\n", bz2 ? "loaded" : "not loaded", failed ? "a call failed" : "every call returned 0");
    fprintf(stderr, "calls %ld\n", total);
    return 0;
  }
  if (strcmp(mode, "deep") == 0) {
    levels_left = n;
    long two[2] = {2, 1};
    qsort(two, 2, sizeof two[0], nest);
    printf("depth %ld\n", deepest);
    return 0;
  }
  if (strcmp(mode, "fail") == 0) {
    int fd = open("/nonexistent/hook-trace", O_RDONLY);
    int closed = close(-1);
    FILE *file = fopen("/nonexistent/hook-trace", "r");
    printf("failed: %d %d %d\n", fd, closed, file == NULL);
    return 1;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
