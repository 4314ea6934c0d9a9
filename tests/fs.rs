//! `zerorx::fs` against the real kernel: bytes written come back at every offset,
//! sequential reads and writes move the position, directories are made, listed,
//! renamed and removed, and bad input gets an error naming the path and the cause.

mod common;

use bytes::{Bytes, BytesMut};
use common::Rng;
use std::io::ErrorKind;
use std::path::PathBuf;
use zerorx::fs::{self, File};

/// A fresh directory under the system's temporary one, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("zerorx-fs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rt() -> zerorx::Runtime {
    common::rt(2, zerorx::WakeMode::EventFd)
}

#[test]
fn bytes_written_come_back_whole_and_at_every_offset() {
    let dir = Scratch::new("rw");
    let path = dir.0.join("data");
    rt().block_on(async move {
        let mut rng = Rng(3);
        let data = Bytes::from((0..3 << 20).map(|_| rng.next() as u8).collect::<Vec<_>>());
        fs::write(&path, data.clone()).await.expect("write");
        assert_eq!(fs::read(&path).await.expect("read"), data);
        let f = File::open(&path).await.expect("open");
        assert_eq!(f.metadata().await.expect("statx").len(), data.len() as u64);
        for offset in [0u64, 1, 4095, 4096, 1 << 20, (3 << 20) - 10] {
            let got = f.read_exact_at(10, offset).await.expect("inside the file");
            assert_eq!(&got[..], &data[offset as usize..offset as usize + 10]);
        }
        // Sequential reads move the position.
        let (n, first) = f.read(BytesMut::with_capacity(100)).await.expect("read");
        let (m, second) = f.read(BytesMut::with_capacity(100)).await.expect("read");
        assert_eq!((n, m), (100, 100));
        assert_eq!([&first[..], &second[..]].concat(), &data[..200]);
        // At the end: 0 bytes, not an error.
        let (n, _) = f
            .read_at(BytesMut::with_capacity(10), data.len() as u64)
            .await
            .expect("eof");
        assert_eq!(n, 0);
    });
}

#[test]
fn append_sync_and_options() {
    let dir = Scratch::new("append");
    let path = dir.0.join("log");
    rt().block_on(async move {
        let f = File::options()
            .append(true)
            .create(true)
            .open(&path)
            .await
            .expect("open");
        for i in 0..5u8 {
            f.write_all(Bytes::from(vec![i; 3])).await.expect("append");
        }
        f.sync_data().await.expect("fdatasync");
        f.sync_all().await.expect("fsync");
        assert_eq!(
            fs::read(&path).await.expect("read"),
            (0..5u8).flat_map(|i| [i; 3]).collect::<Vec<_>>()
        );
        let err = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .await
            .expect_err("exists");
        assert_eq!(err.kind(), ErrorKind::AlreadyExists);
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
        let err = File::options()
            .create(true)
            .open(&path)
            .await
            .expect_err("no write");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let m = fs::metadata(&path).await.expect("statx");
        assert!(m.is_file() && !m.is_dir() && m.len() == 15, "{m:?}");
    });
}

#[test]
fn directories_are_made_listed_renamed_and_removed() {
    let dir = Scratch::new("dirs");
    let base = dir.0.clone();
    rt().block_on(async move {
        let deep = base.join("a/b/c");
        fs::create_dir_all(&deep).await.expect("create_dir_all");
        fs::create_dir_all(&deep)
            .await
            .expect("again: already there is fine");
        assert!(fs::metadata(&deep).await.expect("statx").is_dir());
        fs::write(deep.join("x"), &b"1"[..]).await.expect("write");
        fs::write(deep.join("y"), &b"2"[..]).await.expect("write");
        let mut names = fs::read_dir(&deep).await.expect("read_dir");
        names.sort();
        assert_eq!(names, vec![deep.join("x"), deep.join("y")]);
        fs::rename(deep.join("x"), deep.join("z"))
            .await
            .expect("rename");
        assert_eq!(fs::read(deep.join("z")).await.expect("read"), b"1");
        fs::remove_file(deep.join("z")).await.expect("remove");
        fs::remove_file(deep.join("y")).await.expect("remove");
        fs::remove_dir(&deep).await.expect("rmdir");
        let err = fs::metadata(&deep).await.expect_err("gone");
        assert_eq!(err.kind(), ErrorKind::NotFound);
    });
}

#[test]
fn bad_input_is_an_error_naming_the_path_and_the_cause() {
    let dir = Scratch::new("errors");
    let base = dir.0.clone();
    rt().block_on(async move {
        let missing = base.join("missing");
        let err = File::open(&missing).await.expect_err("missing");
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert!(
            err.to_string().contains(&missing.display().to_string()),
            "{err}"
        );

        // A directory opens (as with std) but cannot be read as a file.
        let d = File::open(&base)
            .await
            .expect("a directory opens read-only");
        let err = d
            .read_at(BytesMut::with_capacity(10), 0)
            .await
            .expect_err("a directory");
        assert_eq!(err.raw_os_error(), None, "wrapped with the path");
        assert!(err.to_string().contains("Is a directory"), "{err}");
        assert!(
            err.to_string().contains(&base.display().to_string()),
            "{err}"
        );

        // Past the end: how much there was.
        fs::write(base.join("short"), &b"abc"[..])
            .await
            .expect("write");
        let f = File::open(base.join("short")).await.expect("open");
        let err = f.read_exact_at(10, 1).await.expect_err("past the end");
        assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
        assert!(err.to_string().contains("after 2 of them"), "{err}");

        let err = fs::read_dir(base.join("nope"))
            .await
            .expect_err("missing dir");
        assert_eq!(err.kind(), ErrorKind::NotFound);
        let err = fs::remove_dir(&base).await.expect_err("not empty");
        assert!(
            err.to_string().contains(&base.display().to_string()),
            "{err}"
        );
        let err = File::open("bad\0path").await.expect_err("NUL");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let err = f.read_at(BytesMut::new(), 0).await.expect_err("no room");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    });
}

#[test]
fn the_futures_io_and_tokio_traits_read_write_and_seek_a_file() {
    use futures_util::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
    use std::io::SeekFrom;
    let dir = Scratch::new("compat");
    let path = dir.0.join("data");
    rt().block_on(async move {
        let mut rng = Rng(5);
        // More than two read-aheads, not a multiple of one.
        let data: Vec<u8> = (0..150_000).map(|_| rng.next() as u8).collect();
        let mut out = File::create(&path).await.expect("create").compat();
        for piece in data.chunks(7_000) {
            out.write_all(piece).await.expect("write");
        }
        out.close().await.expect("close");
        assert_eq!(out.position(), data.len() as u64);
        assert_eq!(std::fs::read(&path).expect("std read"), data);

        // Read back whole in odd-sized reads, then seek around.
        let mut f = File::open(&path).await.expect("open").compat();
        let mut back = Vec::new();
        let mut buf = [0u8; 1_000];
        loop {
            let n = f.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            back.extend_from_slice(&buf[..n]);
        }
        assert_eq!(back, data);
        assert_eq!(f.seek(SeekFrom::Start(10)).await.expect("seek"), 10);
        let mut ten = [0u8; 10];
        f.read_exact(&mut ten).await.expect("read at 10");
        assert_eq!(&ten, &data[10..20]);
        assert_eq!(f.seek(SeekFrom::Current(-5)).await.expect("seek"), 15);
        f.read_exact(&mut ten).await.expect("read at 15");
        assert_eq!(&ten, &data[15..25]);
        let end = f.seek(SeekFrom::End(-3)).await.expect("seek from the end");
        assert_eq!(end, data.len() as u64 - 3);
        let mut tail = Vec::new();
        f.read_to_end(&mut tail).await.expect("tail");
        assert_eq!(tail, &data[data.len() - 3..]);
        let before = f.seek(SeekFrom::Current(-(data.len() as i64) - 1)).await;
        let e = before.expect_err("before the start");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("data"), "{e}");

        // A write drops what was read ahead: the next read sees the new bytes.
        let mut rw = File::options()
            .read(true)
            .write(true)
            .open(&path)
            .await
            .expect("open rw")
            .compat();
        rw.read_exact(&mut ten).await.expect("read ahead");
        rw.write_all(b"XYZ").await.expect("overwrite 10..13");
        rw.flush().await.expect("flush");
        rw.seek(SeekFrom::Start(8)).await.expect("seek");
        rw.read_exact(&mut ten).await.expect("read over it");
        assert_eq!(&ten[..2], &data[8..10]);
        assert_eq!(&ten[2..5], b"XYZ");
        assert_eq!(&ten[5..], &data[13..18]);

        // Lines through AsyncBufRead.
        fs::write(&path, &b"one\ntwo\nthree"[..])
            .await
            .expect("write lines");
        let mut lines = File::open(&path).await.expect("open").compat().lines();
        let mut got = Vec::new();
        while let Some(line) = futures_util::StreamExt::next(&mut lines).await {
            got.push(line.expect("line"));
        }
        assert_eq!(got, ["one", "two", "three"]);

        // tokio's traits: write, seek and read back.
        let mut t = File::options()
            .read(true)
            .write(true)
            .open(&path)
            .await
            .expect("open")
            .compat();
        tokio::io::AsyncWriteExt::write_all(&mut t, b"ONE")
            .await
            .expect("tokio write");
        tokio::io::AsyncWriteExt::flush(&mut t)
            .await
            .expect("flush");
        assert_eq!(
            tokio::io::AsyncSeekExt::seek(&mut t, SeekFrom::Start(0))
                .await
                .expect("seek"),
            0
        );
        let mut all = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut t, &mut all)
            .await
            .expect("tokio read");
        assert_eq!(all, "ONE\ntwo\nthree");
    });
}

#[test]
fn small_reads_and_writes_of_a_file_in_memory_are_done_on_the_worker() {
    // tmpfs takes no read without blocking (io_uring would hand each to an io-wq
    // thread), so small ones are copied on the worker: no SQE for them.
    let shm = std::path::Path::new("/dev/shm");
    assert!(
        shm.is_dir(),
        "/dev/shm (a tmpfs) is missing: this test needs one mounted there"
    );
    let path = shm.join(format!("zerorx-fs-inline-{}", std::process::id()));
    // The target directory is on disk (the system's temporary one may be a tmpfs).
    let disk_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("zerorx-fs-inline-{}", std::process::id()));
    let rt = rt();
    let h = rt.handle().clone();
    rt.block_on(async move {
        let mut rng = Rng(9);
        let data = Bytes::from((0..300_000).map(|_| rng.next() as u8).collect::<Vec<_>>());
        for (p, in_memory) in [(&path, true), (&disk_path, false)] {
            let f = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .await
                .expect("open");
            // 4 KiB writes (inline in memory), then one large one (always the ring).
            for (i, piece) in data[..200_000].chunks(4096).enumerate() {
                f.write_all_at(Bytes::copy_from_slice(piece), (i * 4096) as u64)
                    .await
                    .expect("small write");
            }
            f.write_all_at(data.slice(200_000..), 200_000)
                .await
                .expect("large write");
            let worker = zerorx::Handle::try_current()
                .and_then(|h| h.current_worker())
                .expect("on a worker");
            let sqes = |h: &zerorx::Handle| h.metrics()[worker].sqes_submitted;
            let before = sqes(&h);
            for offset in (0..300_000u64).step_by(7_919) {
                let got = f
                    .read_exact_at(4096.min(300_000 - offset as usize), offset)
                    .await;
                let got = got.expect("small read");
                assert_eq!(
                    &got[..],
                    &data[offset as usize..offset as usize + got.len()]
                );
            }
            let small_read_sqes = sqes(&h) - before;
            if in_memory {
                assert_eq!(small_read_sqes, 0, "small reads of a tmpfs file use no SQE");
            } else {
                assert!(
                    small_read_sqes >= 38,
                    "{small_read_sqes} SQEs for 38 disk reads"
                );
            }
            // A large read goes through the ring either way, and sees the same bytes.
            let whole = f.read_exact_at(300_000, 0).await.expect("large read");
            assert_eq!(whole, data);
            // Past the end: 0 bytes, not an error.
            let (n, _) = f
                .read_at(BytesMut::with_capacity(100), 400_000)
                .await
                .expect("eof");
            assert_eq!(n, 0);
        }
        // Errors still name the path: a write to a file opened read-only.
        let ro = File::open(&path).await.expect("open read-only");
        let e = ro
            .write_at(Bytes::from_static(b"x"), 0)
            .await
            .expect_err("read-only");
        assert!(e.to_string().contains("zerorx-fs-inline"), "{e}");
        fs::remove_file(&path).await.expect("remove");
        fs::remove_file(&disk_path).await.expect("remove");
    });
}

#[test]
fn fixed_buffers_read_and_write_and_their_limits_are_clear_errors() {
    use zerorx::fs::{FixedBuf, FIXED_BUFFER_SLOTS};
    let dir = Scratch::new("fixed");
    let path = dir.0.join("data");
    // Off a worker: an error, not a panic.
    let e = FixedBuf::new(4096).expect_err("no runtime here");
    assert!(e.to_string().contains("runtime"), "{e}");
    rt().block_on(async move {
        let mut rng = Rng(12);
        let data: Vec<u8> = (0..(1 << 20) + 123).map(|_| rng.next() as u8).collect();
        let f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .await
            .expect("open");
        // Written through one registered buffer in 64 KiB pieces, read back through another.
        let mut out = FixedBuf::new(64 * 1024).expect("register");
        for (i, piece) in data.chunks(64 * 1024).enumerate() {
            out.clear();
            out.extend_from_slice(piece).expect("fits");
            let (n, b) = f
                .write_fixed_at(out, (i * 64 * 1024) as u64)
                .await
                .expect("write_fixed_at");
            assert_eq!(n, piece.len());
            out = b;
        }
        let mut back = Vec::new();
        let mut inb = FixedBuf::new(100_000).expect("register");
        loop {
            let (n, b) = f
                .read_fixed_at(inb, back.len() as u64)
                .await
                .expect("read_fixed_at");
            inb = b;
            assert_eq!(inb.len(), n);
            if n == 0 {
                break;
            }
            back.extend_from_slice(&inb);
        }
        assert_eq!(back, data);
        // Too much for the buffer: an error saying so; the contents stay.
        let e = out
            .extend_from_slice(&[0; 70_000])
            .expect_err("over capacity");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            FixedBuf::new(0).expect_err("empty").kind(),
            ErrorKind::InvalidInput
        );
        // The worker's table is full at FIXED_BUFFER_SLOTS; a dropped buffer frees its slot.
        let mut held = vec![out, inb];
        while held.len() < usize::from(FIXED_BUFFER_SLOTS) {
            held.push(FixedBuf::new(4096).expect("a free slot"));
        }
        let e = FixedBuf::new(4096).expect_err("table full");
        assert!(e.to_string().contains("fixed buffers already"), "{e}");
        held.pop();
        let again = FixedBuf::new(4096).expect("the dropped buffer's slot");
        // And it works in that slot.
        let (n, again) = f
            .read_fixed_at(again, 0)
            .await
            .expect("read in a reused slot");
        assert_eq!(&again[..n], &data[..4096]);
        drop(held);
        // A write error names the path.
        let ro = File::open(&path).await.expect("open read-only");
        let mut one = FixedBuf::new(16).expect("register");
        one.extend_from_slice(b"x").expect("fits");
        let e = ro.write_fixed_at(one, 0).await.expect_err("read-only");
        assert!(e.to_string().contains("data"), "{e}");
    });
}
