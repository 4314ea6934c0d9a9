/**
 * The app example's service (examples/app.rs): digests of request bodies, computed
 * off the worker on the blocking pool.
 */
namespace rs app

service Digest {
  /** The SHA-256 of body, as 64 lowercase hex digits. */
  string sha256(1: binary body)
}
