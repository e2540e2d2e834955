// tcp_rpc: request/response over a TCP connection on loopback, one request
// in flight. The server reads a request, runs handle_work (0.12 ms) and
// replies; the client runs client_work (0.10 ms) between requests. Each
// side blocks in a read once per request: ~8,000 switches per second of
// their CPU time, between the runtime's two rates for trading a trap event
// for a CPU-time timer (sample_policy::switch_verdict).
//
// The client is a thread of the program by default: both of its sockets'
// peers are the program's own ports, so neither thread may take a timer
// (their hand-offs are shorter than a tick). With --outside-client it is
// another process, exec'd without LD_PRELOAD (no runtime of ours): the
// server is then woken only from outside, and trades its event. With
// --forked-server too, the server is a forked child of the program's first
// process, which only waits (the whole-CPU events are the first process's).
//
// One COZ_PROGRESS_NAMED("request served") per request. Variant:
// -DHALVE_HANDLE_WORK (the server's work halved).
// Usage: tcp_rpc [-n REQUESTS] [--exit-status N] [--outside-client [--forked-server]];
// default ~3 s.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <coz.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "program_common.h"

extern char** environ;

namespace {

using coz_programs::kStepsPerMs;

#ifdef HALVE_HANDLE_WORK
constexpr uint64_t kHandleSteps = kStepsPerMs * 12 / 200;
#else
constexpr uint64_t kHandleSteps = kStepsPerMs * 12 / 100;
#endif
constexpr uint64_t kClientSteps = kStepsPerMs * 10 / 100;
constexpr uint64_t kDefaultRequests = 10'000;  // ~0.3 ms a round trip: ~3 s

volatile uint64_t g_sink = 0;

__attribute__((noinline)) uint64_t handle_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL + i;  // @line:handle_work
  return x;
}

__attribute__((noinline)) uint64_t client_work(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x = (x ^ (x >> 31)) * 0x94d049bb133111ebULL + i;  // @line:client_work
  return x;
}

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

void send_all(int fd, const void* data, size_t size) {
  if (write(fd, data, size) != static_cast<ssize_t>(size)) die("write");
}

void receive_all(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    ssize_t got = read(fd, bytes, size);
    if (got <= 0) die("read");
    bytes += got;
    size -= static_cast<size_t>(got);
  }
}

void no_delay(int fd) {
  int on = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) die("setsockopt");
}

/// Listens on an ephemeral port of 127.0.0.1; returns the socket, `port` its port.
int listen_on_loopback(uint16_t& port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) die("bind");
  if (listen(fd, 1) != 0) die("listen");
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) die("getsockname");
  port = ntohs(address.sin_port);
  return fd;
}

void run_client(uint16_t port, uint64_t requests) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) die("connect");
  no_delay(fd);
  uint64_t x = 7;
  for (uint64_t i = 0; i < requests; ++i) {
    send_all(fd, &i, sizeof i);
    uint64_t reply = 0;
    receive_all(fd, &reply, sizeof reply);
    x = client_work(x + reply, kClientSteps);
  }
  g_sink = x;
  close(fd);
}

void serve(int listener, uint64_t requests) {
  int fd = accept(listener, nullptr, nullptr);
  if (fd < 0) die("accept");
  no_delay(fd);
  uint64_t x = 3;
  for (uint64_t i = 0; i < requests; ++i) {
    uint64_t request = 0;
    receive_all(fd, &request, sizeof request);
    x = handle_work(x + request, kHandleSteps);
    send_all(fd, &x, sizeof x);
    COZ_PROGRESS_NAMED("request served");
  }
  g_sink = x;
  close(fd);
}

/// The client as a process of its own: this program again, exec'd without
/// LD_PRELOAD, so that no profiler runtime follows it.
pid_t spawn_outside_client(const char* self, uint16_t port, uint64_t requests) {
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  std::string port_text = std::to_string(port), requests_text = std::to_string(requests);
  char client_only[] = "--client-only";
  char* argv[] = {const_cast<char*>(self), client_only, port_text.data(), requests_text.data(), nullptr};
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    execve("/proc/self/exe", argv, env.data());
    _exit(127);
  }
  return child;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--client-only") == 0) {
    run_client(static_cast<uint16_t>(std::atoi(argv[2])), std::strtoull(argv[3], nullptr, 10));
    return 0;
  }
  bool outside_client = false, forked_server = false;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--outside-client") == 0) {
      outside_client = true;
    } else if (std::strcmp(argv[i], "--forked-server") == 0) {
      forked_server = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const coz_programs::Args args = coz_programs::parse_args(static_cast<int>(rest.size()), rest.data(), kDefaultRequests);
  coz_programs::Stopwatch watch;
  uint16_t port = 0;
  int listener = listen_on_loopback(port);
  if (outside_client) {
    pid_t child = spawn_outside_client(argv[0], port, args.n);
    pid_t server = forked_server ? fork() : 0;
    if (server < 0) die("fork");
    if (server == 0) {
      serve(listener, args.n);
      if (forked_server) std::exit(0);  // through exit: the child's runtime ends as a process does
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "tcp_rpc: the client failed\n");
      return 1;
    }
    if (forked_server && (waitpid(server, &status, 0) != server || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      std::fprintf(stderr, "tcp_rpc: the server failed\n");
      return 1;
    }
  } else {
    std::thread client(run_client, port, args.n);
    serve(listener, args.n);
    client.join();
  }
  close(listener);
  std::printf("tcp_rpc: %llu requests in %.3f s\n", static_cast<unsigned long long>(args.n), watch.seconds());
  return args.exit_status;
}
