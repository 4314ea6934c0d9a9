// Every IDL construct the generator supports, for the codegen tests.
namespace rs coverage

include "shared.thrift"

const i32 ANSWER = 42
const string GREETING = "hi \"there\""
const double RATIO = 0.5
const shared.Level TOP = shared.Level.HIGH
const list<string> WORDS = ["a", "b"]
const map<string, i32> COUNTS = {"one": 1, "two": 2}
const shared.Named DEFAULT_NAMED = {"id": 7}

typedef list<shared.Named> NamedList
typedef NamedList Roster

/** A struct with every kind of field. */
struct Everything {
  /** A required field: decoding fails without it. */
  1: required i32 req
  2: optional string opt
  3: i64 plain
  4: i16 with_default = 9
  5: shared.Level level = shared.Level.MID
  6: binary blob
  7: Roster roster
  8: set<string> tags
  9: map<shared.Id, list<shared.Named>> index
  10: double ratio = RATIO
  11: bool flag = true
  12: uuid key
  13: string type
  14: optional list<i32> numbers = [1, 2]
}

/** Exactly one of these. */
union Choice {
  1: i32 number
  2: string text
  3: shared.Named named
}

/** A list node: the field holding itself is boxed. */
struct Node {
  1: i32 value
  2: optional Node next
}

exception Failed {
  1: i32 code
  2: string message
}

/** A service extending another file's service. */
service Store extends shared.Base {
  /** Looks a name up. */
  shared.Named find(1: shared.Id id) throws (1: shared.NotFound missing, 2: Failed failed)
  void put(1: shared.Named item, 2: optional string note)
  Choice pick(1: Choice c)
  Node chain(1: i32 len)
  oneway void poke(1: i32 times)
  Everything all(1: Everything e)
}
