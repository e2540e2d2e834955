#include "wake_origin.h"

#include <netinet/in.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "descriptor_memo.h"

namespace coz {
namespace {

/// A set of ports (in network byte order, as the addresses hold them):
/// 8 KiB, constant-initialised, lock-free.
class PortSet {
 public:
  void add(uint16_t port) { words_[port / 64].fetch_or(bit(port), std::memory_order_relaxed); }
  bool has(uint16_t port) const { return (words_[port / 64].load(std::memory_order_relaxed) & bit(port)) != 0; }

 private:
  static uint64_t bit(uint16_t port) { return uint64_t{1} << (port % 64); }
  std::atomic<uint64_t> words_[65536 / 64] = {};
};

/// The ports of this process's own sockets that another of its sockets may
/// have as its peer: those it connected from, and those it listens on.
PortSet g_own_ports;
/// The ports this process connected to: a listener on one may be woken by
/// the program.
PortSet g_connect_targets;

/// What is remembered of a descriptor: its kind in the low bits, and for a
/// socket, the port the answer depends on above them.
enum Kind : uint64_t { Program = 1, Outside = 2, PeerPort = 3, ListenPort = 4 };
constexpr unsigned kind_bits = 3;

DescriptorMemo<4096> g_kinds;

/// The port of an internet address; false for any other family.
bool inet_port(const sockaddr_storage& a, uint16_t& port) {
  if (a.ss_family == AF_INET) {
    port = reinterpret_cast<const sockaddr_in&>(a).sin_port;
    return true;
  }
  if (a.ss_family == AF_INET6) {
    port = reinterpret_cast<const sockaddr_in6&>(a).sin6_port;
    return true;
  }
  return false;
}

uint64_t with_port(Kind kind, uint16_t port) { return (uint64_t{port} << kind_bits) | kind; }

/// A socket's kind: by its peer's port if it has a peer, by its own if it
/// listens; the program's if it is not an internet socket, or has neither.
uint64_t learn_socket(int fd) {
  sockaddr_storage address{};
  socklen_t len = sizeof address;
  uint16_t port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &len) == 0) {
    return inet_port(address, port) ? with_port(PeerPort, port) : Program;
  }
  int listening = 0;
  socklen_t size = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening) return Program;
  len = sizeof address;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) return Program;
  return inet_port(address, port) ? with_port(ListenPort, port) : Program;
}

/// 0 if `fd` is not open (nothing remembered).
uint64_t learn_kind(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  if (S_ISCHR(st.st_mode)) return Outside;
  if (S_ISSOCK(st.st_mode)) return learn_socket(fd);
  return Program;
}

/// The port of `fd`'s own address; false if it has none that is an internet one.
bool own_port(int fd, uint16_t& port) {
  sockaddr_storage address{};
  socklen_t len = sizeof address;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) == 0 && inet_port(address, port);
}

}  // namespace

bool woken_only_from_outside(int fd) {
  if (fd < 0) return false;
  const uint64_t known = g_kinds.remember(fd, [fd] { return learn_kind(fd); });
  const auto port = static_cast<uint16_t>(known >> kind_bits);
  switch (known & ((1u << kind_bits) - 1)) {
    case Outside: return true;
    case PeerPort: return !g_own_ports.has(port);
    case ListenPort: return !g_connect_targets.has(port);
    default: return false;
  }
}

void note_connect(int fd, const sockaddr* addr, socklen_t addr_len) {
  g_kinds.forget(fd);
  uint16_t port = 0;
  if (own_port(fd, port)) g_own_ports.add(port);
  sockaddr_storage target{};
  if (addr == nullptr || addr_len < static_cast<socklen_t>(sizeof(sa_family_t)) ||
      static_cast<size_t>(addr_len) > sizeof target) {
    return;
  }
  std::memcpy(&target, addr, addr_len);
  if (inet_port(target, port)) g_connect_targets.add(port);
}

void note_listen(int fd) {
  g_kinds.forget(fd);
  uint16_t port = 0;
  if (own_port(fd, port)) g_own_ports.add(port);
}

void forget_wake_origin(int fd) { g_kinds.forget(fd); }

void forget_wake_origins(unsigned first, unsigned last) { g_kinds.forget_range(first, last); }

}  // namespace coz
