// Rust parity probe (tests/parity/runtimes.py): threads, a child process, files, and the
// runtime's own ends: a panic (exit 101), a stack overflow (its SIGSEGV handler on an
// alternate stack prints a message and aborts), abort().
use std::process::Command;
use std::sync::mpsc;
use std::thread;

fn overflow(n: u64) -> u64 {
    let a = [n; 64];
    if n == u64::MAX {
        return a[3];
    }
    overflow(n + 1) + a[1]
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("panic") => {
            let v: Vec<u32> = Vec::new();
            println!("{}", v[std::env::args().count()]);
        }
        Some("overflow") => println!("{}", overflow(0)),
        Some("abort") => std::process::abort(),
        Some("thread-panic") => {
            let r = thread::spawn(|| panic!("in a thread")).join();
            println!("joined, panicked: {}", r.is_err());
        }
        _ => {}
    }
    let (tx, rx) = mpsc::channel();
    for i in 0..8u64 {
        let tx = tx.clone();
        thread::spawn(move || tx.send((0..200_000u64).map(|x| x ^ i).sum::<u64>()).unwrap());
    }
    drop(tx);
    println!("threads {}", rx.iter().sum::<u64>());
    let out = Command::new("sh").args(["-c", "echo child; exit 2"]).output().unwrap();
    println!("child {:?} {}", out.status.code(), String::from_utf8_lossy(&out.stdout).trim());
    std::fs::create_dir_all("out").unwrap();
    for i in 0..20 {
        std::fs::write(format!("out/f{i}"), vec![b'x'; 1000 * (i + 1)]).unwrap();
    }
    let n: usize = (0..20).map(|i| std::fs::read(format!("out/f{i}")).unwrap().len()).sum();
    println!("bytes {}", n);
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(2 + 2, 4);
    }
    #[test]
    #[should_panic(expected = "boom")]
    fn panics() {
        panic!("boom");
    }
    #[test]
    fn spawns() {
        assert!(std::process::Command::new("true").status().unwrap().success());
    }
    #[test]
    fn threads() {
        let h: Vec<_> = (0..4).map(|i| std::thread::spawn(move || i * 2)).collect();
        assert_eq!(h.into_iter().map(|h| h.join().unwrap()).sum::<i32>(), 12);
    }
}
