#include "channels.h"

#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <unordered_map>

#include "descriptor_memo.h"
#include "futex_lock.h"
#include "nonblocking_set.h"
#include "reentrancy.h"
#include "sys.h"
#include "wake_origin.h"

namespace coz {
namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL; }

/// The low bits of a name that WaitedChannel's memo uses for its Type;
/// names are compared without them (same_channel).
constexpr uint64_t type_bits = 3;
bool same_channel(uint64_t a, uint64_t b) { return a != 0 && (a & ~type_bits) == (b & ~type_bits); }

uint64_t inode_id(dev_t dev, ino_t ino) { return mix(mix(0x1F00, dev), ino) | 1; }

/// An address's name: inet by family, port and address; the rest by their
/// bytes (an unnamed UNIX socket: its family alone).
uint64_t address_id(const sockaddr_storage& a, socklen_t len) {
  uint64_t h = mix(0x50C7, a.ss_family);
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    return mix(mix(h, x.sin_port), x.sin_addr.s_addr) | 1;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    uint64_t words[2];
    std::memcpy(words, &x.sin6_addr, sizeof words);
    return mix(mix(mix(h, x.sin6_port), words[0]), words[1]) | 1;
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(&a);
  for (socklen_t i = 0; i < len && i < sizeof a; ++i) h = mix(h, bytes[i]);
  return h | 1;
}

/// Whether `fd` is a listening socket.
bool listening(int fd) {
  int on = 0;
  socklen_t size = sizeof on;
  return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &size) == 0 && on != 0;
}

/// `fd`'s own address as connect_target_id names it; 0 if it has none.
uint64_t own_address_id(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return 0;
  return connect_target_id(reinterpret_cast<const sockaddr*>(&local), len);
}

/// Whether a connect to `target` (connect_target_id) reached `fd`, a
/// listening socket of that address. Two system calls, made only for the
/// connect records a waiter on a listener checks, after a wait during which
/// delays accrued.
bool connect_reached(uint64_t target, int fd) {
  return target != 0 && listening(fd) && own_address_id(fd) == target;
}

/// The target of socket `w`, which a thread of this process connected: the
/// connect is over by the time a waiter checks, so it is `w`'s peer.
uint64_t peer_address_id(int w) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (getpeername(w, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return 0;
  return connect_target_id(reinterpret_cast<const sockaddr*>(&peer), len);
}

/// channel_id's answers. Each record a waiter checks names its far end
/// (WaitedChannel::reached_by), and under `coz run --system` each read and
/// write of a speedup experiment names its own channel (wait.cpp): an
/// fstat and a getsockname each time were ~23,000 of each a second in
/// memcached under load (perf stat), and ~140,000 getsockname for the
/// checks, all only while experiments inserted delays: a cost their 0%
/// baselines did not pay.
DescriptorMemo<4096> g_channels;

/// A connection's name from one end: its own address and its peer's.
/// Named by the local address alone, every socket a server accepted on one
/// port would be the same channel to each of its clients.
uint64_t connection_id(const sockaddr_storage& near, socklen_t near_len, const sockaddr_storage& far,
                       socklen_t far_len) {
  return mix(address_id(near, near_len), address_id(far, far_len)) | 1;
}

/// A connected socket's own address and its peer's; false where either
/// cannot be told. A socket not yet connected (a connect posts its wake
/// before the call) has no peer: named then and remembered, its name would
/// outlive the connect.
bool connection_ends(int fd, sockaddr_storage& local, socklen_t& local_len, sockaddr_storage& peer,
                     socklen_t& peer_len) {
  local_len = peer_len = sizeof(sockaddr_storage);
  return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0 &&
         getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0;
}

/// 0 where it cannot be told: a socket with no peer (yet).
uint64_t learn_channel_id(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  if (!S_ISSOCK(st.st_mode)) return inode_id(st.st_dev, st.st_ino);
  sockaddr_storage local{}, peer{};
  socklen_t local_len, peer_len;
  if (!connection_ends(fd, local, local_len, peer, peer_len)) return 0;
  return connection_id(local, local_len, peer, peer_len);
}

/// What a waiter knows of the descriptor it waits on, remembered as its
/// far end's name (as channel_id names it) with the Type in the low bits.
/// Every wait of a speedup experiment on a busy line looks it up: an fstat
/// and a getpeername each time were ~23,000 system calls a second in
/// memcached under load.
DescriptorMemo<4096> g_waited;

/// The descriptors the program made non-blocking (nonblocking_set.h).
NonBlockingSet g_nonblocking;

/// What WaitedChannel keeps of `fd`; 0 where it cannot be told. A socket
/// with no peer yet (a listening one, or one whose connect is under way)
/// waits on its own inode, which goes to `unkept` instead: not remembered,
/// as a connect may yet give it a peer.
uint64_t learn_waited(int fd, uint64_t& unkept) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  const uint64_t inode = inode_id(st.st_dev, st.st_ino) & ~type_bits;
  if (S_ISFIFO(st.st_mode)) return inode | WaitedChannel::pipe_code;
  if (!S_ISSOCK(st.st_mode)) return inode | WaitedChannel::other_code;
  sockaddr_storage local{}, peer{};
  socklen_t local_len, peer_len;
  if (connection_ends(fd, local, local_len, peer, peer_len)) {
    return (connection_id(peer, peer_len, local, local_len) & ~type_bits) | WaitedChannel::socket_code;
  }
  unkept = inode | WaitedChannel::other_code;
  return 0;
}

}  // namespace

// A tag of its own, so that a connect's target never equals a connection's
// name (channel_id).
uint64_t connect_target_id(const sockaddr* a, socklen_t len) {
  if (a == nullptr || len < static_cast<socklen_t>(sizeof(sa_family_t))) return 0;
  if (a->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    return mix(0xACCE, reinterpret_cast<const sockaddr_in*>(a)->sin_port) | 1;
  }
  if (a->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    return mix(0xACCE, reinterpret_cast<const sockaddr_in6*>(a)->sin6_port) | 1;
  }
  if (a->sa_family != AF_UNIX) return 0;
  // The path, up to its NUL: a client may pass the whole structure or the
  // path's length, with or without the NUL. An abstract name (a leading
  // NUL) is all of its bytes.
  const auto* un = reinterpret_cast<const sockaddr_un*>(a);
  const auto offset = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path));
  if (len <= offset) return 0;  // unnamed
  size_t n = std::min<size_t>(len - offset, sizeof un->sun_path);
  if (un->sun_path[0] != '\0') n = strnlen(un->sun_path, n);
  uint64_t h = mix(0xACCE, AF_UNIX);
  for (size_t i = 0; i < n; ++i) h = mix(h, static_cast<unsigned char>(un->sun_path[i]));
  return h | 1;
}


uint64_t channel_id(int fd) {
  return g_channels.remember(fd, [fd] { return learn_channel_id(fd); });
}

void forget_channel(int fd) {
  g_channels.forget(fd);
  g_waited.forget(fd);
  g_nonblocking.forget(fd);
  forget_wake_origin(fd);
}

void forget_channels(unsigned first, unsigned last) {
  g_channels.forget_range(first, last);
  g_waited.forget_range(first, last);
  g_nonblocking.forget_range(first, last);
  forget_wake_origins(first, last);
}

void note_nonblocking(int fd, bool nonblocking) { g_nonblocking.note(fd, nonblocking); }

bool never_blocks(int fd) { return g_nonblocking.has(fd); }

WaitedChannel::WaitedChannel(int fd) : fd_(fd) {
  uint64_t unkept = 0;
  const uint64_t known = g_waited.remember(fd, [fd, &unkept] { return learn_waited(fd, unkept); });
  const uint64_t name = known != 0 ? known : unkept;
  type_ = static_cast<Type>(name & type_bits);
  channel_id_ = name & ~type_bits;
}

bool WaitedChannel::reached_by(const WakeRecord& record) const {
  if (type_ == Type::Unknown || record.kind == WakeKind::Signal) return false;
  if (record.foreign && record.kind == WakeKind::Connect) {
    return type_ == Type::Other && connect_reached(record.channel, fd_);
  }
  if (record.foreign) return record.channel != 0 && same_channel(record.channel, channel_id_);
  int w = record.target;
  switch (type_) {
    case Type::Other:
      if (w == fd_) return true;
      // A listener (in accept, or found ready by poll or epoll_wait): a
      // thread connected to it.
      if (record.kind == WakeKind::Connect) return connect_reached(peer_address_id(w), fd_);
      // A lock on the same file through another descriptor.
      return record.kind == WakeKind::Unlock && same_channel(channel_id(w), channel_id_);
    // The far end by its remembered name (channel_id): a waiter checks
    // every record posted while it waited, and with an fstat or a
    // getsockname per record, memcached's waits under load made ~10 such
    // calls per request in speedup experiments alone (their 0% baselines
    // post nothing), which cost it ~9% of its throughput there.
    case Type::Pipe:
      return w != fd_ && same_channel(channel_id(w), channel_id_);
    case Type::Socket:
      if (w == fd_ || (record.kind != WakeKind::Write && record.kind != WakeKind::Connect &&
                       record.kind != WakeKind::Read)) {
        return false;
      }
      return same_channel(channel_id(w), channel_id_);
    case Type::Unknown: break;
  }
  return false;
}

bool signal_reaches(const WakeRecord& record, int tid) {
  return !record.foreign && record.kind == WakeKind::Signal && (record.target == 0 || record.target == tid);
}

// ---- epoll ---------------------------------------------------------------------

namespace {

struct EpollKey {
  int epfd;
  uint64_t value;  // the event's data, or a descriptor
  bool operator==(const EpollKey& other) const { return epfd == other.epfd && value == other.value; }
};

struct EpollKeyHash {
  size_t operator()(const EpollKey& k) const { return std::hash<uint64_t>()(k.value * 31 + static_cast<uint64_t>(k.epfd)); }
};

/// (epfd, data) -> descriptor, and (epfd, descriptor) -> data so that a
/// re-registration or a removal drops the old entry: the maps stay as large
/// as the registrations, even when the program closes descriptors without
/// EPOLL_CTL_DEL (the kernel drops those itself).
struct EpollRegistry {
  FutexLock lock;
  std::unordered_map<EpollKey, int, EpollKeyHash> descriptor_of;
  std::unordered_map<EpollKey, uint64_t, EpollKeyHash> data_of;
};

EpollRegistry& registry() {
  static auto* r = new EpollRegistry;  // never destroyed: threads may call epoll_ctl during exit
  return *r;
}

}  // namespace

void epoll_registered(int epfd, int op, int fd, const epoll_event* event) {
  // A signal handler's epoll_ctl that interrupted this very function would
  // wait for the lock its thread holds: it goes unnoted (its wakes are
  // matched through data.fd, as for descriptors registered without us).
  if (in_runtime()) return;
  RuntimeSection section;  // the maps allocate
  EpollRegistry& r = registry();
  FutexGuard guard(r.lock);
  auto old = r.data_of.find({epfd, static_cast<uint64_t>(fd)});
  if (old != r.data_of.end()) {
    auto entry = r.descriptor_of.find({epfd, old->second});
    if (entry != r.descriptor_of.end() && entry->second == fd) r.descriptor_of.erase(entry);
    r.data_of.erase(old);
  }
  if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && event) {
    r.data_of[{epfd, static_cast<uint64_t>(fd)}] = event->data.u64;
    r.descriptor_of[{epfd, event->data.u64}] = fd;
  }
}

int epoll_descriptor(int epfd, uint64_t data) {
  EpollRegistry& r = registry();
  FutexGuard guard(r.lock);
  auto it = r.descriptor_of.find({epfd, data});
  return it == r.descriptor_of.end() ? -1 : it->second;
}

FutexLock& epoll_registry_lock() { return registry().lock; }

}  // namespace coz
