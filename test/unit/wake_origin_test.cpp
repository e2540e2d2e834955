// Who can end a wait on a descriptor (wake_origin.h): the program, or only
// the outside. The connects and listens of "the program" are those this test
// notes, as the interposed calls would.
#include "wake_origin.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace coz {
namespace {

sockaddr_in loopback(uint16_t port_in_network_order) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = port_in_network_order;
  return address;
}

/// As the interposed close does.
void close_and_forget(int fd) {
  close(fd);
  forget_wake_origin(fd);
}

/// A TCP listener on an ephemeral port of 127.0.0.1; `noted`: as if the
/// program's interposed listen saw it.
int listener(bool noted, sockaddr_in& address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  address = loopback(0);
  socklen_t len = sizeof address;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(listen(fd, 4), 0);
  if (noted) note_listen(fd);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len), 0);
  return fd;
}

/// A client connected to `address`; `noted`: as if the program's interposed connect saw it.
int client(const sockaddr_in& address, bool noted) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  if (noted) note_connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  return fd;
}

TEST(WakeOrigin, WhatTheProgramsThreadsCanWakeIsTheProgramsToEnd) {
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  int event = eventfd(0, 0);
  int file = open("/proc/self/status", O_RDONLY);
  for (int fd : {pipe_ends[0], pipe_ends[1], pair[0], pair[1], event, file}) {
    EXPECT_FALSE(woken_only_from_outside(fd)) << fd;
  }
  // A socket that is neither connected nor listening: a connect may yet make it one.
  int unconnected = socket(AF_INET, SOCK_DGRAM, 0);
  EXPECT_FALSE(woken_only_from_outside(unconnected));
  // Not a descriptor at all.
  EXPECT_FALSE(woken_only_from_outside(-1));
  for (int fd : {pipe_ends[0], pipe_ends[1], pair[0], pair[1], event, file, unconnected}) close_and_forget(fd);
}

TEST(WakeOrigin, ACharacterDeviceIsOutside) {
  int null_device = open("/dev/null", O_RDONLY);
  EXPECT_TRUE(woken_only_from_outside(null_device));
  close_and_forget(null_device);
}

TEST(WakeOrigin, TcpBetweenThreadsOfTheProgramIsTheProgramsAndFromOutsideIsNot) {
  // The program's own client and server: each end's peer is a port of its own.
  sockaddr_in address;
  int server = listener(true, address);
  EXPECT_TRUE(woken_only_from_outside(server));  // before any connect of its own: outside
  int own_client = client(address, true);
  int accepted = accept(server, nullptr, nullptr);
  EXPECT_FALSE(woken_only_from_outside(own_client));
  EXPECT_FALSE(woken_only_from_outside(accepted));
  // The listener learned once, and the program connected to it since: the program's now.
  EXPECT_FALSE(woken_only_from_outside(server));

  // A client the program did not connect (another process's, as far as the
  // program can tell): the server's end of it is outside.
  int foreign_client = client(address, false);
  int foreign_accepted = accept(server, nullptr, nullptr);
  EXPECT_TRUE(woken_only_from_outside(foreign_accepted));
  // A number closed and opened again is learned again.
  close_and_forget(foreign_accepted);
  int reused = eventfd(0, 0);
  EXPECT_EQ(reused, foreign_accepted);
  EXPECT_FALSE(woken_only_from_outside(reused));

  // A server the program does not listen on (another process's): the
  // program's client of it is outside.
  sockaddr_in foreign_address;
  int foreign_server = listener(false, foreign_address);
  int client_of_foreign = client(foreign_address, true);
  EXPECT_TRUE(woken_only_from_outside(client_of_foreign));
  for (int fd : {server, own_client, accepted, foreign_client, reused, foreign_server, client_of_foreign}) {
    close_and_forget(fd);
  }
}

}  // namespace
}  // namespace coz
