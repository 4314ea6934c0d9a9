/**
 * The store example's service (docs/rpc.md, "Keeping what you decode"): a
 * key-value store whose handler keeps the entries it decodes.
 */
namespace rs store

/** One stored value under its key. */
struct Entry {
  1: string key
  2: binary value
}

service KeyValue {
  /** Stores the entry under its key (replacing what was there). */
  void put(1: Entry entry)
  /** The value stored under key; empty when there is none. */
  binary get(1: string key)
  /** Up to limit entries whose keys sort at or after start, in key order. */
  list<Entry> scan(1: string start, 2: i32 limit)
}
