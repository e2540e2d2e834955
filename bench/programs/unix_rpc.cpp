// unix_rpc: a client and a server inside one process, joined by a UNIX
// stream socket (bound to a path, listen/accept/connect, then send/recv).
// Each round the client runs client_prepare (0.2 ms), sends a request and
// waits in recv; the server, in recv, runs server_handle (0.4 ms), sends the
// reply, then logs the request (server_log, 0.1 ms) while the client
// prepares its next one; the client counts a COZ_PROGRESS per reply.
// Halving server_handle saves 0.2 of 0.6 ms per round (33.3%); halving
// server_log changes nothing (it overlaps the client's longer prepare).
//
// Variants: -DHALVE_HANDLE_WORK (real ~33.3%), -DHALVE_LOG_WORK (~0%).
// Usage: unix_rpc [-n ROUNDS] [--exit-status N]; default ~4 s.
#include <coz.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "program_common.h"

namespace {

using coz_programs::kStepsPerMs;

constexpr uint64_t kPrepareSteps = kStepsPerMs * 2 / 10;
#ifdef HALVE_HANDLE_WORK
constexpr uint64_t kHandleSteps = kStepsPerMs * 2 / 10;
#else
constexpr uint64_t kHandleSteps = kStepsPerMs * 4 / 10;
#endif
#ifdef HALVE_LOG_WORK
constexpr uint64_t kLogSteps = kStepsPerMs / 20;
#else
constexpr uint64_t kLogSteps = kStepsPerMs / 10;
#endif
constexpr uint64_t kDefaultRounds = 6'600;  // 0.6 ms per round: ~4 s

volatile uint64_t g_seed = 0x1234;
volatile uint64_t g_log = 0;

__attribute__((noinline)) uint64_t client_prepare(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:client_prepare
  return x;
}

__attribute__((noinline)) uint64_t server_handle(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:server_handle
  return x;
}

__attribute__((noinline)) uint64_t server_log(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 30)) * 0xd6e8feb86659fd93ULL + i;  // @line:server_log
  return x;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const coz_programs::Args args = coz_programs::parse_args(argc, argv, kDefaultRounds);
  const coz_programs::Stopwatch stopwatch;

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "/tmp/unix_rpc.%d.sock", static_cast<int>(getpid()));
  unlink(address.sun_path);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  check(listener >= 0 && bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
            listen(listener, 1) == 0,
        "listen");

  uint64_t server_sum = 0;
  std::thread server([&] {
    int conn = accept(listener, nullptr, nullptr);
    check(conn >= 0, "accept");
    uint64_t request;
    while (recv(conn, &request, sizeof request, MSG_WAITALL) == sizeof request) {
      server_sum = server_handle(server_sum + request, kHandleSteps);
      check(send(conn, &server_sum, sizeof server_sum, 0) == sizeof server_sum, "send reply");
      g_log = server_log(g_log ^ request, kLogSteps);
    }
    close(conn);
  });

  int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  check(client >= 0 && connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0, "connect");
  uint64_t x = g_seed;
  for (uint64_t i = 0; i < args.n; ++i) {
    x = client_prepare(x + i, kPrepareSteps);
    check(send(client, &x, sizeof x, 0) == sizeof x, "send request");
    uint64_t reply;
    check(recv(client, &reply, sizeof reply, MSG_WAITALL) == sizeof reply, "recv reply");
    x ^= reply;
    COZ_PROGRESS_NAMED("reply");  // @line:reply
  }
  close(client);
  server.join();
  close(listener);
  unlink(address.sun_path);

  std::printf("unix_rpc rounds=%llu checksum=%016llx\n", static_cast<unsigned long long>(args.n),
              static_cast<unsigned long long>(x));
  std::fprintf(stderr, "unix_rpc: elapsed=%.3f s\n", stopwatch.seconds());
  return args.exit_status;
}
