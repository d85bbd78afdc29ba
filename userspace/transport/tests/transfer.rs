//! Whole-file transfers over loopback: the control connection's checks
//! (the key, the target, the size) and the file put in place only when
//! verified.

use std::fs;
use std::io;
use std::net::TcpListener;
use std::path::Path;
use std::thread;

use xdcc_transport::transfer::{receive_file, send_file, ReceiveOptions, SendOptions, Summary};

const KEY: &[u8] = b"a key of more than sixteen bytes";

fn write_data(path: &Path, bytes: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..bytes).map(|i| (i as u64).wrapping_mul(0x9e37_79b9) as u8 ^ (i >> 11) as u8).collect();
    fs::write(path, &data).unwrap();
    data
}

/// One transfer of `src` into `target`; both ends' results.
fn transfer(src: &Path, target: &Path, send_key: &[u8], opts: ReceiveOptions) -> (io::Result<Summary>, io::Result<Summary>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let target = target.to_path_buf();
    let rx = thread::spawn(move || receive_file(&listener, &target, KEY, opts, &mut |_, _| {}));
    let tx = send_file(src, to, send_key, SendOptions::default(), &mut |_, _| {});
    (tx, rx.join().unwrap())
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.contains("xdcc-partial")).collect()
}

#[test]
fn a_file_arrives_whole_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let (src, target) = (dir.path().join("src.bin"), dir.path().join("copy.bin"));
    let data = write_data(&src, 5_000_000);
    let (tx, rx) = transfer(&src, &target, KEY, ReceiveOptions::default());
    let (tx, rx) = (tx.unwrap(), rx.unwrap());
    assert!(fs::read(&target).unwrap() == data, "byte-exact");
    assert_eq!(tx.sha256, rx.sha256);
    assert_eq!((tx.bytes, rx.bytes), (5_000_000, 5_000_000));
    assert!(leftovers(dir.path()).is_empty());
    // An empty file too.
    let empty = dir.path().join("empty");
    fs::write(&empty, b"").unwrap();
    let (tx, rx) = transfer(&empty, &dir.path().join("empty.copy"), KEY, ReceiveOptions::default());
    assert_eq!((tx.unwrap().bytes, rx.unwrap().bytes), (0, 0));
    assert_eq!(fs::read(dir.path().join("empty.copy")).unwrap(), b"");
}

#[test]
fn a_sender_without_the_key_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (src, target) = (dir.path().join("src.bin"), dir.path().join("copy.bin"));
    write_data(&src, 100_000);
    let (tx, rx) = transfer(&src, &target, b"another key of 16+ bytes", ReceiveOptions::default());
    let (tx, rx) = (tx.unwrap_err(), rx.unwrap_err());
    assert!(tx.to_string().contains("does not hold the key"), "{tx}");
    assert_eq!(rx.kind(), io::ErrorKind::PermissionDenied, "{rx}");
    assert!(!target.exists());
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn an_existing_target_stays_unless_overwrite_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (src, target) = (dir.path().join("src.bin"), dir.path().join("copy.bin"));
    let data = write_data(&src, 300_000);
    fs::write(&target, b"precious").unwrap();
    let (tx, rx) = transfer(&src, &target, KEY, ReceiveOptions::default());
    assert!(tx.unwrap_err().to_string().contains("exists"));
    assert!(rx.is_err());
    assert_eq!(fs::read(&target).unwrap(), b"precious");
    let (tx, rx) = transfer(&src, &target, KEY, ReceiveOptions { overwrite: true, ..ReceiveOptions::default() });
    tx.unwrap();
    rx.unwrap();
    assert!(fs::read(&target).unwrap() == data);
}

#[test]
fn a_transfer_above_the_receivers_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (src, target) = (dir.path().join("src.bin"), dir.path().join("copy.bin"));
    write_data(&src, 10_000);
    let (tx, rx) = transfer(&src, &target, KEY, ReceiveOptions { max_bytes: 9_999, ..ReceiveOptions::default() });
    assert!(tx.unwrap_err().to_string().contains("at most 9999"));
    assert!(rx.is_err());
    assert!(!target.exists());
}

#[test]
fn a_short_key_is_refused_before_any_connection() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.bin");
    write_data(&src, 10);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let err = send_file(&src, listener.local_addr().unwrap(), b"short", SendOptions::default(), &mut |_, _| {}).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(receive_file(&listener, &dir.path().join("x"), b"short", ReceiveOptions::default(), &mut |_, _| {}).is_err());
}
