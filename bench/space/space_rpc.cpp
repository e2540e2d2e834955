// space_rpc: client threads in strict request/response with one server
// thread, over pipes, UNIX stream sockets or eventfds, one channel each way
// per client. A client prepares a request, sends it and blocks for the
// reply, then counts a COZ_PROGRESS. The server polls every client's
// request channel, handles what is ready and replies, then does its
// after-reply work (a log), which overlaps the client's next preparation.
// With processes=1 the server runs in a forked child process (profile it
// with `coz run --system`).
//
// Parameters: clients=1..8, transport=0 (pipe) | 1 (socket) | 2 (eventfd),
// processes=0|1, client=US, server=US, log=US (work per request), seconds,
// warmup. Marked lines: client, server, log.
#include <coz.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "space.h"

namespace {

SPACE_WORK(client_work)  // @line:client
SPACE_WORK(server_work)  // @line:server
SPACE_WORK(log_work)     // @line:log

enum Transport { kPipe = 0, kSocket = 1, kEventfd = 2 };

// A request or reply is one 8-byte word; the client's goodbye is kBye.
// Over an eventfd a request adds 1 and a goodbye 2 (a client has at most
// one message in flight, so they never add up).
constexpr uint64_t kBye = ~uint64_t(0);

struct Channel {
  int request_read = -1, request_write = -1;  // client -> server
  int reply_read = -1, reply_write = -1;      // server -> client
};

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

Channel open_channel(int transport) {
  Channel c;
  if (transport == kPipe) {
    int request[2], reply[2];
    if (pipe(request) != 0 || pipe(reply) != 0) die("pipe");
    c = {request[0], request[1], reply[0], reply[1]};
  } else if (transport == kSocket) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) die("socketpair");
    c = {ends[1], ends[0], ends[0], ends[1]};  // the server's end is ends[1]
  } else {
    const int request = eventfd(0, 0), reply = eventfd(0, 0);
    if (request < 0 || reply < 0) die("eventfd");
    c = {request, request, reply, reply};
  }
  return c;
}

void send_word(int fd, int transport, uint64_t word) {
  if (transport == kEventfd) word = word == kBye ? 2 : 1;
  if (write(fd, &word, sizeof word) != ssize_t(sizeof word)) die("write");
}

uint64_t receive_word(int fd, int transport) {
  uint64_t word = 0;
  if (read(fd, &word, sizeof word) != ssize_t(sizeof word)) die("read");
  if (transport == kEventfd) return word == 2 ? kBye : 1;
  return word;
}

void serve(const std::vector<Channel>& channels, int transport, uint64_t server_steps, uint64_t log_steps) {
  std::vector<pollfd> fds;
  for (const Channel& c : channels) fds.push_back({c.request_read, POLLIN, 0});
  size_t open = channels.size();
  uint64_t x = 0x1234;
  while (open > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) die("poll");
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & POLLIN) == 0 || fds[i].fd < 0) continue;
      const uint64_t request = receive_word(fds[i].fd, transport);
      if (request == kBye) {
        fds[i].fd = -1;  // poll ignores it from now on
        --open;
        continue;
      }
      x = server_work(x ^ request, server_steps);
      send_word(channels[i].reply_write, transport, x & 0xffff);
      x = log_work(x, log_steps);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  space::Params params(argc, argv);
  const double seconds = params.number("seconds", 3);
  const double warmup = params.number("warmup", 0.3);
  const int clients = params.count("clients", 1, 1, 8);
  const int transport = params.count("transport", kPipe, kPipe, kEventfd);
  const bool processes = params.count("processes", 0, 0, 1) == 1;
  const uint64_t client_steps = params.steps("client", "client", 50);
  const uint64_t server_steps = params.steps("server", "server", 50);
  const uint64_t log_steps = params.steps("log", "log", 10);
  params.done();

  std::vector<Channel> channels;
  for (int i = 0; i < clients; ++i) channels.push_back(open_channel(transport));
  pid_t server_process = -1;
  std::thread server_thread;
  if (processes) {
    server_process = fork();
    if (server_process < 0) die("fork");
    if (server_process == 0) {
      serve(channels, transport, server_steps, log_steps);
      std::exit(0);
    }
  } else {
    server_thread = std::thread([&] { serve(channels, transport, server_steps, log_steps); });
  }

  std::atomic<bool> stop{false};
  std::vector<space::Counter> replies(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      const Channel& c = channels[size_t(i)];
      uint64_t x = uint64_t(i) + 1;
      while (!stop.load(std::memory_order_relaxed)) {
        x = client_work(x, client_steps);
        send_word(c.request_write, transport, x & 0xffff);
        x ^= receive_word(c.reply_read, transport);
        replies[size_t(i)].add();
        COZ_PROGRESS_NAMED("reply");
      }
      send_word(c.request_write, transport, kBye);
    });
  }

  space::measure_window(params.program(), warmup, seconds, stop, [&] { return space::sum(replies); });
  for (std::thread& t : threads) t.join();
  if (processes) {
    int status = 0;
    if (waitpid(server_process, &status, 0) != server_process || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      die("server process");
  } else {
    server_thread.join();
  }
  return 0;
}
