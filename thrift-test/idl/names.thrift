// Names the generator has to change to make Rust of them, for the codegen tests:
// acronyms, keywords, a typedef standing for string.
namespace rs names

/** Text, under another name. */
typedef string Text

/** Its message field is a typedef of string: `Display` shows the message. */
exception HTTPError {
  1: i32 code
  2: Text message
}

/** Field names that are Rust keywords or acronyms. */
struct URLParts {
  1: string scheme
  2: string type
  3: i32 self
  4: string URL
}

/** Negative values: literals the generator writes with their sign. */
enum Sign {
  NEGATIVE = -1,
  ZERO
}

const i64 LOWEST = -9223372036854775808
const double COLD = -273.15
const Sign DOWN = -1

enum HTTPStatus {
  OK = 200,
  NOT_FOUND = 404
}

/** An acronym service: its server is `KvServer`, its client `KvClient`. */
service KV {
  /** Splits a URL. */
  URLParts parse(1: string URL) throws (1: HTTPError httpError)
  /** Sets the time to live. */
  void setTTL(1: i64 TTLSeconds)
}
