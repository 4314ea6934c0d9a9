//! Locked registrations past `RLIMIT_MEMLOCK` fail with the numbers and the fix.
//! Alone in its test binary: it lowers the process's soft limit for a moment.

use zerorx_fabric::*;

#[test]
fn memlock_limit_is_reported_with_numbers_and_the_fix() {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut old) };
    assert_eq!(rc, 0);
    let (_, locked) = memlock_state();
    let limit = locked + (1 << 20);
    let low = libc::rlimit {
        rlim_cur: limit.min(old.rlim_max),
        rlim_max: old.rlim_max,
    };
    // SAFETY: lowering the soft limit is always permitted; `low` is valid.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &low) };
    assert_eq!(rc, 0);
    let d = Fabric::open("uring-tcp", &Requirements::new())
        .unwrap()
        .domain(DomainConfig { lock_memory: true })
        .unwrap();
    let big = d.register(4 << 20, Access::LOCAL);
    let small = d.register(64 << 10, Access::LOCAL);
    // SAFETY: restoring the limits read above.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &old) };
    assert_eq!(rc, 0);
    match big {
        Err(FabricError::MemlockLimit {
            limit: l,
            requested,
            locked: already,
        }) => {
            assert_eq!((l, requested), (low.rlim_cur, 4 << 20));
            assert!(already <= limit);
            let text = big.unwrap_err().to_string();
            assert!(
                text.contains("ulimit -l") && text.contains("CAP_IPC_LOCK"),
                "{text}"
            );
        }
        other => panic!("expected MemlockLimit, got {other:?}"),
    }
    let small = small.expect("64 KiB fits under the limit");
    small.write(0, b"locked").unwrap();
    assert_eq!(small.to_vec(0..6).unwrap(), b"locked");
}
