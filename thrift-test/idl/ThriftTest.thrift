// zerorx's own copy of the Apache Thrift cross-test IDL.
//
// Written for zerorx; wire-compatible with apache/thrift test/ThriftTest.thrift
// (checked against the upstream master file as of v0.24.0+ and against v0.17.0).
// Same service, method, type and field names, same field ids, types and
// requiredness. Annotations (python.immutable, xsd uri) and the namespaces of
// other languages are left out; none of them changes the wire format.
//
// Every line that mentions the uuid type contains the word "uuid", so
//   grep -v uuid ThriftTest.thrift > ThriftTest-0.17.thrift
// gives a file the Debian bookworm compiler (thrift 0.17.0, no uuid type) accepts.

namespace py ThriftTest
namespace cpp thrift.test
namespace rs thrift_test

/** Small enum with gaps; values are explicit (upstream relies on auto-increment). */
enum Numberz {
  ONE = 1,
  TWO = 2,
  THREE = 3,
  FIVE = 5,
  SIX = 6,
  EIGHT = 8
}

const Numberz myNumberz = Numberz.ONE

typedef i64 UserId

struct Bonk {
  1: string message,
  2: i32 type
}

typedef map<string, Bonk> MapType

struct Bools {
  1: bool im_true,
  2: bool im_false
}

/** The workhorse struct: field ids are deliberately sparse. */
struct Xtruct {
  1: string string_thing,
  4: i8 byte_thing,
  9: i32 i32_thing,
  11: i64 i64_thing
}

struct Xtruct2 {
  1: i8 byte_thing,
  2: Xtruct struct_thing,
  3: i32 i32_thing
}

struct Xtruct3 {
  1: string string_thing,
  4: i32 changed,
  9: i32 i32_thing,
  11: i64 i64_thing
}

struct Insanity {
  1: map<Numberz, UserId> userMap,
  2: list<Xtruct> xtructs
}

/** Deep nesting; no service method uses it. */
struct CrazyNesting {
  1: string string_field,
  2: optional set<Insanity> set_field,
  3: required list<map<set<i32>, map<i32, set<list<map<Insanity, string>>>>>> list_field,
  4: binary binary_field,
  5: uuid uuid_field
}

union SomeUnion {
  1: map<Numberz, UserId> map_thing,
  2: string string_thing,
  3: i32 i32_thing,
  4: Xtruct3 xtruct_thing,
  5: Insanity insanity_thing
}

exception Xception {
  1: i32 errorCode,
  2: string message
}

exception Xception2 {
  1: i32 errorCode,
  2: Xtruct struct_thing
}

struct EmptyStruct {}

struct OneField {
  1: EmptyStruct field
}

service ThriftTest {
  /** No arguments, no result: reply with an empty result struct. */
  void testVoid(),

  /** Return thing unchanged. */
  string testString(1: string thing),

  /** Return thing unchanged. */
  bool testBool(1: bool thing),

  /** Return thing unchanged (i8, formerly "byte"). */
  i8 testByte(1: i8 thing),

  /** Return thing unchanged. */
  i32 testI32(1: i32 thing),

  /** Return thing unchanged. */
  i64 testI64(1: i64 thing),

  /** Return thing unchanged, bit for bit. */
  double testDouble(1: double thing),

  /** Return the bytes unchanged. */
  binary testBinary(1: binary thing),

  /** Return the uuid unchanged (16 bytes, same order). */
  uuid testUuid(1: uuid thing),

  /** Return the struct unchanged. */
  Xtruct testStruct(1: Xtruct thing),

  /** Return the nested struct unchanged. */
  Xtruct2 testNest(1: Xtruct2 thing),

  /** Return the map unchanged. */
  map<i32, i32> testMap(1: map<i32, i32> thing),

  /** Return the map unchanged. */
  map<string, string> testStringMap(1: map<string, string> thing),

  /** Return the set unchanged. */
  set<i32> testSet(1: set<i32> thing),

  /** Return the list unchanged, order kept. */
  list<i32> testList(1: list<i32> thing),

  /** Return the enum value unchanged (unknown values too). */
  Numberz testEnum(1: Numberz thing),

  /** Return the UserId unchanged. */
  UserId testTypedef(1: UserId thing),

  /**
   * Ignore hello; return {-4: {-4: -4, -3: -3, -2: -2, -1: -1},
   *                        4: {1: 1, 2: 2, 3: 3, 4: 4}}.
   */
  map<i32, map<i32, i32>> testMapMap(1: i32 hello),

  /**
   * Return {1: {TWO: argument, THREE: argument},
   *         2: {SIX: an Insanity with no entries}}.
   */
  map<UserId, map<Numberz, Insanity>> testInsanity(1: Insanity argument),

  /**
   * Return Xtruct{string_thing: "Hello2", byte_thing: arg0,
   * i32_thing: arg1, i64_thing: arg2}; arg3..arg5 are ignored.
   */
  Xtruct testMulti(1: i8 arg0, 2: i32 arg1, 3: i64 arg2, 4: map<i16, string> arg3, 5: Numberz arg4, 6: UserId arg5),

  /**
   * arg == "Xception": throw Xception{errorCode: 1001, message: arg};
   * arg == "TException": fail with an undeclared error, which the client
   * sees as a TApplicationException;
   * anything else: return normally.
   */
  void testException(1: string arg) throws (1: Xception err1),

  /**
   * arg0 == "Xception": throw Xception{1001, "This is an Xception"};
   * arg0 == "Xception2": throw Xception2{2002, Xtruct{string_thing: "This is an Xception2"}};
   * anything else: return Xtruct{string_thing: arg1}.
   */
  Xtruct testMultiException(1: string arg0, 2: string arg1) throws (1: Xception err1, 2: Xception2 err2),

  /** Oneway: never reply. The server may sleep up to secondsToSleep (Python's sleeps a third of it). */
  oneway void testOneway(1: i32 secondsToSleep)
}

service SecondService {
  /** Return the text: testString(" + thing + ") with literal double quotes. */
  string secondtestString(1: string thing)
}

struct VersioningTestV1 {
  1: i32 begin_in_both,
  3: string old_string,
  12: i32 end_in_both
}

struct VersioningTestV2 {
  1: i32 begin_in_both,
  2: i32 newint,
  3: i8 newbyte,
  4: i16 newshort,
  5: i64 newlong,
  6: double newdouble,
  7: Bonk newstruct,
  8: list<i32> newlist,
  9: set<i32> newset,
  10: map<i32, i32> newmap,
  11: string newstring,
  12: i32 end_in_both
}

struct ListTypeVersioningV1 {
  1: list<i32> myints,
  2: string hello
}

struct ListTypeVersioningV2 {
  1: list<string> strings,
  2: string hello
}

struct GuessProtocolStruct {
  7: map<string, string> map_field
}

struct LargeDeltas {
  1: Bools b1,
  10: Bools b10,
  100: Bools b100,
  500: bool check_true,
  1000: Bools b1000,
  1500: bool check_false,
  2000: VersioningTestV2 vertwo2000,
  2500: set<string> a_set2500,
  3000: VersioningTestV2 vertwo3000,
  4000: list<i32> big_numbers
}

struct NestedListsI32x2 {
  1: list<list<i32>> integerlist
}

struct NestedListsI32x3 {
  1: list<list<list<i32>>> integerlist
}

struct NestedMixedx2 {
  1: list<set<i32>> int_set_list,
  2: map<i32, set<string>> map_int_strset,
  3: list<map<i32, set<string>>> map_int_strset_list
}

struct ListBonks {
  1: list<Bonk> bonk
}

struct NestedListsBonk {
  1: list<list<list<Bonk>>> bonk
}

struct BoolTest {
  1: optional bool b = true,
  2: optional string s = "true"
}

struct StructA {
  1: required string s
}

struct StructB {
  1: optional StructA aa,
  2: required StructA ab
}

struct OptionalSetDefaultTest {
  1: optional set<string> with_default = ["test"]
}

/** Upstream writes the empty defaults as {} for both; [] is used for the set here. */
struct OptionalBinary {
  1: optional set<binary> bin_set = [],
  2: optional map<binary, i32> bin_map = {}
}
