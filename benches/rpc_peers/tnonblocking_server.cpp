// The Apache Thrift C++ peer: the Bench service (bench.thrift) on TNonblockingServer,
// framed binary protocol, handlers run on the I/O threads (no thread manager: the
// fastest configuration for handlers that do not block).
//
// Only this handler lives in the repository: the benchmark generates Bench.h /
// Bench.cpp / bench_types.* from bench.thrift with the Thrift compiler and compiles
// everything against the system's libthrift at run time.
//
// usage: tnonblocking_server PORT IO_THREADS   (prints "listening on 127.0.0.1:PORT")

#include "Bench.h"

#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TNonblockingServer.h>
#include <thrift/transport/TNonblockingServerSocket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

using apache::thrift::protocol::TBinaryProtocolFactory;
using apache::thrift::server::TNonblockingServer;
using apache::thrift::server::TServerEventHandler;
using apache::thrift::transport::TNonblockingServerSocket;

namespace {

class BenchHandler : public zerorx_bench::BenchIf {
 public:
  void echo(std::string& out, const std::string& data) override { out = data; }

  void roundtrip(zerorx_bench::Payload& out, const zerorx_bench::Payload& p) override { out = p; }

  int64_t add(const int64_t a, const int64_t b) override {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }

  int64_t sum(const std::vector<int64_t>& values) override {
    uint64_t s = 0;
    for (int64_t v : values) s += static_cast<uint64_t>(v);
    return static_cast<int64_t>(s);
  }

  // TNonblockingServer without a thread manager has no way to sleep off the I/O
  // thread: this blocks the connections that thread serves (not used by the benchmark).
  void sleep_ms(const int32_t ms) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms > 0 ? ms : 0));
  }

  void fire(const std::string&) override { fired_.fetch_add(1, std::memory_order_relaxed); }

  int64_t fired() override { return fired_.load(std::memory_order_relaxed); }

  void fail(const std::string& reason) override {
    zerorx_bench::Overloaded o;
    o.reason = reason;
    o.retry_after_ms = 7;
    throw o;
  }

 private:
  std::atomic<int64_t> fired_{0};
};

// Prints the ready line once the server listens.
class Ready : public TServerEventHandler {
 public:
  explicit Ready(int port) : port_(port) {}
  void preServe() override {
    std::printf("listening on 127.0.0.1:%d\n", port_);
    std::fflush(stdout);
  }

 private:
  int port_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PORT IO_THREADS\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int threads = std::atoi(argv[2]);
  auto handler = std::make_shared<BenchHandler>();
  auto processor = std::make_shared<zerorx_bench::BenchProcessor>(handler);
  auto socket = std::make_shared<TNonblockingServerSocket>("127.0.0.1", port);
  TNonblockingServer server(processor, std::make_shared<TBinaryProtocolFactory>(), socket);
  server.setNumIOThreads(threads > 0 ? threads : 1);
  server.setServerEventHandler(std::make_shared<Ready>(port));
  server.serve();
  return 0;
}
