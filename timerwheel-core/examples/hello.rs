//! The smallest use of the Rust API: a one-shot, a periodic timer, a cancel.
use std::sync::mpsc;
use std::time::Duration;

use timerwheel_core::Runtime;

fn main() {
    let rt = Runtime::builder().build().expect("runtime");
    let (tx, rx) = mpsc::channel();
    let once = tx.clone();
    rt.after(Duration::from_millis(20), move |_| {
        once.send("one-shot fired").unwrap()
    })
    .unwrap();
    let beat = rt
        .every(Duration::from_millis(5), move |_| {
            let _ = tx.send("heartbeat");
        })
        .unwrap();
    while let Ok(msg) = rx.recv_timeout(Duration::from_secs(5)) {
        println!("{msg}");
        if msg == "one-shot fired" {
            break;
        }
    }
    println!("heartbeat cancelled: {}", beat.cancel());
    println!("{:?}", rt.stats());
    rt.shutdown().unwrap();
}
