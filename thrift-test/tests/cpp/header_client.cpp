// A ThriftTest client on Apache Thrift's C++ library, written for zerorx: calls a
// handful of methods over THeaderProtocol (compact inside, the C++ default), with
// the header frame inside a plain frame when asked, plain or multiplexed.
//
// usage: header_client PORT header|header-framed|multih
// Exits 0 when every answer is right, 1 (and says which) otherwise.

#include <iostream>
#include <memory>
#include <string>

#include <thrift/protocol/THeaderProtocol.h>
#include <thrift/protocol/TMultiplexedProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include "SecondService.h"
#include "ThriftTest.h"

using namespace apache::thrift;
using namespace apache::thrift::protocol;
using namespace apache::thrift::transport;
using namespace thrift::test;

// The generated code declares it (CrazyNesting has a set of Insanity) and leaves
// the definition to the program; no call here orders Insanity values.
bool thrift::test::Insanity::operator<(const Insanity& other) const {
  if (userMap != other.userMap) {
    return userMap < other.userMap;
  }
  return xtructs.size() < other.xtructs.size();
}

static int failures = 0;

static void check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "FAIL " << what << std::endl;
    failures++;
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: header_client PORT header|header-framed|multih" << std::endl;
    return 2;
  }
  const std::string mode = argv[2];
  std::shared_ptr<TTransport> transport = std::make_shared<TSocket>("127.0.0.1", std::stoi(argv[1]));
  if (mode == "header-framed") {
    transport = std::make_shared<TFramedTransport>(transport);
  }
  auto header = std::make_shared<THeaderProtocol>(transport);
  std::shared_ptr<TProtocol> proto = header;
  std::shared_ptr<TProtocol> second_proto;
  if (mode == "multih") {
    proto = std::make_shared<TMultiplexedProtocol>(header, "ThriftTest");
    second_proto = std::make_shared<TMultiplexedProtocol>(header, "SecondService");
  }
  ThriftTestClient client(proto);
  try {
    transport->open();
    std::string s;
    client.testString(s, "C++ über header");
    check(s == "C++ über header", "testString");
    std::string blob(70000, '\x5a');
    std::string back;
    client.testBinary(back, blob);
    check(back == blob, "testBinary(70000 bytes)");
    Xtruct x;
    x.string_thing = "Zero";
    x.byte_thing = 1;
    x.i32_thing = -3;
    x.i64_thing = -5;
    Xtruct got;
    client.testStruct(got, x);
    check(got == x, "testStruct");
    check(client.testI64(-34359738368LL) == -34359738368LL, "testI64");
    try {
      client.testException("Xception");
      check(false, "testException(Xception) did not throw");
    } catch (const Xception& e) {
      check(e.errorCode == 1001 && e.message == "Xception", "Xception fields");
    }
    try {
      client.testException("TException");
      check(false, "testException(TException) did not throw");
    } catch (const TApplicationException&) {
    }
    client.testOneway(1);
    client.testVoid();
    if (second_proto) {
      SecondServiceClient second(second_proto);
      std::string r;
      second.secondtestString(r, "foo");
      check(r == "testString(\"foo\")", "secondtestString");
    }
    transport->close();
  } catch (const std::exception& e) {
    std::cerr << "FAIL " << e.what() << std::endl;
    return 1;
  }
  if (failures == 0) {
    std::cout << "ok" << std::endl;
  }
  return failures == 0 ? 0 : 1;
}
