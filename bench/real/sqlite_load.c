// The program for bench/real/sqlite.py: an application with SQLite compiled
// in (sqlite3.c, Debian's source, patched with injected work), doing what many
// programs do with it.
//
// - The worker thread runs point queries by key on an in-memory table of
//   ROWS rows, one prepared statement, random keys; each answered query is a
//   visit of the progress point "query".
// - A monitor thread, on its own connection and database, counts a small
//   table's rows every millisecond: work off the queries' path (on a machine
//   with a core to spare for it).
//
//     sqlite_load SECONDS       prints "queries/s: RATE"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <coz.h>

#include "sqlite3.h"

enum { ROWS = 200000 };

static atomic_int g_stop;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void must(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    fprintf(stderr, "sqlite_load: %s: %s\n", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    exit(1);
  }
}

static sqlite3* open_table(int rows) {
  sqlite3* db = NULL;
  must(sqlite3_open(":memory:", &db), db, "open");
  must(sqlite3_exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); BEGIN", 0, 0, 0), db, "create");
  sqlite3_stmt* insert = NULL;
  must(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, printf('value-%08d-%s', ?, hex(randomblob(8))))", -1,
                          &insert, 0),
       db, "prepare insert");
  for (int k = 0; k < rows; ++k) {
    sqlite3_bind_int(insert, 1, k);
    sqlite3_bind_int(insert, 2, k);
    must(sqlite3_step(insert), db, "insert");
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  must(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
  return db;
}

static void* monitor(void* arg) {
  (void)arg;
  sqlite3* db = open_table(1000);
  sqlite3_stmt* count = NULL;
  must(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &count, 0), db, "prepare count");
  struct timespec tick = {0, 1000000};
  while (!atomic_load(&g_stop)) {
    while (sqlite3_step(count) == SQLITE_ROW) {
    }
    sqlite3_reset(count);
    nanosleep(&tick, NULL);
  }
  sqlite3_finalize(count);
  sqlite3_close(db);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2 || atof(argv[1]) <= 0) {
    fprintf(stderr, "usage: sqlite_load SECONDS\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  sqlite3* db = open_table(ROWS);
  sqlite3_stmt* query = NULL;
  must(sqlite3_prepare_v2(db, "SELECT v FROM t WHERE k = ?", -1, &query, 0), db, "prepare query");

  pthread_t watcher;
  pthread_create(&watcher, NULL, monitor, NULL);

  uint64_t state = 88172645463325252ull, answered = 0, bytes = 0;
  double start = now_s(), end = start + seconds;
  while ((answered & 1023) != 0 || now_s() < end) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    sqlite3_bind_int(query, 1, (int)(state % ROWS));
    while (sqlite3_step(query) == SQLITE_ROW) bytes += (uint64_t)sqlite3_column_bytes(query, 0);
    sqlite3_reset(query);
    ++answered;
    COZ_PROGRESS_NAMED("query");
  }
  double elapsed = now_s() - start;
  atomic_store(&g_stop, 1);
  pthread_join(watcher, NULL);
  sqlite3_finalize(query);
  sqlite3_close(db);
  printf("queries/s: %.1f (%llu queries, %llu bytes)\n", (double)answered / elapsed, (unsigned long long)answered,
         (unsigned long long)bytes);
  return 0;
}
