"""Apache's Python THeader server for ThriftTest (a few methods), for checking that
zerorx's client speaks THeader: binary or compact inside, with or without an outer
frame. Written for zerorx.

usage: header_server.py [framed]   (prints `listening on PORT`, serves until killed)
  framed: header frames inside plain frames, as Apache's servers given
          --protocol=header --transport=framed
"""

import socket
import sys

from thrift.protocol import THeaderProtocol
from thrift.server import TServer
from thrift.transport import TSocket, TTransport
from thrift.transport.THeaderTransport import THeaderClientType

from ThriftTest import ThriftTest
from ThriftTest.ttypes import Xception


class Handler:
    def testString(self, thing):
        return thing

    def testI64(self, thing):
        return thing

    def testBinary(self, thing):
        return thing

    def testStruct(self, thing):
        return thing

    def testException(self, arg):
        if arg == "Xception":
            raise Xception(errorCode=1001, message=arg)


def main():
    # TSimpleServer listens itself: take a free port first.
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    sock = TSocket.TServerSocket(host="127.0.0.1", port=port)
    allowed = (
        THeaderClientType.HEADERS,
        THeaderClientType.FRAMED_BINARY,
        THeaderClientType.UNFRAMED_BINARY,
        THeaderClientType.FRAMED_COMPACT,
        THeaderClientType.UNFRAMED_COMPACT,
    )
    server = TServer.TSimpleServer(
        ThriftTest.Processor(Handler()),
        sock,
        TTransport.TFramedTransportFactory() if "framed" in sys.argv[1:] else TTransport.TTransportFactoryBase(),
        THeaderProtocol.THeaderProtocolFactory(allowed_client_types=allowed),
    )
    sock.listen()
    sock.listen = lambda: None  # already listening: serve() must not open another
    print("listening on %d" % port, flush=True)
    server.serve()


if __name__ == "__main__":
    sys.exit(main())
