// Which descriptor a wake reached (libcoz/runtime/channels.h): the far end
// of a pipe or a socket, named once per descriptor and remembered until the
// number is closed.
#include "channels.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace coz {
namespace {

/// A TCP listener on loopback, on a port the kernel picks.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 8) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr_), &len) != 0) {
      ADD_FAILURE() << "no loopback listener";
    }
  }
  ~Listener() { close(fd_); }
  int fd() const { return fd_; }
  const sockaddr_in& address() const { return addr_; }
  /// A connected pair: {client, accepted}.
  std::pair<int, int> connect_pair(int client = -1) {
    if (client < 0) client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_), 0);
    return {client, accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)};
  }

 private:
  int fd_ = -1;
  sockaddr_in addr_{};
};

WakeRecord local_write(int fd) { return WakeRecord{WakeKind::Write, fd}; }
/// As another process of `coz run --system` posts it: the channel alone.
WakeRecord foreign_write(int fd) { return WakeRecord{WakeKind::Write, 4242, channel_id(fd), true}; }

/// Closes without the runtime seeing it (in the runtime, close() is
/// interposed and forgets the number; here nothing does).
void close_unseen(int fd) { syscall(SYS_close, fd); }

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds) {
    forget_channel(fd);
    close(fd);
  }
}

TEST(ChannelsTest, AWriteAtTheFarEndOfAConnectionReachesItsWaiter) {
  Listener listener;
  auto [client, server] = listener.connect_pair();
  auto [other_client, other_server] = listener.connect_pair();
  WaitedChannel waiting(client);
  EXPECT_TRUE(waiting.reached_by(local_write(server)));
  EXPECT_TRUE(waiting.reached_by(foreign_write(server)));
  EXPECT_FALSE(waiting.reached_by(local_write(other_server))) << "another connection's write";
  EXPECT_FALSE(waiting.reached_by(foreign_write(other_server)));
  EXPECT_FALSE(waiting.reached_by(local_write(client))) << "its own end";
  close_all({client, server, other_client, other_server});
}

TEST(ChannelsTest, APipesWriteEndReachesItsReadEndOnly) {
  int one[2], two[2];
  ASSERT_EQ(pipe2(one, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(two, O_CLOEXEC), 0);
  WaitedChannel reader(one[0]);
  EXPECT_TRUE(reader.reached_by(local_write(one[1])));
  EXPECT_FALSE(reader.reached_by(local_write(two[1])));
  close_all({one[0], one[1], two[0], two[1]});
}

// A waiter checks every record posted while it waited: in a speedup
// experiment on a busy line, every wait. Asking the kernel about each
// record's descriptor each time (a getsockname, an fstat) made ~10 system
// calls per request in memcached and cost it ~9% of its throughput in
// those experiments alone. Once named, a descriptor is not asked again
// until its number is closed: here the kernel no longer knows either.
TEST(ChannelsTest, ANamedDescriptorIsNotAskedAgainUntilItsNumberIsClosed) {
  Listener listener;
  auto [client, server] = listener.connect_pair();
  EXPECT_TRUE(WaitedChannel(client).reached_by(local_write(server)));
  close_unseen(server);
  close_unseen(client);
  WaitedChannel waiting(client);  // its own name, remembered too
  EXPECT_TRUE(waiting.reached_by(local_write(server)));
  forget_channel(server);
  forget_channel(client);
  EXPECT_FALSE(WaitedChannel(client).reached_by(local_write(server))) << "closed and forgotten: nothing to name";
}

// A connect's own wake is posted before the call binds the socket: a name
// learned then (port 0) and remembered would outlive the bind, and no wait
// at the far end would ever match that socket's writes again.
TEST(ChannelsTest, ASocketNamedBeforeItIsBoundIsNamedByItsAddressOnceConnected) {
  Listener listener;
  int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  EXPECT_EQ(channel_id(client), 0u) << "no address yet";
  auto [connected, server] = listener.connect_pair(client);
  EXPECT_TRUE(WaitedChannel(server).reached_by(foreign_write(connected)));
  close_all({connected, server});
}

// A number closed and opened again names its new object.
TEST(ChannelsTest, AForgottenNumberIsNamedAnew) {
  Listener listener;
  auto [client, server] = listener.connect_pair();
  EXPECT_TRUE(WaitedChannel(client).reached_by(local_write(server)));
  close_all({server});
  auto [client2, server2] = listener.connect_pair();
  ASSERT_EQ(client2, server) << "the lowest free number again";
  EXPECT_FALSE(WaitedChannel(client).reached_by(local_write(client2))) << "the number now names another connection";
  EXPECT_TRUE(WaitedChannel(server2).reached_by(local_write(client2)));
  close_all({client, client2, server2});
}

}  // namespace
}  // namespace coz

namespace coz {
namespace {

/// As another process of `coz run --system` posts a connect to `addr`.
WakeRecord foreign_connect(const sockaddr* addr, socklen_t len) {
  return WakeRecord{WakeKind::Connect, 4242, connect_target_id(addr, len), true};
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  return a;
}

socklen_t path_length(const sockaddr_un& a, bool with_nul) {
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + std::strlen(a.sun_path) + (with_nul ? 1 : 0));
}

// A client's connect names what it connects to before its socket has a
// name: a UNIX path however the client measured it, a TCP or UDP port
// whatever the address (the listener may be bound to any).
TEST(ChannelsTest, AConnectIsNamedByTheAddressItConnectsTo) {
  const sockaddr_un path = unix_address("/tmp/coz-channels-test.sock");
  const auto* p = reinterpret_cast<const sockaddr*>(&path);
  const uint64_t whole = connect_target_id(p, sizeof path);
  EXPECT_NE(whole, 0u);
  EXPECT_EQ(connect_target_id(p, path_length(path, true)), whole);
  EXPECT_EQ(connect_target_id(p, path_length(path, false)), whole);
  const sockaddr_un other = unix_address("/tmp/coz-channels-other.sock");
  EXPECT_NE(connect_target_id(reinterpret_cast<const sockaddr*>(&other), sizeof other), whole);

  sockaddr_in loopback{}, any{};
  loopback.sin_family = any.sin_family = AF_INET;
  loopback.sin_port = any.sin_port = htons(4242);
  loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_in6 mapped{};
  mapped.sin6_family = AF_INET6;
  mapped.sin6_port = htons(4242);
  const uint64_t port = connect_target_id(reinterpret_cast<const sockaddr*>(&loopback), sizeof loopback);
  EXPECT_NE(port, 0u);
  EXPECT_EQ(connect_target_id(reinterpret_cast<const sockaddr*>(&any), sizeof any), port);
  EXPECT_EQ(connect_target_id(reinterpret_cast<const sockaddr*>(&mapped), sizeof mapped), port);
  loopback.sin_port = htons(4243);
  EXPECT_NE(connect_target_id(reinterpret_cast<const sockaddr*>(&loopback), sizeof loopback), port);
  EXPECT_EQ(connect_target_id(p, 0), 0u) << "no address";
}

// Another process's connect reaches a wait on the listener it connected to
// (an accept, or a poll that found the listener ready), and no other socket:
// not another listener, not an accepted connection on the same port.
TEST(ChannelsTest, AnotherProcesssConnectReachesTheListenerItConnectedTo) {
  Listener listener, other_listener;
  const sockaddr_in to = listener.address();
  const WakeRecord connect = foreign_connect(reinterpret_cast<const sockaddr*>(&to), sizeof to);
  EXPECT_TRUE(WaitedChannel(listener.fd()).reached_by(connect));
  EXPECT_FALSE(WaitedChannel(other_listener.fd()).reached_by(connect));
  auto [client, server] = listener.connect_pair();
  EXPECT_FALSE(WaitedChannel(server).reached_by(connect)) << "a connection the listener accepted earlier";
  close_all({client, server});
}

// In the same process, the connecting socket itself is in the record: once
// connected, its peer is the listener's address.
TEST(ChannelsTest, AThreadsConnectReachesTheListenerItConnectedTo) {
  Listener listener, other_listener;
  auto [client, server] = listener.connect_pair();
  const WakeRecord connect{WakeKind::Connect, client};
  EXPECT_TRUE(WaitedChannel(listener.fd()).reached_by(connect));
  EXPECT_FALSE(WaitedChannel(other_listener.fd()).reached_by(connect));
  close_all({client, server});
}

}  // namespace
}  // namespace coz
