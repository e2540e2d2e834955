#include "channels.h"

#include <netinet/in.h>
#include <sys/stat.h>

#include <cstring>
#include <unordered_map>

#include "descriptor_memo.h"
#include "futex_lock.h"
#include "reentrancy.h"
#include "sys.h"

namespace coz {
namespace {

bool same_address(const sockaddr_storage& a, socklen_t a_len, const sockaddr_storage& b, socklen_t b_len) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
  }
  // AF_UNIX and the rest: the address bytes (an unnamed UNIX socket's is the family alone).
  return a_len == b_len && std::memcmp(&a, &b, a_len) == 0;
}

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL; }

uint64_t inode_id(dev_t dev, ino_t ino) { return mix(mix(0x1F00, dev), ino) | 1; }

/// An address as same_address compares it: inet by family, port and
/// address; the rest by their bytes (an unnamed UNIX socket: its family).
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

/// channel_id's answers. Under `coz run --system` each read and write of a
/// speedup experiment names its channel (wait.cpp): an fstat and a
/// getsockname each time, ~23,000 of each a second in memcached under load
/// (perf stat), and only while experiments inserted delays: a cost their
/// 0% baselines did not pay.
DescriptorMemo<4096> g_channels;

uint64_t learn_channel_id(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 0;
  if (!S_ISSOCK(st.st_mode)) return inode_id(st.st_dev, st.st_ino);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return 0;
  return address_id(local, len);
}

}  // namespace

uint64_t channel_id(int fd) {
  return g_channels.remember(fd, [fd] { return learn_channel_id(fd); });
}

void forget_channel(int fd) { g_channels.forget(fd); }

void forget_channels(unsigned first, unsigned last) { g_channels.forget_range(first, last); }

WaitedChannel::WaitedChannel(int fd) : fd_(fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  if (S_ISFIFO(st.st_mode)) {
    type_ = Type::Pipe;
  } else if (S_ISSOCK(st.st_mode)) {
    peer_len_ = sizeof peer_;
    type_ = getpeername(fd, reinterpret_cast<sockaddr*>(&peer_), &peer_len_) == 0 ? Type::Socket : Type::Other;
  } else {
    type_ = Type::Other;
  }
  channel_id_ = type_ == Type::Socket ? address_id(peer_, peer_len_) : inode_id(dev_, ino_);
}

bool WaitedChannel::reached_by(const WakeRecord& record) const {
  if (type_ == Type::Unknown || record.kind == WakeKind::Signal) return false;
  if (record.foreign) return record.channel != 0 && record.channel == channel_id_;
  int w = record.target;
  switch (type_) {
    case Type::Other:
      if (w == fd_) return true;
      if (record.kind == WakeKind::Unlock) {  // a lock on the same file through another descriptor
        struct stat st;
        return fstat(w, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
      }
      return false;
    case Type::Pipe: {
      struct stat st;
      return w != fd_ && fstat(w, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_;
    }
    case Type::Socket: {
      if (w == fd_ || (record.kind != WakeKind::Write && record.kind != WakeKind::Connect &&
                       record.kind != WakeKind::Read)) {
        return false;
      }
      sockaddr_storage local{};
      socklen_t local_len = sizeof local;
      if (getsockname(w, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
      return same_address(local, local_len, peer_, peer_len_);
    }
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
