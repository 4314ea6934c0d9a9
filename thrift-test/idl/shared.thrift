// Types and a base service another file includes (codegen tests).
namespace rs shared

/** A value both files use. */
enum Level {
  LOW,
  MID = 5,
  HIGH
}

typedef i64 Id

struct Named {
  1: Id id
  2: string name = "anon"
}

exception NotFound {
  1: string message
}

/** Every service in coverage.thrift extends this one. */
service Base {
  /** Returns the level after `level`. */
  Level next(1: Level level)
}
