/* The floor of a ping-pong between two hosts over TCP: raw bytes on one
   connection (TCP_NODELAY), the receiver polling its socket without sleeping,
   socket buffers of 4 MiB as grappe's links, no protocol at all. Sizes and iterations as ../shared/bench/pingpong.c,
   and the same output lines, so that scripts/bench-hosts reads it like an MPI.

     tcp_floor serve PORT           (on one host)
     tcp_floor ping ADDRESS PORT    (on the other; prints the figures)

   With `stream BYTES COUNT` after either command, the pinger instead sends
   COUNT messages of BYTES back to back and the other side receives them one
   by one, as the `stream` example does over grappe: the floor of one-way
   throughput against message size (one send and one receive call a message). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void die(const char *what) { perror(what); exit(1); }

static void receive(int fd, char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
    if (r > 0) got += (size_t)r;
    else if (r == 0) { fprintf(stderr, "tcp_floor: the peer closed the connection\n"); exit(1); }
    else if (errno != EAGAIN && errno != EINTR) die("recv");
  }
}

static void transmit(int fd, const char *buf, size_t n) {
  size_t sent = 0;
  while (sent < n) {
    ssize_t r = send(fd, buf + sent, n - sent, MSG_NOSIGNAL);
    if (r > 0) sent += (size_t)r;
    else if (r < 0 && errno != EINTR) die("send");
  }
}

/* The one-way stream: COUNT messages of BYTES, then a one-byte reply. */
static void stream(int fd, int pinger, size_t bytes, long count, char *buf) {
  double t0 = now();
  for (long i = 0; i < count; i++) {
    if (pinger) transmit(fd, buf, bytes);
    else receive(fd, buf, bytes);
  }
  if (pinger) receive(fd, buf, 1);
  else transmit(fd, buf, 1);
  double ns = (now() - t0) / count * 1e9;
  if (pinger) printf("stream bytes=%zu messages=%ld ns_per_message=%.1f MBps=%.1f\n", bytes, count, ns, bytes / ns * 1e3);
}

static int connected(int argc, char **argv) {
  int one = 1, fd;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  if (argc >= 3 && strcmp(argv[1], "serve") == 0) {
    a.sin_port = htons(atoi(argv[2]));
    int l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) die("listen");
    if ((fd = accept(l, 0, 0)) < 0) die("accept");
    close(l);
  } else if (argc >= 4 && strcmp(argv[1], "ping") == 0) {
    a.sin_port = htons(atoi(argv[3]));
    if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) { fprintf(stderr, "tcp_floor: bad address %s\n", argv[2]); exit(2); }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    for (int tries = 0; connect(fd, (struct sockaddr *)&a, sizeof a); tries++) {
      if (tries == 500) die("connect");
      usleep(10000);
    }
  } else {
    fprintf(stderr, "usage: tcp_floor serve PORT | tcp_floor ping ADDRESS PORT  [stream BYTES COUNT]\n");
    exit(2);
  }
  int buffer = 4 << 20; /* as grappe's links ask */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  return fd;
}

int main(int argc, char **argv) {
  int fd = connected(argc, argv);
  int pinger = strcmp(argv[1], "ping") == 0;
  size_t sizes[] = {8, 1024, 65536, 1 << 20, 16 << 20};
  char *buf = malloc(16 << 20);
  memset(buf, 1, 16 << 20);
  int rest = pinger ? 4 : 3; /* where `stream BYTES COUNT` starts */
  if (argc == rest + 3 && strcmp(argv[rest], "stream") == 0) {
    size_t bytes = strtoul(argv[rest + 1], 0, 10);
    if (bytes < 1 || bytes > (16u << 20)) { fprintf(stderr, "tcp_floor: stream BYTES must be 1 to 16 MiB\n"); return 2; }
    stream(fd, pinger, bytes, atol(argv[rest + 2]), buf);
    close(fd);
    return 0;
  }
  for (int s = 0; s < 5; s++) {
    size_t n = sizes[s];
    int iters = n <= 65536 ? 20000 : (n <= (1 << 20) ? 500 : 50), warm = iters / 10;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
      if (i == warm) t0 = now();
      if (pinger) { transmit(fd, buf, n); receive(fd, buf, n); }
      else { receive(fd, buf, n); transmit(fd, buf, n); }
    }
    double dt = now() - t0;
    if (pinger)
      printf("pingpong bytes=%zu half_rtt_us=%.3f bandwidth_MBps=%.1f\n", n, dt / iters / 2 * 1e6,
             n / (dt / iters / 2) / 1e6);
  }
  close(fd);
  return 0;
}
